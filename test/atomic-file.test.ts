/**
 * The one atomic-write helper (src/atomic-file.ts) that every room uses: a write replaces the file
 * whole, leaves no temp behind, and a failed write leaves the old file and no temp either, with the
 * caller's error (or FILE_UNWRITABLE by default).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTempName, lineChunks, tempNameFor, writeFileAtomic, writeFileAtomicSync, writeTextAtomic } from '../src/atomic-file.js';
import { isVeltairError, userError } from '../src/errors.js';

const fresh = () => mkdtempSync(join(tmpdir(), 'veltair-atomic-'));

test('text, bytes and chunks replace the file whole, and no temp is left', async () => {
  const dir = fresh();
  const path = join(dir, 'out.txt');
  writeFileSync(path, 'old contents that are longer than the new ones\n');
  await writeTextAtomic(path, 'one\n');
  assert.equal(readFileSync(path, 'utf8'), 'one\n');
  await writeFileAtomic(path, new Uint8Array([0x74, 0x77, 0x6f]));
  assert.equal(readFileSync(path, 'utf8'), 'two');
  await writeFileAtomic(path, lineChunks('header', ['a', 'b']));
  assert.equal(readFileSync(path, 'utf8'), 'header\na\nb\n');
  writeFileAtomicSync(path, 'sync\n');
  assert.equal(readFileSync(path, 'utf8'), 'sync\n');
  assert.deepEqual(readdirSync(dir), ['out.txt']);
});

test("a failed write keeps the old file, leaves no temp, and throws FILE_UNWRITABLE or the caller's error", async () => {
  const dir = fresh();
  const target = join(dir, 'taken');
  mkdirSync(target); // renaming a file over a directory fails after the temp was written
  const asyncError = await writeTextAtomic(target, 'x').then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isVeltairError(asyncError) && asyncError.code === 'FILE_UNWRITABLE', String(asyncError));
  assert.throws(
    () => writeFileAtomicSync(target, 'x', (p) => userError('BAD_ARGUMENT', `mapped ${p}`, 'hint')),
    (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && e.message.includes(target),
  );
  const missing = join(dir, 'no-such-dir', 'f');
  await assert.rejects(writeFileAtomic(missing, 'x'), (e: unknown) => isVeltairError(e) && e.code === 'FILE_UNWRITABLE');
  assert.deepEqual(readdirSync(dir), ['taken']);
  assert.deepEqual(readdirSync(target), []);
});

test('temp names are hidden, beside the target, unique, and recognised', () => {
  const a = tempNameFor('/x/y/model.onnx');
  const b = tempNameFor('/x/y/model.onnx');
  assert.notEqual(a, b);
  assert.ok(a.startsWith('/x/y/.model.onnx.tmp-'), a);
  assert.ok(isTempName(a.slice('/x/y/'.length)));
  assert.ok(!isTempName('model.onnx'));
});
