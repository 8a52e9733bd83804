/**
 * Building the runtime's N-API addon: every C file of native-kernels/runtime/ in one `cc` call,
 * into the same content-addressed cache as veltair's other native tools (the name carries the
 * sha256 of the sources, headers, flags, compiler version and CPU identity; written under a temp
 * name and renamed into place, so concurrent first uses never see half a file).
 *
 * Why no node-gyp: see native-kernels/runtime/addon.c — one compiler for kernels and runtime,
 * nothing to build at install time, and the JS→C crossing happens once per inference.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { VeltairError, userError } from '../errors.js';
import { compilerCommand, ccVersion, KERNEL_HEADERS, nativeDir } from '../measure/build.js';
import { cacheDir, toolHash } from '../measure/native-tool.js';

/** -fopenmp: the runtime's ops share the kernels' OpenMP pool (one libgomp in the process). */
export const ADDON_FLAGS: readonly string[] = ['-O3', '-march=native', '-fopenmp', '-shared', '-fPIC', '-std=gnu11'];

/** Where node_api.h lives for the running Node (the official layout: <prefix>/include/node). */
export function nodeIncludeDir(): string {
  const candidates = [join(dirname(process.execPath), '..', 'include', 'node'), '/usr/include/node', '/usr/local/include/node'];
  const found = candidates.find((d) => existsSync(join(d, 'node_api.h')));
  if (found === undefined) {
    throw userError('NO_COMPILER', `node_api.h was not found (looked in ${candidates.join(', ')})`,
      'install the Node.js development headers (e.g. `apt-get install libnode-dev` or a Node.js tarball, which ships include/node)');
  }
  return found;
}

export function runtimeSourceDir(): string {
  return join(nativeDir(), 'runtime');
}

function runtimeSources(): string[] {
  return readdirSync(runtimeSourceDir()).filter((f) => f.endsWith('.c') || f.endsWith('.h')).sort();
}

let building: Promise<string> | undefined;

/** Path of the compiled addon, compiling it first when the cache lacks this exact build. */
export function ensureRuntimeAddon(options: { cacheDir?: string } = {}): Promise<string> {
  if (options.cacheDir !== undefined) return buildAddon(options.cacheDir);
  building ??= buildAddon(cacheDir()).catch((e: unknown) => { building = undefined; throw e; });
  return building;
}

async function buildAddon(root: string): Promise<string> {
  const cc = compilerCommand();
  const include = nodeIncludeDir();
  const files = runtimeSources();
  const texts = await Promise.all([
    ...files.map((f) => readFile(join(runtimeSourceDir(), f), 'utf8')),
    ...KERNEL_HEADERS.map((h) => readFile(join(nativeDir(), h), 'utf8')),
    readFile(join(include, 'node_api.h'), 'utf8'),
  ]);
  const version = await ccVersion(cc);
  const source = files.map((f, i) => `${f}\0${texts[i]}`).join('\0') + texts.slice(files.length).join('\0');
  const dir = join(root, 'runtime');
  const target = join(dir, `vt-runtime-${toolHash(source, ADDON_FLAGS, version).slice(0, 16)}.node`);
  if (existsSync(target)) return target;
  await mkdir(dir, { recursive: true });
  const temp = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const cfiles = files.filter((f) => f.endsWith('.c')).map((f) => join(runtimeSourceDir(), f));
  try {
    await execa(cc, [...ADDON_FLAGS, '-I', include, '-I', nativeDir(), '-o', temp, ...cfiles, '-ldl', '-lm']);
    await rename(temp, target);
  } catch (e) {
    await rm(temp, { force: true });
    if (e instanceof VeltairError) throw e;
    if ((e as { code?: string }).code === 'ENOENT') {
      throw userError('NO_COMPILER', `C compiler ${JSON.stringify(cc)} was not found`, 'install gcc (e.g. `apt-get install gcc`) or point CC at a C compiler');
    }
    const stderr = String((e as { stderr?: string }).stderr ?? e);
    throw new VeltairError('COMPILE_FAILED', `compiling veltair's runtime addon failed: ${stderr.split('\n').slice(0, 4).join(' ')}`,
      `check that ${cc} supports ${ADDON_FLAGS.join(' ')} (OpenMP: libgomp); this is a veltair bug if it does`, 2);
  }
  return target;
}
