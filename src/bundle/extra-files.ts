/**
 * Adding files built after the manifest (a sparse output layer's family, which is measured on the
 * staged bundle itself) to a staged bundle's manifest: each file's size and sha256 go into
 * `files`, so readBundle verifies them like every other file, and the manifest is checked against
 * the schema again before it is rewritten. Runs inside the staging directory, before signing.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeTextAtomic } from '../atomic-file.js';
import { BUNDLE_FILES, manifestText, type Manifest } from './manifest.js';
import { assertManifestSchema } from './schema.js';

export async function addFilesToManifest(dir: string, rels: readonly string[]): Promise<Manifest> {
  const path = join(dir, BUNDLE_FILES.manifest);
  const manifest = JSON.parse(await readFile(path, 'utf8')) as Manifest;
  const files = { ...manifest.files };
  for (const rel of rels) {
    const bytes = await readFile(join(dir, rel));
    files[rel] = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: (await stat(join(dir, rel))).size };
  }
  const sorted = Object.fromEntries(
    Object.keys(files)
      .sort()
      .map((k) => [k, files[k]!]),
  );
  const next: Manifest = { ...manifest, files: sorted };
  const text = manifestText(next);
  assertManifestSchema(JSON.parse(text), 'the manifest veltair just built');
  await writeTextAtomic(path, text);
  return next;
}
