/**
 * veltair's own small C programs — the noise generator, the calibration probe, the FMA peak loop,
 * the copy-bandwidth loop —
 * compiled once per machine through the content-addressed build cache.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureProgram } from './build-cache.js';
import { nativeDir } from './paths.js';

export type NativeToolName = 'noise' | 'peak' | 'probe' | 'copybw';

/** Path of the compiled tool, compiling it first when the cache does not hold this exact build. */
export async function ensureTool(name: NativeToolName, options: { cacheDir?: string } = {}): Promise<string> {
  const text = await readFile(join(nativeDir(), `${name}.c`), 'utf8');
  return ensureProgram({ name, artifact: 'tool', sources: [{ name: `${name}.c`, text }], ...options });
}
