/**
 * The builder: turns generated kernel sources into shared objects, through a content-addressed
 * cache so nothing compiles twice.
 *  - Each candidate's translation unit is first put in its canonical form (canonical.ts: its symbol
 *    replaced by `vt_c` + a hash of the rest, the header comment line neutral), so candidates that
 *    differ only in their symbol (a schedule at 1 and at 2 threads: the C takes the thread count
 *    at run time) are one object. An object is keyed by sha256 of its canonical source, the kernel
 *    headers, the flags, `cc --version` and the CPU identity (-march=native).
 *  - Missing objects are compiled with the kernels' precompiled header (pch.ts; flags left out of
 *    the key: the objects are the same), each distinct canonical source once, in batches (one
 *    `cc -c a.c b.c …` per batch), batches in parallel up to the core count, and never fewer
 *    batches than cores while sources remain. A failing batch is retried one source at a time, so
 *    one bad candidate is a recorded compile_error (for every symbol sharing its source) and its
 *    neighbours still build.
 *  - precompileKernels fills the object cache ahead of need (a tuner's known next candidates).
 *  - The requested candidates are linked, in groups, into shared objects (many symbols per .so),
 *    each object once per group. Every requested symbol is made resolvable by dlsym: for each
 *    global `<canonical>_X` its object defines (nm, listed once per object into `<key>.syms` beside
 *    it), the link defines `<symbol>_X` at the same address (`-Wl,--defsym`). A .so is keyed by its
 *    objects' keys and these aliases (linking is cheap and cached too).
 * Every cache entry is written under a temp name and renamed into place.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { internalError, VeltairError } from '../errors.js';
import { tempNameFor } from '../atomic-file.js';
import { buildKey, installOnce } from '../toolchain/build-cache.js';
import { compiler, compilerStderr, compilerVersion, runCompiler, type Compiler } from '../toolchain/compiler.js';
import { flagsFor, kernelLinkFlags, libsFor } from '../toolchain/flags.js';
import { headerSnapshot, writeSources, type HeaderSnapshot } from '../toolchain/headers.js';
import { cacheDir } from '../toolchain/paths.js';
import { definedGlobals, definedGlobalsOfEach } from '../toolchain/symbols.js';
import { canonicalUnit, renameSymbol, type CanonicalUnit } from './canonical.js';
import { kernelPchFlags } from './pch.js';

export interface KernelUnit {
  readonly symbol: string;
  readonly source: string;
}

export type BuildOutcome =
  | { readonly status: 'ok'; readonly symbol: string; readonly soPath: string }
  | { readonly status: 'compile_error'; readonly symbol: string; readonly message: string };

export interface BuildOptions {
  readonly cacheDir?: string;
  /** Concurrent compiler processes (default: the core count). */
  readonly jobs?: number;
  /** Candidates per compiler call and per shared object (default 8). */
  readonly batchSize?: number;
  /** Kernel flags: the target's (its ISA level); default native. */
  readonly cflags?: readonly string[];
  /** After each compiler call: distinct canonical sources compiled so far (failures included) of those missing from the cache. */
  readonly onCompiled?: (done: number, total: number) => void;
}

/** Run tasks with at most `limit` in flight. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

async function atomicMove(from: string, to: string): Promise<void> {
  const temp = tempNameFor(to);
  await rename(from, temp).catch(async () => {
    await writeFile(temp, await readFile(from));
  });
  await rename(temp, to);
}

/** A requested unit with its canonical form and the cache key of the object that form compiles to. */
interface Keyed extends KernelUnit {
  readonly canonical: CanonicalUnit;
  readonly key: string;
}

/** One distinct object to compile: its key and canonical source. */
interface ObjectSource {
  readonly key: string;
  readonly canonical: CanonicalUnit;
}

/**
 * Kernel compiles run at this nice value. A tuner's first build runs while its co-runner bank
 * starts (tune/warmup.ts), and the bank's serial start (each co-runner touching gigabytes on the
 * noise core) was then the last thing measuring waited for: 3.7 s after the build, whose cc calls
 * had the noise core too (ResNet-50: bench/RESULTS.md). At a lower priority the
 * compiles take what the bank leaves; alone they run as fast as before.
 */
const COMPILE_NICENESS = 10;

/**
 * Compile sources in one compiler call; on failure, one at a time to isolate the bad ones.
 * Object key → the compiler's message for a source that failed (about its canonical symbol); absent when it compiled.
 */
async function compileBatch(
  sources: readonly ObjectSource[],
  cc: Compiler,
  flags: readonly string[],
  objDir: string,
  headers: HeaderSnapshot,
): Promise<Map<string, string>> {
  const errors = new Map<string, string>();
  const work = await mkdtemp(join(tmpdir(), 'veltair-cc-'));
  const file = (o: ObjectSource) => o.canonical.symbol;
  try {
    await Promise.all([
      ...sources.map((o) => writeFile(join(work, `${file(o)}.c`), o.canonical.source)),
      writeSources(work, headers.files),
    ]);
    try {
      await runCompiler([...flags, '-I', work, '-c', ...sources.map((o) => `${file(o)}.c`)], { cwd: work, niceness: COMPILE_NICENESS }, cc);
    } catch (e) {
      if (e instanceof VeltairError) throw e;
      if (sources.length > 1) {
        for (const o of sources) for (const [k, v] of await compileBatch([o], cc, flags, objDir, headers)) errors.set(k, v);
        return errors;
      }
      errors.set(sources[0]!.key, compilerStderr(e, 6));
      return errors;
    }
    // Each object's global names, listed now in one nm call (link reads them from `<key>.syms`).
    const globals = await definedGlobalsOfEach(
      sources.map((o) => `${file(o)}.o`),
      undefined,
      work,
    );
    for (const o of sources) {
      await writeGlobals(objDir, o.key, globals.get(`${file(o)}.o`)!);
      await atomicMove(join(work, `${file(o)}.o`), join(objDir, `${o.key}.o`));
    }
    return errors;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const writeGlobals = (objDir: string, key: string, names: readonly string[]) =>
  installOnce(join(objDir, `${key}.syms`), (temp) => writeFile(temp, names.map((n) => `${n}\n`).join('')));

/** The global names the object `key` defines, kept beside it (`<key>.syms`: written as it is compiled, else listed by nm now). */
async function objectGlobals(objDir: string, key: string): Promise<string[]> {
  const path = join(objDir, `${key}.syms`);
  if (!existsSync(path)) await writeGlobals(objDir, key, await definedGlobals(join(objDir, `${key}.o`)));
  return (await readFile(path, 'utf8')).split('\n').filter((n) => n.length > 0);
}

const C_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `<symbol>_X=<canonical>_X` for every global `<canonical>_X` (and `<canonical>` itself) the unit's object defines. */
function aliasesOf(u: Keyed, globals: readonly string[]): string[] {
  if (!C_NAME.test(u.symbol)) throw internalError(`kernel symbol ${JSON.stringify(u.symbol)} is not a C name`);
  const canon = u.canonical.symbol;
  return globals
    .filter((g) => g.startsWith(canon) && C_NAME.test(g) && (g.length === canon.length || g[canon.length] === '_'))
    .map((g) => `${u.symbol}${g.slice(canon.length)}=${g}`);
}

/** One shared object holding `group`: each distinct object once, each requested symbol's names aliased to its object's. */
async function link(group: readonly Keyed[], cc: Compiler, objDir: string, libDir: string): Promise<string> {
  const keys = [...new Set(group.map((u) => u.key))].sort();
  const globals = new Map(await Promise.all(keys.map(async (k) => [k, await objectGlobals(objDir, k)] as const)));
  const aliases = group.flatMap((u) => aliasesOf(u, globals.get(u.key)!)).sort();
  const name = createHash('sha256').update(keys.join('\n')).update('\0').update(aliases.join('\n')).digest('hex').slice(0, 32);
  return installOnce(join(libDir, `k-${name}.so`), (temp) =>
    runCompiler(
      [
        ...kernelLinkFlags(),
        '-o',
        temp,
        ...keys.map((k) => join(objDir, `${k}.o`)),
        ...aliases.map((a) => `-Wl,--defsym,${a}`),
        ...libsFor('kernel'),
      ],
      {},
      cc,
    ),
  );
}

/**
 * Compiler calls for `missing` units: at most batchSize units a call, and never fewer calls than
 * cores while there are units to give them (3 candidates in one `cc -c` call would leave the other
 * core idle for the whole batch).
 */
export function compileChunks<T>(missing: readonly T[], batchSize: number, jobs: number): T[][] {
  const perCall = Math.max(1, Math.min(batchSize, Math.ceil(missing.length / Math.max(1, jobs))));
  return chunk(missing, perCall);
}

interface Prepared {
  readonly cc: Compiler;
  readonly flags: readonly string[];
  readonly headers: HeaderSnapshot;
  readonly objDir: string;
  readonly libDir: string;
  readonly keyed: Keyed[];
  readonly jobs: number;
  readonly batchSize: number;
  readonly onCompiled?: (done: number, total: number) => void;
  /** The precompiled header's flags (pch.ts), built on first need. */
  readonly pchFlags: () => Promise<string[]>;
}

async function prepare(units: readonly KernelUnit[], options: BuildOptions): Promise<Prepared> {
  const cc = compiler();
  const [version, headers] = await Promise.all([compilerVersion(cc), headerSnapshot()]);
  const root = options.cacheDir ?? cacheDir();
  const objDir = join(root, 'objects'),
    libDir = join(root, 'lib');
  await Promise.all([mkdir(objDir, { recursive: true }), mkdir(libDir, { recursive: true })]);
  const unique = [...new Map(units.map((u) => [u.symbol, u])).values()];
  const flags = options.cflags ?? flagsFor('kernel');
  const keyed = unique.map((u): Keyed => {
    const canonical = canonicalUnit(u);
    return { ...u, canonical, key: buildKey([canonical.source, headers.hash], flags, version).slice(0, 40) };
  });
  return {
    cc,
    flags,
    headers,
    objDir,
    libDir,
    keyed,
    jobs: options.jobs ?? availableParallelism(),
    batchSize: Math.max(1, options.batchSize ?? 8),
    ...(options.onCompiled ? { onCompiled: options.onCompiled } : {}),
    pchFlags: () => kernelPchFlags(root, cc, flags, version, headers),
  };
}

/** Compile each distinct object the units need that is not cached yet; object key → message of those that failed. */
async function compileMissing(p: Prepared): Promise<Map<string, string>> {
  const missing = [
    ...new Map(
      p.keyed
        .filter((u) => !existsSync(join(p.objDir, `${u.key}.o`)))
        .map((u): [string, ObjectSource] => [u.key, { key: u.key, canonical: u.canonical }]),
    ).values(),
  ];
  if (missing.length === 0) return new Map();
  const flags = [...p.flags, ...(await p.pchFlags())];
  let done = 0;
  const calls = await pool(compileChunks(missing, p.batchSize, p.jobs), p.jobs, async (b) => {
    const m = await compileBatch(b, p.cc, flags, p.objDir, p.headers);
    done += b.length;
    p.onCompiled?.(done, missing.length);
    return m;
  });
  return new Map(calls.flatMap((m) => [...m]));
}

/**
 * Compile the units' objects into the cache ahead of need, linking nothing: a tuner that knows
 * its next candidates builds them all at once, on every core, and each batch later only links.
 * A unit that fails to compile leaves no object: buildKernels records it when it is asked for.
 */
export async function precompileKernels(units: readonly KernelUnit[], options: BuildOptions = {}): Promise<void> {
  if (units.length > 0) await compileMissing(await prepare(units, options));
}

/**
 * Build every unit (deduplicated by symbol); the result has one outcome per distinct symbol, in
 * input order. Units that share a canonical source share its object, and its compile error.
 */
export async function buildKernels(units: readonly KernelUnit[], options: BuildOptions = {}): Promise<BuildOutcome[]> {
  const p = await prepare(units, options);
  const { cc, objDir, libDir, keyed, jobs, batchSize } = p;
  const errors = await compileMissing(p);
  const failed = new Map<string, string>();
  for (const u of keyed) {
    const e = errors.get(u.key);
    if (e !== undefined) failed.set(u.symbol, renameSymbol(e, u.canonical.symbol, u.symbol));
  }
  const good = keyed.filter((u) => !failed.has(u.symbol));
  const libs = await pool(chunk(good, batchSize), jobs, async (group) => {
    try {
      return { group, so: await link(group, cc, objDir, libDir) };
    } catch (e) {
      if (e instanceof VeltairError) throw e;
      for (const u of group) failed.set(u.symbol, `link failed: ${compilerStderr(e)}`);
      return { group: [], so: '' };
    }
  });
  const soOf = new Map<string, string>();
  for (const { group, so } of libs) for (const u of group) soOf.set(u.symbol, so);
  return keyed.map((u): BuildOutcome =>
    failed.has(u.symbol)
      ? { status: 'compile_error', symbol: u.symbol, message: failed.get(u.symbol)! }
      : { status: 'ok', symbol: u.symbol, soPath: soOf.get(u.symbol)! },
  );
}
