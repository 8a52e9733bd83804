/**
 * Building the two sparse add-ons on first use, like the runtime's: one `cc` call each through the
 * toolchain's content-addressed build cache (the name carries the sha256 of the sources, the kernel
 * headers, flags, compiler version and CPU identity; built under a temp name and renamed), no
 * node-gyp. Each add-on compiles the shared core of native-kernels/sparse/ (hashing, tables, vector
 * kernels, allocation) and its own folder:
 *  - `train` (native-kernels/sparse/train/): sparse training — the model, its passes and bindings;
 *  - `head` (native-kernels/sparse/head/): the serving head — sparse inference over one output
 *    layer, which the runtime loads for a bundle's sparse/head.json.
 * So an edit to the trainer never rebuilds (or re-keys) the head that serving loads, and back.
 *
 * Two builds of each: `native` (the toolchain's addon flags, -march=native: AVX-512 where the CPU
 * has it, else AVX2 + FMA) is what veltair runs; `portable` (the same flags at -march=x86-64: the
 * plain C path) exists so the tests can check that the vector paths and the scalar path agree.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { VeltairError } from '../errors.js';
import { addonSources } from '../toolchain/addon-sources.js';
import { buildKey, ensureProgram, installOnce } from '../toolchain/build-cache.js';
import { compiler, compilerStderr, compilerVersion, runCompiler } from '../toolchain/compiler.js';
import { flagsFor, libsFor } from '../toolchain/flags.js';
import { headerSnapshot, writeSources, type SourceFile } from '../toolchain/headers.js';
import { nodeIncludeDir } from '../toolchain/node-headers.js';
import { cacheDir } from '../toolchain/paths.js';

export type SparseAddonKind = 'train' | 'head';
export type SparseBuild = 'native' | 'portable';

const HINT = 'check that the C compiler supports OpenMP (libgomp); this is a veltair bug if it does';

/** What one add-on compiles: the N-API helpers, the shared core, its own folder (and nothing of the other add-on's). */
export function sparseAddonSources(kind: SparseAddonKind): Promise<SourceFile[]> {
  return addonSources(['sparse', `sparse/${kind}`]);
}

export function portableFlags(): string[] {
  return flagsFor('addon').map((f) => (f === '-march=native' ? '-march=x86-64' : f));
}

const building = new Map<string, Promise<string>>();

/** Path of the compiled add-on, compiling it first when the cache lacks this exact build. */
export function ensureSparseAddon(kind: SparseAddonKind, options: { build?: SparseBuild; cacheDir?: string } = {}): Promise<string> {
  const build = options.build ?? 'native';
  const key = `${kind}\0${build}\0${options.cacheDir ?? ''}`;
  let p = building.get(key);
  if (!p) {
    p = (build === 'native' ? buildNative(kind, options.cacheDir) : buildPortable(kind, options.cacheDir)).catch((e: unknown) => {
      building.delete(key);
      throw e;
    });
    building.set(key, p);
  }
  return p;
}

async function buildNative(kind: SparseAddonKind, dir?: string): Promise<string> {
  const include = nodeIncludeDir();
  return ensureProgram({
    name: `vt-sparse-${kind}`,
    artifact: 'addon',
    sources: await sparseAddonSources(kind),
    includeDirs: [include],
    extension: '.node',
    keyExtras: [await readFile(join(include, 'node_api.h'), 'utf8')],
    ...(dir ? { cacheDir: dir } : {}),
    hint: HINT,
  });
}

/** ensureProgram's steps with the portable flags (the toolchain has no per-call flag override). */
async function buildPortable(kind: SparseAddonKind, dir?: string): Promise<string> {
  const cc = compiler();
  const include = nodeIncludeDir();
  const flags = portableFlags();
  const name = `vt-sparse-${kind}-portable`;
  const [version, headers, src, napi] = await Promise.all([
    compilerVersion(cc),
    headerSnapshot(),
    sparseAddonSources(kind),
    readFile(join(include, 'node_api.h'), 'utf8'),
  ]);
  const parts = [name, headers.hash, ...src.map((s) => `${s.name}\0${s.text}`), napi];
  const key = buildKey(parts, [...flags, ...libsFor('addon')], version).slice(0, 16);
  const path = join(dir ?? cacheDir(), 'tools', `${name}-${key}.node`);
  return installOnce(path, async (temp) => {
    const work = await mkdtemp(join(tmpdir(), 'veltair-vt-sparse-'));
    try {
      await Promise.all(src.map((s) => mkdir(dirname(join(work, s.name)), { recursive: true })));
      await Promise.all([writeSources(work, headers.files), writeSources(work, src)]);
      const cfiles = src.filter((s) => s.name.endsWith('.c')).map((s) => join(work, s.name));
      await runCompiler([...flags, '-I', work, '-I', include, '-o', temp, ...cfiles, ...libsFor('addon')], { cwd: work }, cc);
    } catch (e) {
      if (e instanceof VeltairError) throw e;
      const why = compilerStderr(e, 3).replace(/\n/g, ' ');
      throw new VeltairError('COMPILE_FAILED', `compiling veltair's portable sparse ${kind} add-on failed: ${why}`, HINT, 2);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
}
