/**
 * Building the sparse-training addon (native-kernels/sparse/*.c) on first use, the way the runtime
 * builds its own (src/runtime/native-build.ts): one `cc` call, no node-gyp, into the shared
 * content-addressed cache, named by the sha256 of the sources, headers, flags, compiler version and
 * CPU identity, and written under a temp name then renamed, so concurrent first uses never see half
 * a file.
 *
 * Two builds: `native` (-march=native: AVX-512 where the CPU has it, else AVX2 + FMA) is what
 * training uses; `portable` (-march=x86-64: the plain C path) exists so the tests can check that
 * the vector paths and the scalar path compute the same thing.
 *
 * TODO(#10): when src/toolchain/ lands on main, take compiler discovery, flags and cache keys from
 * it instead of the three imports below.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { VeltairError, userError } from '../errors.js';
import { compilerCommand, ccVersion, nativeDir } from '../measure/build.js';
import { cacheDir, toolHash } from '../measure/native-tool.js';
import { ADDON_FLAGS, nodeIncludeDir } from '../runtime/native-build.js';

export type SparseBuild = 'native' | 'portable';

/** The kernel headers the sparse sources include from native-kernels/. */
const SHARED_HEADERS = ['vt_simd.h', 'vt_math.inc'] as const;

export function sparseFlags(build: SparseBuild): string[] {
  return build === 'native' ? [...ADDON_FLAGS] : ADDON_FLAGS.map((f) => (f === '-march=native' ? '-march=x86-64' : f));
}

export function sparseSourceDir(): string {
  return join(nativeDir(), 'sparse');
}

const building = new Map<string, Promise<string>>();

/** Path of the compiled addon, compiling it first when the cache lacks this exact build. */
export function ensureSparseAddon(options: { build?: SparseBuild; cacheDir?: string } = {}): Promise<string> {
  const build = options.build ?? 'native';
  const root = options.cacheDir ?? cacheDir();
  const key = `${build}\0${root}`;
  let p = building.get(key);
  if (!p) {
    p = buildAddon(build, root).catch((e: unknown) => { building.delete(key); throw e; });
    building.set(key, p);
  }
  return p;
}

async function buildAddon(build: SparseBuild, root: string): Promise<string> {
  const cc = compilerCommand();
  const include = nodeIncludeDir();
  const files = readdirSync(sparseSourceDir()).filter((f) => f.endsWith('.c') || f.endsWith('.h')).sort();
  const texts = await Promise.all([
    ...files.map((f) => readFile(join(sparseSourceDir(), f), 'utf8')),
    ...SHARED_HEADERS.map((h) => readFile(join(nativeDir(), h), 'utf8')),
    readFile(join(include, 'node_api.h'), 'utf8'),
  ]);
  const flags = sparseFlags(build);
  const version = await ccVersion(cc);
  const source = files.map((f, i) => `${f}\0${texts[i]}`).join('\0') + texts.slice(files.length).join('\0');
  const dir = join(root, 'sparse');
  const target = join(dir, `vt-sparse-${build}-${toolHash(source, flags, version).slice(0, 16)}.node`);
  if (existsSync(target)) return target;
  await mkdir(dir, { recursive: true });
  const temp = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const cfiles = files.filter((f) => f.endsWith('.c')).map((f) => join(sparseSourceDir(), f));
  try {
    await execa(cc, [...flags, '-I', include, '-I', nativeDir(), '-o', temp, ...cfiles, '-lm']);
    await rename(temp, target);
  } catch (e) {
    await rm(temp, { force: true });
    if (e instanceof VeltairError) throw e;
    if ((e as { code?: string }).code === 'ENOENT') {
      throw userError('NO_COMPILER', `C compiler ${JSON.stringify(cc)} was not found`, 'install gcc (e.g. `apt-get install gcc`) or point CC at a C compiler');
    }
    const stderr = String((e as { stderr?: string }).stderr ?? e);
    throw new VeltairError('COMPILE_FAILED', `compiling veltair's sparse-training addon failed: ${stderr.split('\n').slice(0, 4).join(' ')}`,
      `check that ${cc} supports ${flags.join(' ')} (OpenMP: libgomp); this is a veltair bug if it does`, 2);
  }
  return target;
}
