/**
 * Writing a bundle atomically: everything is built in a staging directory next to the destination
 * (same filesystem, so the final step is a rename), then renamed into place. A failure at any
 * point removes the staging directory: OUT is the old bundle or the new one, never half of one.
 * An existing OUT is refused without `force`; with it, OUT is renamed aside, the new bundle renamed
 * in, and the old one deleted. `force` only ever replaces a previous bundle (a directory holding
 * manifest.json) or an empty directory, never an arbitrary folder.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { userError } from '../errors.js';
import { BUNDLE_FILES } from './manifest.js';

export interface Staging {
  /** The final bundle path (absolute). */
  readonly out: string;
  /** Where the bundle is built (absolute; a hidden sibling of out). */
  readonly dir: string;
  readonly force: boolean;
}

const suffix = () => `${process.pid}-${randomBytes(4).toString('hex')}`;

function outputExists(out: string): never {
  throw userError('OUTPUT_EXISTS', `${out} already exists`, 'pass --force to replace it, or choose another -o path');
}

/**
 * Refuse an OUT that exists (without force, or that is not a bundle) or cannot be written, before
 * any tuning starts; the directory it would go in is created and a probe directory made and removed.
 */
export async function checkOutput(outPath: string, force: boolean): Promise<void> {
  const s = await prepareOutput(outPath, force);
  await abandon(s);
}

/** Check OUT and create the staging directory. */
export async function prepareOutput(outPath: string, force: boolean): Promise<Staging> {
  const out = resolve(outPath);
  const info = (() => {
    try {
      return lstatSync(out);
    } catch {
      return undefined;
    }
  })();
  if (info) {
    if (!force) outputExists(out);
    const replaceable = info.isDirectory() && (existsSync(join(out, BUNDLE_FILES.manifest)) || readdirSync(out).length === 0);
    if (!replaceable) {
      throw userError(
        'OUTPUT_EXISTS',
        `${out} exists and is not a veltair bundle; --force only replaces bundles`,
        'choose another -o path, or remove it yourself if you mean to',
      );
    }
  }
  const parent = dirname(out);
  const dir = join(parent, `.${basename(out)}.tmp-${suffix()}`);
  try {
    await makeParents(parent);
    await mkdir(dir);
    await mkdir(join(dir, 'kernels'));
    await mkdir(join(dir, 'weights'));
  } catch (e) {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw userError(
      'FILE_UNWRITABLE',
      `cannot write the bundle at ${out} (${code})`,
      'choose an -o path in a directory you can write to, or fix its permissions',
    );
  }
  return { out, dir, force };
}

/**
 * mkdir -p by hand: Node's recursive mkdir loops forever under /proc (ENOENT it cannot climb out
 * of), so create each missing ancestor ourselves and let the first real error surface.
 */
async function makeParents(dir: string): Promise<void> {
  const missing: string[] = [];
  let at = dir;
  while (!existsSync(at)) {
    missing.unshift(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  for (const d of missing) await mkdir(d);
}

/** Remove the staging directory (after a failure). */
export async function abandon(s: Staging): Promise<void> {
  await rm(s.dir, { recursive: true, force: true });
}

/** Rename the finished staging directory into place (replacing a previous bundle under force). */
export async function commit(s: Staging): Promise<void> {
  if (!existsSync(s.out)) {
    await rename(s.dir, s.out);
    return;
  }
  if (!s.force) outputExists(s.out);
  const old = join(dirname(s.out), `.${basename(s.out)}.old-${suffix()}`);
  await rename(s.out, old);
  try {
    await rename(s.dir, s.out);
  } catch (e) {
    await rename(old, s.out).catch(() => undefined);
    throw e;
  }
  await rm(old, { recursive: true, force: true });
}

/**
 * Build a bundle with `fill(stagingDir)` and move it into place; on any failure nothing is left
 * behind. `staging` may come from an earlier prepareOutput (checked before tuning started).
 */
export async function writeBundleAtomically<T>(staging: Staging, fill: (dir: string) => Promise<T>): Promise<T> {
  try {
    const result = await fill(staging.dir);
    await commit(staging);
    return result;
  } catch (e) {
    await abandon(staging);
    throw e;
  }
}
