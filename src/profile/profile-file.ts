/**
 * A bundle's scheduling profile on disk: `<name>.profile.json` beside `<name>.bundle` unless a path
 * is given, parsed (schema-checked) and refused when it was taken of another bundle (the profile
 * records the sha256 of the manifest it measured).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { quoteForMessage, userError } from '../errors.js';
import { parseProfile, type Profile } from '../schedule/scheduling-profile.js';

/** The default profile path of a bundle directory. */
export function defaultProfilePath(bundleDir: string): string {
  const abs = resolve(bundleDir);
  return join(dirname(abs), `${basename(abs).replace(/\.bundle$/, '') || 'model'}.profile.json`);
}

/** The profile of `bundleDir` (at `path`, else the default path); undefined when there is none. */
export function readBundleProfile(bundleDir: string, path?: string): { profile: Profile; file: string } | undefined {
  const file = path ?? defaultProfilePath(bundleDir);
  if (!existsSync(file)) {
    if (path !== undefined) {
      throw userError('FILE_NOT_FOUND', `profile ${quoteForMessage(path)} does not exist`, `write one with: veltair profile ${bundleDir}`);
    }
    return undefined;
  }
  const profile = parseProfile(readFileSync(file, 'utf8'), file);
  const sha = createHash('sha256')
    .update(readFileSync(join(bundleDir, 'manifest.json')))
    .digest('hex');
  if (profile.model.manifestSha256 !== sha) {
    throw userError(
      'BAD_PROFILE',
      `${file} was not taken of bundle ${bundleDir} (its manifest sha256 differs)`,
      `profile the bundle again: veltair profile ${bundleDir}`,
    );
  }
  return { profile, file };
}
