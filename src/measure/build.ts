/**
 * The builder: turns generated kernel sources into shared objects, through a content-addressed
 * cache so nothing compiles twice.
 *  - Each candidate's translation unit becomes one object file keyed by sha256 of its source, the
 *    kernel headers, the flags, `cc --version` and the CPU identity (-march=native).
 *  - Missing objects are compiled in batches (one `cc -c a.c b.c …` per batch), batches in
 *    parallel up to the core count, and never fewer batches than cores while units remain. A
 *    failing batch is retried one candidate at a time, so one bad candidate is a recorded
 *    compile_error and its neighbours still build.
 *  - precompileKernels fills the object cache ahead of need (a tuner's known next candidates).
 *  - The requested candidates are linked, in groups, into shared objects keyed by their objects'
 *    hashes (many symbols per .so; linking is cheap and cached too).
 * Every cache entry is written under a temp name and renamed into place.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { VeltairError } from '../errors.js';
import { buildKey, installOnce, tempPathFor } from '../toolchain/build-cache.js';
import { compiler, compilerStderr, compilerVersion, runCompiler, type Compiler } from '../toolchain/compiler.js';
import { flagsFor, kernelLinkFlags, libsFor } from '../toolchain/flags.js';
import { headerSnapshot, writeSources, type HeaderSnapshot } from '../toolchain/headers.js';
import { cacheDir } from '../toolchain/paths.js';

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
  /** After each compiler call: units compiled so far (failures included) of those missing from the cache. */
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
  const temp = tempPathFor(to);
  await rename(from, temp).catch(async () => {
    await writeFile(temp, await readFile(from));
  });
  await rename(temp, to);
}

interface Compiled { key: string; error?: string }

/** Compile units in one compiler call; on failure, one at a time to isolate the bad ones. */
async function compileBatch(units: readonly (KernelUnit & { key: string })[], cc: Compiler, flags: readonly string[], objDir: string,
  headers: HeaderSnapshot): Promise<Map<string, Compiled>> {
  const result = new Map<string, Compiled>();
  const work = await mkdtemp(join(tmpdir(), 'veltair-cc-'));
  try {
    await Promise.all([...units.map((u) => writeFile(join(work, `${u.symbol}.c`), u.source)), writeSources(work, headers.files)]);
    try {
      await runCompiler([...flags, '-I', work, '-c', ...units.map((u) => `${u.symbol}.c`)], { cwd: work }, cc);
    } catch (e) {
      if (e instanceof VeltairError) throw e;
      if (units.length > 1) {
        for (const u of units) for (const [k, v] of await compileBatch([u], cc, flags, objDir, headers)) result.set(k, v);
        return result;
      }
      result.set(units[0]!.symbol, { key: units[0]!.key, error: compilerStderr(e, 6) });
      return result;
    }
    for (const u of units) {
      await atomicMove(join(work, `${u.symbol}.o`), join(objDir, `${u.key}.o`));
      result.set(u.symbol, { key: u.key });
    }
    return result;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function link(keys: readonly string[], cc: Compiler, objDir: string, libDir: string): Promise<string> {
  const name = createHash('sha256').update([...keys].sort().join('\n')).digest('hex').slice(0, 32);
  return installOnce(join(libDir, `k-${name}.so`), (temp) =>
    runCompiler([...kernelLinkFlags(), '-o', temp, ...keys.map((k) => join(objDir, `${k}.o`)), ...libsFor('kernel')], {}, cc));
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
  readonly keyed: (KernelUnit & { key: string })[];
  readonly jobs: number;
  readonly batchSize: number;
  readonly onCompiled?: (done: number, total: number) => void;
}

async function prepare(units: readonly KernelUnit[], options: BuildOptions): Promise<Prepared> {
  const cc = compiler();
  const [version, headers] = await Promise.all([compilerVersion(cc), headerSnapshot()]);
  const root = options.cacheDir ?? cacheDir();
  const objDir = join(root, 'objects'), libDir = join(root, 'lib');
  await Promise.all([mkdir(objDir, { recursive: true }), mkdir(libDir, { recursive: true })]);
  const unique = [...new Map(units.map((u) => [u.symbol, u])).values()];
  const flags = options.cflags ?? flagsFor('kernel');
  const keyed = unique.map((u) => ({ ...u, key: buildKey([u.source, headers.hash], flags, version).slice(0, 40) }));
  return { cc, flags, headers, objDir, libDir, keyed, jobs: options.jobs ?? availableParallelism(), batchSize: Math.max(1, options.batchSize ?? 8),
    ...(options.onCompiled ? { onCompiled: options.onCompiled } : {}) };
}

/** Compile the units whose objects are not cached yet; symbol → compiled (with its error, if it failed). */
async function compileMissing(p: Prepared): Promise<Map<string, Compiled>> {
  const missing = p.keyed.filter((u) => !existsSync(join(p.objDir, `${u.key}.o`)));
  const compiled = new Map<string, Compiled>();
  let done = 0;
  const calls = await pool(compileChunks(missing, p.batchSize, p.jobs), p.jobs, async (b) => {
    const m = await compileBatch(b, p.cc, p.flags, p.objDir, p.headers);
    done += b.length;
    p.onCompiled?.(done, missing.length);
    return m;
  });
  for (const m of calls) for (const [k, v] of m) compiled.set(k, v);
  return compiled;
}

/**
 * Compile the units' objects into the cache ahead of need, linking nothing: a tuner that knows
 * its next candidates builds them all at once, on every core, and each batch later only links.
 * A unit that fails to compile leaves no object: buildKernels records it when it is asked for.
 */
export async function precompileKernels(units: readonly KernelUnit[], options: BuildOptions = {}): Promise<void> {
  if (units.length > 0) await compileMissing(await prepare(units, options));
}

/** Build every unit (deduplicated by symbol); the result has one outcome per distinct symbol, in input order. */
export async function buildKernels(units: readonly KernelUnit[], options: BuildOptions = {}): Promise<BuildOutcome[]> {
  const p = await prepare(units, options);
  const { cc, objDir, libDir, keyed, jobs, batchSize } = p;
  const compiled = await compileMissing(p);
  const failed = new Map([...compiled].filter(([, v]) => v.error !== undefined).map(([k, v]) => [k, v.error!]));
  const good = keyed.filter((u) => !failed.has(u.symbol));
  const libs = await pool(chunk(good, batchSize), jobs, async (group) => {
    try {
      return { group, so: await link(group.map((u) => u.key), cc, objDir, libDir) };
    } catch (e) {
      if (e instanceof VeltairError) throw e;
      for (const u of group) failed.set(u.symbol, `link failed: ${compilerStderr(e)}`);
      return { group: [], so: '' };
    }
  });
  const soOf = new Map<string, string>();
  for (const { group, so } of libs) for (const u of group) soOf.set(u.symbol, so);
  return keyed.map((u): BuildOutcome => (failed.has(u.symbol)
    ? { status: 'compile_error', symbol: u.symbol, message: failed.get(u.symbol)! }
    : { status: 'ok', symbol: u.symbol, soPath: soOf.get(u.symbol)! }));
}
