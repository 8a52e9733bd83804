/** The writer never leaves half a bundle: failures remove the staging directory, --force swaps whole bundles. */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { prepareOutput, writeBundleAtomically } from '../src/bundle/write.js';
import { expectUserError } from './onnx-test-models.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-bundle-write-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('a failure mid-write leaves no OUT and no stray temp directory', async () => {
  const parent = mkdtempSync(join(root, 'p-'));
  const out = join(parent, 'model.bundle');
  const staging = await prepareOutput(out, false);
  await assert.rejects(
    writeBundleAtomically(staging, async (dir) => {
      writeFileSync(join(dir, 'weights', 'packed.bin'), Buffer.alloc(1024));
      throw new Error('disk full (simulated)');
    }),
    /disk full/,
  );
  assert.equal(existsSync(out), false);
  assert.deepEqual(readdirSync(parent), [], 'nothing left next to OUT');
});

test('a successful write appears whole; an existing OUT is refused without force and swapped with it', async () => {
  const parent = mkdtempSync(join(root, 'p-'));
  const out = join(parent, 'b');
  await writeBundleAtomically(await prepareOutput(out, false), async (dir) => {
    writeFileSync(join(dir, 'manifest.json'), 'one');
  });
  assert.equal(readFileSync(join(out, 'manifest.json'), 'utf8'), 'one');
  await expectUserError(() => prepareOutput(out, false), 'OUTPUT_EXISTS');
  // a failing forced rewrite keeps the old bundle
  await assert.rejects(
    writeBundleAtomically(await prepareOutput(out, true), async () => {
      throw new Error('boom');
    }),
  );
  assert.equal(readFileSync(join(out, 'manifest.json'), 'utf8'), 'one');
  await writeBundleAtomically(await prepareOutput(out, true), async (dir) => {
    writeFileSync(join(dir, 'manifest.json'), 'two');
  });
  assert.equal(readFileSync(join(out, 'manifest.json'), 'utf8'), 'two');
  assert.deepEqual(readdirSync(parent), ['b'], 'old bundle and staging removed');
});

test('--force never replaces a directory that is not a bundle, and an unwritable location is one clear error', async () => {
  const parent = mkdtempSync(join(root, 'p-'));
  const precious = join(parent, 'home');
  mkdirSync(precious);
  writeFileSync(join(precious, 'thesis.tex'), 'years of work');
  await expectUserError(() => prepareOutput(precious, true), 'OUTPUT_EXISTS');
  assert.equal(readFileSync(join(precious, 'thesis.tex'), 'utf8'), 'years of work');
  writeFileSync(join(parent, 'file'), '');
  await expectUserError(() => prepareOutput(join(parent, 'file', 'bundle'), false), 'FILE_UNWRITABLE');
});
