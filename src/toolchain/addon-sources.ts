/**
 * The sources of veltair's N-API add-ons (the runtime's and the two sparse ones), read fresh for
 * every build so that the build cache's key covers exactly the bytes compiled: a folder of
 * native-kernels/ (its .c and .h files, not its subfolders), each named `<folder>/<file>` as the
 * build directory lays them out, plus native-kernels/napi/vt_napi.h, the N-API helpers every
 * add-on includes as "napi/vt_napi.h".
 */
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SourceFile } from './headers.js';
import { nativeDir } from './paths.js';

/** The .c and .h files of native-kernels/<folder>, sorted by name. */
export async function nativeSources(folder: string): Promise<SourceFile[]> {
  const dir = join(nativeDir(), folder);
  const files = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && /\.[ch]$/.test(e.name))
    .map((e) => e.name)
    .sort();
  return Promise.all(files.map(async (f) => ({ name: `${folder}/${f}`, text: await readFile(join(dir, f), 'utf8') })));
}

/** The given folders' sources, and the shared N-API helper header. */
export async function addonSources(folders: readonly string[]): Promise<SourceFile[]> {
  return (await Promise.all(['napi', ...folders].map(nativeSources))).flat();
}
