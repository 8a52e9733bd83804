/**
 * Rewriting a finished bundle's manifest in place (the interference proxy fitted on this machine is
 * stored into it: src/compile/proxy-calibrate.ts). manifest.sig signs manifest.json's exact bytes,
 * so a signed bundle is re-signed with the key given, and a signed bundle without a key is refused
 * before anything is measured or written: a rewrite never leaves a bundle silently unsigned.
 * Each file is replaced atomically (src/atomic-file.ts: never half-written); the manifest first,
 * then its new signature.
 */
import type { KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { writeTextAtomic } from '../atomic-file.js';
import { userError } from '../errors.js';
import { BUNDLE_FILES, manifestText, type Manifest } from './manifest.js';
import { assertManifestSchema } from './schema.js';
import { SIGNATURE_FILE, signatureFor } from './sign.js';

export const isSigned = (dir: string): boolean => existsSync(join(dir, SIGNATURE_FILE));

/** Refuse, up front, to rewrite a signed bundle's manifest without the key to renew its signature. */
export function checkRewritable(dir: string, signingKey: KeyObject | undefined, flag = '--sign KEY'): void {
  if (signingKey || !isSigned(dir)) return;
  throw userError(
    'BAD_ARGUMENT',
    `${dir} is signed (${SIGNATURE_FILE}), and storing the fitted proxy changes its manifest: ` + 'the signature would no longer match',
    `pass ${flag} (the bundle's signing key) to renew the signature`,
  );
}

/** Write `manifest` as `dir`'s manifest.json; sign it with `signingKey` when given. Returns the signing key's id, if signed. */
export async function rewriteManifest(dir: string, manifest: Manifest, signingKey?: KeyObject): Promise<{ signedBy?: string }> {
  checkRewritable(dir, signingKey);
  const text = manifestText(manifest);
  assertManifestSchema(JSON.parse(text), `the rewritten ${BUNDLE_FILES.manifest}`);
  await writeTextAtomic(join(dir, BUNDLE_FILES.manifest), text);
  if (!signingKey) return {};
  const signature = signatureFor(Buffer.from(text), signingKey);
  await writeTextAtomic(join(dir, SIGNATURE_FILE), JSON.stringify(signature, null, 2) + '\n');
  return { signedBy: signature.keyId };
}
