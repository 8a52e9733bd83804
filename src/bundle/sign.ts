/**
 * Signed bundles. A bundle is native code (kernels/kernels.so is dlopen'ed by the runtime), built by
 * CI jobs its users do not watch, so a deployment should run only bundles a builder it trusts
 * signed. What is signed is manifest.json's exact bytes: the manifest holds the sha256 and size of
 * every other file, so one Ed25519 signature over it covers the whole bundle (readBundle checks every
 * file against the manifest). node:crypto only; no new dependency.
 *
 * manifest.sig (bundle root, written with the manifest, before the bundle is renamed into place),
 * one JSON object:
 *   { "format": "veltair-signature/1", "algorithm": "ed25519", "signed": "manifest.json",
 *     "keyId": "<first 16 hex of sha256 of the public key's SPKI DER>",
 *     "publicKey": "<base64 SPKI DER of the signer's public key>",
 *     "signature": "<base64 of the 64-byte Ed25519 signature of manifest.json's bytes>" }
 * The embedded public key only names the signer in messages: verification uses the trusted keys
 * the caller gives, never the key the file brings.
 *
 * Keys are PEM files: the private key PKCS#8 (`veltair keygen` writes it with mode 0600), the public
 * key SPKI. A trusted key may be given as either (the public half is derived).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { userError } from '../errors.js';
import { BUNDLE_FILES } from './manifest.js';

export const SIGNATURE_FILE = 'manifest.sig';
export const SIGNATURE_FORMAT = 'veltair-signature/1';
const MAX_SIGNATURE_BYTES = 64 * 1024;

export interface BundleSignature {
  readonly format: typeof SIGNATURE_FORMAT;
  readonly algorithm: 'ed25519';
  readonly signed: typeof BUNDLE_FILES.manifest;
  readonly keyId: string;
  readonly publicKey: string;
  readonly signature: string;
}

export interface KeyPairPem {
  readonly privateKeyPem: string;
  readonly publicKeyPem: string;
  readonly keyId: string;
}

/** The id a key is known by in messages: sha256 of its SPKI DER, 16 hex. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

export function generateSigningKeys(): KeyPairPem {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyId: keyIdOf(publicKey),
  };
}

function readKeyFile(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw userError(
      'FILE_NOT_FOUND',
      `${flag} ${path}: cannot read the key file (${(e as NodeJS.ErrnoException).code ?? 'unreadable'})`,
      'give the path of a PEM key written by veltair keygen',
    );
  }
}

const notEd25519 = (flag: string, path: string, what: string) =>
  userError(
    'BAD_KEY',
    `${flag} ${path} is not ${what}`,
    'make a key pair with veltair keygen -o PREFIX (PREFIX.key signs, PREFIX.pub verifies)',
  );

/** An Ed25519 private key from a PEM file (`compile --sign KEY`). */
export function readSigningKey(path: string, flag = '--sign'): KeyObject {
  const pem = readKeyFile(path, flag);
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw notEd25519(flag, path, 'a PEM private key (PKCS#8)');
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw notEd25519(flag, path, `an Ed25519 key (it is ${key.asymmetricKeyType ?? 'another kind'})`);
  return key;
}

/** An Ed25519 public key from a PEM file (`--trust KEY`): a public key, or a private key whose public half is used. */
export function readTrustedKey(path: string, flag = '--trust'): KeyObject {
  const pem = readKeyFile(path, flag);
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw notEd25519(flag, path, 'a PEM Ed25519 key');
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw notEd25519(flag, path, `an Ed25519 key (it is ${key.asymmetricKeyType ?? 'another kind'})`);
  return key;
}

/** A trusted key as the library takes it: a KeyObject, or PEM text (public or private; the public half is used). */
export function trustedKeyFrom(k: KeyObject | string, where = 'trustedKeys'): KeyObject {
  let key: KeyObject;
  try {
    key = typeof k === 'string' ? createPublicKey(k) : k.type === 'private' ? createPublicKey(k) : k;
  } catch {
    throw notEd25519(where, 'entry', 'a PEM Ed25519 key');
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw notEd25519(where, 'entry', `an Ed25519 key (it is ${key.asymmetricKeyType ?? 'another kind'})`);
  return key;
}

/** The signature of `manifestBytes` as manifest.sig holds it. */
export function signatureFor(manifestBytes: Uint8Array, privateKey: KeyObject): BundleSignature {
  const publicKey = createPublicKey(privateKey);
  return {
    format: SIGNATURE_FORMAT,
    algorithm: 'ed25519',
    signed: BUNDLE_FILES.manifest,
    keyId: keyIdOf(publicKey),
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    signature: sign(null, manifestBytes, privateKey).toString('base64'),
  };
}

/** Sign the manifest.json in `dir` (a staging directory: before the bundle is renamed into place). */
export async function signBundleDir(dir: string, privateKey: KeyObject): Promise<BundleSignature> {
  const s = signatureFor(readFileSync(join(dir, BUNDLE_FILES.manifest)), privateKey);
  await writeFile(join(dir, SIGNATURE_FILE), JSON.stringify(s, null, 2) + '\n', { flag: 'wx' });
  return s;
}

const unsigned = (dir: string) =>
  userError(
    'UNSIGNED_BUNDLE',
    `${dir} has no ${SIGNATURE_FILE}: the bundle is not signed, and trusted keys were given`,
    'run only bundles signed by a builder you trust: compile with veltair compile --sign KEY (see the README, "Signed bundles")',
  );
const badSignature = (message: string) =>
  userError(
    'BAD_SIGNATURE',
    message,
    "the manifest was modified after signing, or signed by a key you do not trust; rebuild and re-sign it, or trust the signer's public key",
  );

function parseSignature(text: string, where: string): BundleSignature {
  let v: Partial<BundleSignature>;
  try {
    v = JSON.parse(text) as Partial<BundleSignature>;
  } catch {
    throw badSignature(`${where} is not valid JSON`);
  }
  const base64 = (s: unknown) => typeof s === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(s);
  if (
    v === null ||
    typeof v !== 'object' ||
    v.format !== SIGNATURE_FORMAT ||
    v.algorithm !== 'ed25519' ||
    v.signed !== BUNDLE_FILES.manifest ||
    typeof v.keyId !== 'string' ||
    !/^[0-9a-f]{16}$/.test(v.keyId) ||
    !base64(v.signature) ||
    !base64(v.publicKey)
  ) {
    throw badSignature(`${where} is not a ${SIGNATURE_FORMAT} ed25519 signature of ${BUNDLE_FILES.manifest}`);
  }
  return v as BundleSignature;
}

/**
 * Check that `manifestBytes` (the bytes about to be parsed: read once, so a file swapped after the
 * check is never the one trusted) carry a valid signature by one of `trustedKeys`. Returns the
 * signer's key id. Refusals: UNSIGNED_BUNDLE (no manifest.sig), BAD_SIGNATURE (malformed, signed
 * by an untrusted key, or not matching the bytes). Files other than the manifest are covered by
 * their sha256 in it, which readBundle checks (BAD_BUNDLE when one changed).
 */
export function verifyManifestSignature(dir: string, manifestBytes: Uint8Array, trustedKeys: readonly KeyObject[]): string {
  if (trustedKeys.length === 0)
    throw userError('BAD_ARGUMENT', 'an empty list of trusted keys trusts nothing', 'give at least one public key');
  const path = join(dir, SIGNATURE_FILE);
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_SIGNATURE_BYTES) throw badSignature(`${path} is ${bytes.length} bytes, more than a signature can be`);
    text = bytes.toString('utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw unsigned(dir);
    throw e;
  }
  const s = parseSignature(text, path);
  const signature = Buffer.from(s.signature, 'base64');
  const trusted = trustedKeys.map((k) => ({ key: k, id: keyIdOf(k) }));
  const byId = trusted.find((t) => t.id === s.keyId);
  if (!byId) {
    throw badSignature(`${dir} is signed by key ${s.keyId}, which is not a trusted key (trusted: ${trusted.map((t) => t.id).join(', ')})`);
  }
  if (signature.length !== 64 || !verify(null, manifestBytes, byId.key, signature)) {
    throw badSignature(`${path} does not match ${BUNDLE_FILES.manifest} under key ${s.keyId}: the manifest changed after it was signed`);
  }
  return s.keyId;
}
