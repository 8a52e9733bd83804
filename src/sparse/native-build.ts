/**
 * Building the sparse-training addon (native-kernels/sparse/*.c) on first use, like the runtime's
 * addon: one `cc` call through the toolchain's content-addressed build cache (the name carries the
 * sha256 of the sources, the kernel headers, flags, compiler version and CPU identity; built under
 * a temp name and renamed), no node-gyp.
 *
 * Two builds: `native` (the toolchain's addon flags, -march=native: AVX-512 where the CPU has it,
 * else AVX2 + FMA) is what training uses; `portable` (the same flags at -march=x86-64: the plain C
 * path) exists so the tests can check that the vector paths and the scalar path agree.
 */
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VeltairError } from '../errors.js';
import { buildKey, ensureProgram, installOnce } from '../toolchain/build-cache.js';
import { compiler, compilerStderr, compilerVersion, runCompiler } from '../toolchain/compiler.js';
import { flagsFor, libsFor } from '../toolchain/flags.js';
import { headerSnapshot, writeSources, type SourceFile } from '../toolchain/headers.js';
import { nodeIncludeDir } from '../toolchain/node-headers.js';
import { cacheDir, nativeDir } from '../toolchain/paths.js';

export type SparseBuild = 'native' | 'portable';

const HINT = 'check that the C compiler supports OpenMP (libgomp); this is a veltair bug if it does';

export function sparseSourceDir(): string {
  return join(nativeDir(), 'sparse');
}

async function sources(): Promise<SourceFile[]> {
  const files = readdirSync(sparseSourceDir()).filter((f) => f.endsWith('.c') || f.endsWith('.h')).sort();
  return Promise.all(files.map(async (f) => ({ name: `sparse/${f}`, text: await readFile(join(sparseSourceDir(), f), 'utf8') })));
}

export function portableFlags(): string[] {
  return flagsFor('addon').map((f) => (f === '-march=native' ? '-march=x86-64' : f));
}

const building = new Map<string, Promise<string>>();

/** Path of the compiled addon, compiling it first when the cache lacks this exact build. */
export function ensureSparseAddon(options: { build?: SparseBuild; cacheDir?: string } = {}): Promise<string> {
  const build = options.build ?? 'native';
  const key = `${build}\0${options.cacheDir ?? ''}`;
  let p = building.get(key);
  if (!p) {
    p = (build === 'native' ? buildNative(options.cacheDir) : buildPortable(options.cacheDir)).catch((e: unknown) => { building.delete(key); throw e; });
    building.set(key, p);
  }
  return p;
}

async function buildNative(dir?: string): Promise<string> {
  const include = nodeIncludeDir();
  return ensureProgram({
    name: 'vt-sparse', artifact: 'addon', sources: await sources(), includeDirs: [include], extension: '.node',
    keyExtras: [await readFile(join(include, 'node_api.h'), 'utf8')], ...(dir ? { cacheDir: dir } : {}), hint: HINT,
  });
}

/** ensureProgram's steps with the portable flags (the toolchain has no per-call flag override). */
async function buildPortable(dir?: string): Promise<string> {
  const cc = compiler();
  const include = nodeIncludeDir();
  const flags = portableFlags();
  const [version, headers, src, napi] = await Promise.all([compilerVersion(cc), headerSnapshot(), sources(), readFile(join(include, 'node_api.h'), 'utf8')]);
  const parts = ['vt-sparse-portable', headers.hash, ...src.map((s) => `${s.name}\0${s.text}`), napi];
  const key = buildKey(parts, [...flags, ...libsFor('addon')], version).slice(0, 16);
  const path = join(dir ?? cacheDir(), 'tools', `vt-sparse-portable-${key}.node`);
  return installOnce(path, async (temp) => {
    const work = await mkdtemp(join(tmpdir(), 'veltair-vt-sparse-'));
    try {
      await mkdir(join(work, 'sparse'));
      await Promise.all([writeSources(work, headers.files), writeSources(work, src)]);
      const cfiles = src.filter((s) => s.name.endsWith('.c')).map((s) => join(work, s.name));
      await runCompiler([...flags, '-I', work, '-I', include, '-o', temp, ...cfiles, ...libsFor('addon')], { cwd: work }, cc);
    } catch (e) {
      if (e instanceof VeltairError) throw e;
      throw new VeltairError('COMPILE_FAILED', `compiling veltair's portable sparse addon failed: ${compilerStderr(e, 3).replace(/\n/g, ' ')}`, HINT, 2);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
}
