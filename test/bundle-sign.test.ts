/**
 * Signed bundles end to end through the real binary: `veltair keygen` (private key mode 0600,
 * never overwritten), `veltair compile --sign` (manifest.sig inside the bundle), `veltair run
 * --trust`, `veltair serve --trust` and `loadBundle(dir, { trustedKeys })` refusing an unsigned bundle (UNSIGNED_BUNDLE), a
 * bundle signed by another key or whose manifest changed after signing (BAD_SIGNATURE) and one
 * whose other files changed (BAD_BUNDLE, their sha256 in the signed manifest) — each one clear
 * error line with exit 1, before any kernel is loaded; `veltair sign` re-signs.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeModel } from '../src/onnx/encode.js';
import { encodeNpy } from '../src/runtime/io-npy.js';
import { loadBundle } from '../src/runtime/session.js';
import { readBundle } from '../src/bundle/read.js';
import { SIGNATURE_FILE } from '../src/bundle/sign.js';
import { isVeltairError } from '../src/errors.js';
import { assertOneClearError, tinyModelSpec, veltair } from './compile-fixture.js';
import { seededFloats } from './runtime-session-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-sign-'));
after(() => rmSync(root, { recursive: true, force: true }));
const env = { VELTAIR_CACHE_DIR: join(root, 'cache') };
const model = join(root, 'tiny.onnx');
const bundle = join(root, 'tiny.bundle');
const input = join(root, 'x.npy');
const ci = join(root, 'ci'),
  other = join(root, 'other');
let keyId = '';

const copyBundle = (name: string, edit: (dir: string) => void = () => undefined) => {
  const dir = join(root, name);
  cpSync(bundle, dir, { recursive: true });
  edit(dir);
  return dir;
};
const run = (dir: string, ...trust: string[]) =>
  veltair(['run', dir, '--input', input, '--output-dir', join(root, 'out'), ...trust.flatMap((k) => ['--trust', k]), '--json'], env);

before(async () => {
  writeFileSync(model, encodeModel(tinyModelSpec()));
  writeFileSync(input, encodeNpy({ dtype: 'float32', shape: [1, 3, 8, 8], data: seededFloats(192, 5) }));
  for (const prefix of [ci, other]) {
    const k = await veltair(['keygen', '-o', prefix, '--json'], env);
    assert.equal(k.exitCode, 0, k.stderr);
    if (prefix === ci) keyId = JSON.parse(k.stdout).keyId;
  }
  const r = await veltair(
    [
      'compile',
      model,
      '-o',
      bundle,
      '--db',
      join(root, 'db'),
      '--trials',
      '1',
      '--levels',
      '0',
      '--max-versions',
      '1',
      '--profile-threads',
      'none',
      '--sign',
      `${ci}.key`,
      '--json',
    ],
    env,
  );
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).signedBy, keyId, 'compile --json names the signing key');
});

test('keygen writes an Ed25519 pair, the private half readable by its owner only, and never overwrites one', async () => {
  assert.equal(statSync(`${ci}.key`).mode & 0o777, 0o600);
  assert.match(readFileSync(`${ci}.key`, 'utf8'), /^-----BEGIN PRIVATE KEY-----/);
  assert.match(readFileSync(`${ci}.pub`, 'utf8'), /^-----BEGIN PUBLIC KEY-----/);
  const before = readFileSync(`${ci}.key`, 'utf8');
  assertOneClearError(await veltair(['keygen', '-o', ci], env), 'OUTPUT_EXISTS', [`${ci}.key`]);
  assert.equal(readFileSync(`${ci}.key`, 'utf8'), before, 'the old key is untouched');
  assertOneClearError(await veltair(['keygen'], env), 'BAD_ARGUMENT', ['-o PREFIX']);
});

test('a signed bundle runs with --trust of its key (any of several) and says which key signed it', async () => {
  assert.ok(existsSync(join(bundle, SIGNATURE_FILE)));
  const sig = JSON.parse(readFileSync(join(bundle, SIGNATURE_FILE), 'utf8'));
  assert.deepEqual(Object.keys(sig), ['format', 'algorithm', 'signed', 'keyId', 'publicKey', 'signature']);
  assert.deepEqual([sig.format, sig.algorithm, sig.signed, sig.keyId], ['veltair-signature/1', 'ed25519', 'manifest.json', keyId]);
  const r = await run(bundle, `${other}.pub`, `${ci}.pub`);
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).signedBy, keyId);
  const plain = await run(bundle);
  assert.equal(plain.exitCode, 0, 'without --trust the signature is not required');
});

test('--trust refuses an unsigned bundle, another signer, a manifest changed after signing, and a changed file', async () => {
  const unsigned = copyBundle('unsigned.bundle', (d) => rmSync(join(d, SIGNATURE_FILE)));
  assertOneClearError(await run(unsigned, `${ci}.pub`), 'UNSIGNED_BUNDLE', ['manifest.sig']);
  assertOneClearError(await run(bundle, `${other}.pub`), 'BAD_SIGNATURE', [`signed by key ${keyId}`, 'not a trusted key']);
  const edited = copyBundle('edited.bundle', (d) => {
    const p = join(d, 'manifest.json');
    writeFileSync(p, readFileSync(p, 'utf8').replace('"trials": 1', '"trials": 2'));
  });
  assertOneClearError(await run(edited, `${ci}.pub`), 'BAD_SIGNATURE', ['changed after it was signed']);
  const weights = copyBundle('weights.bundle', (d) => {
    const p = join(d, 'weights', 'packed.bin');
    const b = readFileSync(p);
    b[0] ^= 1;
    writeFileSync(p, b);
  });
  assertOneClearError(await run(weights, `${ci}.pub`), 'BAD_BUNDLE', ['weights/packed.bin does not match its sha256']);
  const forged = copyBundle('forged.bundle', (d) => {
    const p = join(d, SIGNATURE_FILE);
    const s = JSON.parse(readFileSync(p, 'utf8'));
    writeFileSync(p, JSON.stringify({ ...s, signature: Buffer.alloc(64, 7).toString('base64') }));
  });
  assertOneClearError(await run(forged, `${ci}.pub`), 'BAD_SIGNATURE', ['does not match manifest.json']);
  const junk = copyBundle('junk.bundle', (d) => writeFileSync(join(d, SIGNATURE_FILE), 'not json'));
  assertOneClearError(await run(junk, `${ci}.pub`), 'BAD_SIGNATURE', ['not valid JSON']);
  const rsa = join(root, 'rsa.pub');
  writeFileSync(rsa, generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }));
  assertOneClearError(await run(bundle, rsa), 'BAD_KEY', ['Ed25519']);
  assertOneClearError(await run(bundle, join(root, 'missing.pub')), 'FILE_NOT_FOUND', ['missing.pub']);
  // veltair serve takes the same --trust: an unsigned bundle is refused before the server starts.
  assertOneClearError(await veltair(['serve', unsigned, '--port', '0', '--trust', `${ci}.pub`], env), 'UNSIGNED_BUNDLE', ['manifest.sig']);
  assertOneClearError(await veltair(['serve', bundle, '--port', '0', '--trust', `${other}.pub`], env), 'BAD_SIGNATURE', [
    'not a trusted key',
  ]);
});

test('loadBundle({ trustedKeys }) applies the same checks, before any native code loads', async () => {
  const pem = readFileSync(`${ci}.pub`, 'utf8');
  const session = await loadBundle(bundle, { trustedKeys: [pem] });
  try {
    assert.equal(session.signedBy, keyId);
  } finally {
    session.close();
  }
  const unsigned = copyBundle('unsigned-lib.bundle', (d) => rmSync(join(d, SIGNATURE_FILE)));
  // A kernels.so that is not an ELF file would fail at dlopen: refused before that, by the signature check.
  writeFileSync(join(unsigned, 'kernels', 'kernels.so'), 'not a shared object');
  await assert.rejects(loadBundle(unsigned, { trustedKeys: [pem] }), (e: unknown) => isVeltairError(e) && e.code === 'UNSIGNED_BUNDLE');
  await assert.rejects(readBundle(bundle, { trustedKeys: [] }), (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT');
});

test('compile --sign with a bad key stops before tuning; veltair sign re-signs a bundle whose manifest changed', async () => {
  writeFileSync(join(root, 'bad.key'), 'not a key');
  assertOneClearError(
    await veltair(['compile', model, '-o', join(root, 'never.bundle'), '--sign', join(root, 'bad.key')], env),
    'BAD_KEY',
    ['bad.key'],
  );
  assert.ok(!existsSync(join(root, 'never.bundle')));
  assert.ok(!existsSync(join(root, 'cache', 'tuning-db')), 'nothing was tuned (no record was written to the default database)');
  assertOneClearError(await veltair(['compile', model, '-o', join(root, 'never.bundle'), '--sign', `${ci}.pub`], env), 'BAD_KEY', [
    'private key',
  ]);
  const edited = copyBundle('resigned.bundle', (d) => {
    const p = join(d, 'manifest.json');
    writeFileSync(p, readFileSync(p, 'utf8').replace('"seed": 1', '"seed": 2'));
  });
  assertOneClearError(await run(edited, `${ci}.pub`), 'BAD_SIGNATURE');
  const s = await veltair(['sign', edited, '--key', `${other}.key`, '--json'], env);
  assert.equal(s.exitCode, 0, s.stderr);
  assert.equal((await run(edited, `${other}.pub`)).exitCode, 0);
  assertOneClearError(await run(edited, `${ci}.pub`), 'BAD_SIGNATURE', ['not a trusted key']);
});
