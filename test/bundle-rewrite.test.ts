/**
 * Rewriting a finished bundle's manifest (how the fitted interference proxy is stored): a signed
 * bundle is refused without its key, with nothing changed, and re-signed with it, so the new
 * manifest verifies under the same key; an unsigned bundle is rewritten and stays unsigned.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BUNDLE_FILES } from '../src/bundle/manifest.js';
import { checkRewritable, rewriteManifest } from '../src/bundle/rewrite-manifest.js';
import { generateSigningKeys, SIGNATURE_FILE, signBundleDir, verifyManifestSignature } from '../src/bundle/sign.js';
import { isVeltairError } from '../src/errors.js';
import { writeFakeBundle } from './bundle-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-rewrite-'));
after(() => rmSync(root, { recursive: true, force: true }));

test("a signed bundle's manifest is rewritten only with its key, which renews the signature", async () => {
  const dir = join(root, 'signed');
  const manifest = writeFakeBundle(dir);
  const keys = generateSigningKeys();
  const key = createPrivateKey(keys.privateKeyPem);
  await signBundleDir(dir, key);
  const before = readFileSync(join(dir, BUNDLE_FILES.manifest), 'utf8');
  const edited = { ...manifest, options: { ...manifest.options, seed: manifest.options.seed + 1 } };

  assert.throws(
    () => checkRewritable(dir, undefined),
    (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && e.hint.includes('--sign KEY'),
  );
  await assert.rejects(
    rewriteManifest(dir, edited),
    (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && e.message.includes(SIGNATURE_FILE),
  );
  assert.equal(readFileSync(join(dir, BUNDLE_FILES.manifest), 'utf8'), before, 'nothing written without the key');

  const { signedBy } = await rewriteManifest(dir, edited, key);
  assert.equal(signedBy, keys.keyId);
  const after = readFileSync(join(dir, BUNDLE_FILES.manifest));
  assert.notEqual(after.toString('utf8'), before);
  assert.equal((JSON.parse(after.toString('utf8')) as typeof manifest).options.seed, manifest.options.seed + 1);
  assert.equal(verifyManifestSignature(dir, after, [createPublicKey(keys.publicKeyPem)]), keys.keyId);
});

test("an unsigned bundle's manifest is rewritten and stays unsigned", async () => {
  const dir = join(root, 'unsigned');
  const manifest = writeFakeBundle(dir);
  const edited = { ...manifest, options: { ...manifest.options, seed: manifest.options.seed + 2 } };
  assert.deepEqual(await rewriteManifest(dir, edited), {});
  assert.equal(
    (JSON.parse(readFileSync(join(dir, BUNDLE_FILES.manifest), 'utf8')) as typeof manifest).options.seed,
    manifest.options.seed + 2,
  );
  assert.equal(existsSync(join(dir, SIGNATURE_FILE)), false);
});
