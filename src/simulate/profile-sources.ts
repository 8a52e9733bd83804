/**
 * Where the simulator's profiles come from (`--profiles A,B,…`), each entry one of:
 *  - a profile file (`*.json`, the veltair-profile format);
 *  - the VELTAIR artifact's CSV (`*.csv`, labelled `artifact`);
 *  - a bundle directory (holds manifest.json): the profile `veltair profile` wrote beside it,
 *    `<dir>/../<name>.profile.json` (`name` = the directory name without `.bundle`), which must
 *    have been taken of exactly this bundle (its manifest's sha256) — a profile of another
 *    bundle is refused;
 *  - any other directory: every `*.profile.json` in it.
 * `ALIAS=ENTRY` renames the model of a single-profile entry (e.g. `resnet50@3990x=artifact.csv`
 * beside a measured resnet50); a name `model@label` gets `model`'s QoS bound. Two profiles of
 * one model name are refused (which one would the mix mean?).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { quoteForMessage, userError } from '../errors.js';
import { parseArtifactCsv } from '../schedule/artifact-csv.js';
import { parseProfile, type Profile } from '../schedule/scheduling-profile.js';

export interface LoadedProfile {
  readonly profile: Profile;
  readonly file: string;
}

function readText(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw userError(
      'FILE_NOT_FOUND',
      `${flag} ${path} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
      'give a profile file, a bundle directory or a directory of *.profile.json',
    );
  }
}

/** The default profile path of a bundle directory. */
export function profilePathFor(bundleDir: string): string {
  const abs = resolve(bundleDir);
  const name = basename(abs).replace(/\.bundle$/, '') || 'model';
  return join(dirname(abs), `${name}.profile.json`);
}

export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Refuse a profile taken of another bundle. */
export function checkProfileMatchesBundle(p: Profile, profileFile: string, bundleDir: string): void {
  const manifest = join(bundleDir, 'manifest.json');
  const sha = sha256File(manifest);
  if (p.model.manifestSha256 !== sha) {
    throw userError(
      'BAD_PROFILE',
      `${profileFile} was not taken of bundle ${bundleDir} (its manifest sha256 is ${sha.slice(0, 12)}…, the profile names ` +
        `${p.model.manifestSha256 === null ? 'no bundle' : `${p.model.manifestSha256.slice(0, 12)}…`})`,
      `profile this bundle again: veltair profile ${bundleDir}`,
    );
  }
}

function loadOne(entry: string): LoadedProfile[] {
  const abs = resolve(entry);
  if (!existsSync(abs))
    throw userError(
      'FILE_NOT_FOUND',
      `--profiles ${quoteForMessage(entry)} does not exist`,
      'give a profile file, a bundle directory or a directory of *.profile.json',
    );
  if (statSync(abs).isDirectory()) {
    if (existsSync(join(abs, 'manifest.json'))) {
      const file = profilePathFor(abs);
      if (!existsSync(file))
        throw userError('FILE_NOT_FOUND', `bundle ${abs} has no profile at ${file}`, `write one with: veltair profile ${entry}`);
      const profile = parseProfile(readText(file, '--profiles'), file);
      checkProfileMatchesBundle(profile, file, abs);
      return [{ profile, file }];
    }
    const files = readdirSync(abs)
      .filter((f) => f.endsWith('.profile.json'))
      .sort();
    if (files.length === 0)
      throw userError('FILE_NOT_FOUND', `directory ${abs} holds no *.profile.json`, 'write profiles with veltair profile BUNDLE');
    return files.map((f) => ({ profile: parseProfile(readText(join(abs, f), '--profiles'), join(abs, f)), file: join(abs, f) }));
  }
  const text = readText(abs, '--profiles');
  if (abs.toLowerCase().endsWith('.csv')) return [{ profile: parseArtifactCsv(text, abs), file: abs }];
  return [{ profile: parseProfile(text, abs), file: abs }];
}

export function loadProfiles(entries: readonly string[]): Map<string, LoadedProfile> {
  const out = new Map<string, LoadedProfile>();
  for (const entry of entries) {
    const alias = /^([A-Za-z0-9._-]+(?:@[A-Za-z0-9._-]+)?)=(.+)$/.exec(entry);
    const loaded = loadOne(alias ? alias[2]! : entry);
    if (alias && loaded.length !== 1)
      throw userError(
        'BAD_ARGUMENT',
        `--profiles ${quoteForMessage(entry)}: a name can only be given to one profile, ${alias[2]} holds ${loaded.length}`,
        'name single files: NAME=FILE',
      );
    const named = alias
      ? [{ ...loaded[0]!, profile: { ...loaded[0]!.profile, model: { ...loaded[0]!.profile.model, name: alias[1]! } } }]
      : loaded;
    for (const lp of named) {
      const prev = out.get(lp.profile.model.name);
      if (prev) {
        throw userError(
          'BAD_ARGUMENT',
          `two profiles for model ${quoteForMessage(lp.profile.model.name)}: ${prev.file} and ${lp.file}`,
          'pass one profile per model (a directory contributes every *.profile.json in it)',
        );
      }
      out.set(lp.profile.model.name, lp);
    }
  }
  return out;
}
