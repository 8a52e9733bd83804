/**
 * Where veltair's own files are: the package root (native sources live under it) and the cache
 * every content-addressed build and the default tuning database go to.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VeltairError } from '../errors.js';

/** `VELTAIR_CACHE_DIR`, else `$XDG_CACHE_HOME/veltair`, else `~/.cache/veltair`. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env['VELTAIR_CACHE_DIR']) return env['VELTAIR_CACHE_DIR'];
  if (env['XDG_CACHE_HOME']) return join(env['XDG_CACHE_HOME'], 'veltair');
  return join(homedir(), '.cache', 'veltair');
}

let root: string | undefined;

/** The package root: the nearest folder above this file holding package.json (works from src/ and dist/). */
export function repoRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new VeltairError('INTERNAL', 'cannot find the veltair package root', 'reinstall veltair', 2);
    dir = up;
  }
  root = dir;
  return dir;
}

/** native-kernels/: the C sources and headers veltair compiles. */
export function nativeDir(): string {
  return join(repoRoot(), 'native-kernels');
}
