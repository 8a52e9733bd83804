/**
 * Building the runtime's N-API addon: every C file of native-kernels/runtime/ (with the N-API
 * helpers of native-kernels/napi/) in one `cc` call, through the toolchain's content-addressed
 * build cache (the name carries the sha256 of the sources, headers, flags, compiler version and CPU
 * identity), so concurrent first uses never see half a file and a source edit never reuses a stale
 * addon.
 *
 * Why no node-gyp: see native-kernels/runtime/addon.c — one compiler for kernels and runtime,
 * nothing to build at install time, and the JS→C crossing happens once per inference.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { addonSources } from '../toolchain/addon-sources.js';
import { ensureProgram } from '../toolchain/build-cache.js';
import { nodeIncludeDir } from '../toolchain/node-headers.js';
import { nativeDir } from '../toolchain/paths.js';

export function runtimeSourceDir(): string {
  return join(nativeDir(), 'runtime');
}

let building: Promise<string> | undefined;

/** Path of the compiled addon, compiling it first when the cache lacks this exact build. */
export function ensureRuntimeAddon(options: { cacheDir?: string } = {}): Promise<string> {
  if (options.cacheDir !== undefined) return buildAddon(options.cacheDir);
  building ??= buildAddon().catch((e: unknown) => {
    building = undefined;
    throw e;
  });
  return building;
}

async function buildAddon(cacheDir?: string): Promise<string> {
  const include = nodeIncludeDir();
  const sources = await addonSources(['runtime']);
  return ensureProgram({
    name: 'vt-runtime',
    artifact: 'addon',
    sources,
    includeDirs: [include],
    extension: '.node',
    keyExtras: [await readFile(join(include, 'node_api.h'), 'utf8')],
    ...(cacheDir ? { cacheDir } : {}),
    hint: 'check that the C compiler supports OpenMP (libgomp); this is a veltair bug if it does',
  });
}
