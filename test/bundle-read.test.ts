/**
 * readBundle trusts nothing: schema, format major version, file sizes and sha256, paths that
 * could leave the bundle, and the CPU's instruction sets are each checked with one clear error.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readBundle } from '../src/bundle/read.js';
import { manifestSchemaProblem } from '../src/bundle/schema.js';
import type { Manifest } from '../src/bundle/manifest.js';
import { expectUserError } from './onnx-test-models.js';
import { writeFakeBundle } from './bundle-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-bundle-read-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (edit?: (m: Manifest) => Manifest) => {
  const dir = join(root, `b${n++}`);
  writeFakeBundle(dir, edit);
  return dir;
};
const machine = { cpuFlags: new Set(['avx2', 'avx512f', 'fma', 'sse2']), cpuModel: 'Test CPU' };

test('a valid bundle round-trips: the manifest read back equals the one written and validates', async () => {
  let written: Manifest | undefined;
  const dir = fresh((m) => (written = m));
  const b = await readBundle(dir, machine);
  assert.deepEqual(b.manifest, JSON.parse(JSON.stringify(written)));
  assert.equal(manifestSchemaProblem(b.manifest), undefined);
  assert.equal(b.paths.params, join(b.paths.dir, 'weights', 'params.bin'));
  assert.deepEqual(b.warnings, []);
  // the model-supplied layer name stays a JSON string, nothing more
  assert.equal(b.manifest.layers[0]!.name, 'relu"; rm -rf / #');
});

test('the schema rejects what a 2.x manifest may not contain', () => {
  const dir = fresh();
  const good = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  assert.equal(manifestSchemaProblem(good), undefined);
  assert.match(manifestSchemaProblem({ ...good, extra: 1 })!, /additional/);
  assert.ok(manifestSchemaProblem({ ...good, model: { ...good.model, path: '/home/me/model.onnx' } }));
  assert.ok(manifestSchemaProblem({ ...good, files: { ...good.files, '../escape': { sha256: 'a'.repeat(64), bytes: 1 } } }));
  const unaligned = structuredClone(good);
  unaligned.graphPlan.values[1].offset = 3;
  assert.ok(manifestSchemaProblem(unaligned));
  unaligned.graphPlan.values[1].viewOf = { value: unaligned.graphPlan.values[0].id, byteOffset: 3 };
  assert.equal(manifestSchemaProblem(unaligned), undefined, 'a view (a slice of another value) need not start on a cache line');
});

test('a tampered file is a sha256 error; a truncated one a size error', async () => {
  const dir = fresh();
  const p = join(dir, 'weights', 'params.bin');
  const bytes = readFileSync(p);
  bytes[0] = bytes[0]! ^ 0xff;
  writeFileSync(p, bytes);
  const e = await expectUserError(() => readBundle(dir, machine), 'BAD_BUNDLE');
  assert.match(e.message, /weights\/params\.bin does not match its sha256/);
  const dir2 = fresh();
  appendFileSync(join(dir2, 'kernels', 'kernels.so'), 'x');
  assert.match(
    (await expectUserError(() => readBundle(dir2, machine), 'BAD_BUNDLE')).message,
    /kernels\/kernels\.so is \d+ bytes, the manifest says/,
  );
  const dir3 = fresh();
  unlinkSync(join(dir3, 'weights', 'packed.bin'));
  assert.match((await expectUserError(() => readBundle(dir3, machine), 'BAD_BUNDLE')).message, /weights\/packed\.bin is missing/);
});

test('a newer (or older) format major version is refused with a clear message', async () => {
  const dir = fresh((m) => ({ ...m, formatVersion: '3.1.0', layers: 'whatever a 3.x reader expects' as never }));
  const e = await expectUserError(() => readBundle(dir, machine), 'BAD_BUNDLE');
  assert.equal(e.message, 'bundle format 3.1.0 is newer than this veltair (2.x); recompile or upgrade');
  const old = fresh((m) => ({ ...m, formatVersion: '1.0.0' }));
  assert.match((await expectUserError(() => readBundle(old, machine), 'BAD_BUNDLE')).message, /older than this veltair/);
  const minor = fresh((m) => ({ ...m, formatVersion: '2.7.2' }));
  await readBundle(minor, machine);
});

test('kernels built for another kernel ABI are refused before anything is loaded', async () => {
  const dir = fresh((m) => ({ ...m, compilerVersion: { ...m.compilerVersion, kernelAbi: m.compilerVersion.kernelAbi + 1 } }));
  assert.match((await expectUserError(() => readBundle(dir, machine), 'BAD_BUNDLE')).message, /kernel ABI \d+, this veltair calls ABI \d+/);
});

test('paths leaving the bundle are rejected: .., absolute, and symlinks pointing out', async () => {
  const dotdot = fresh((m) => ({ ...m, files: { ...m.files, '../secret': { sha256: 'a'.repeat(64), bytes: 1 } } }));
  await expectUserError(() => readBundle(dotdot, machine), 'BAD_BUNDLE');
  const abs = fresh((m) => ({ ...m, files: { ...m.files, '/etc/passwd': { sha256: 'a'.repeat(64), bytes: 1 } } }));
  await expectUserError(() => readBundle(abs, machine), 'BAD_BUNDLE');
  // a symlink inside the bundle that resolves outside it
  const outside = join(root, 'outside.bin');
  writeFileSync(outside, readFileSync(join(fresh(), 'weights', 'params.bin')));
  const link = fresh();
  unlinkSync(join(link, 'weights', 'params.bin'));
  symlinkSync(outside, join(link, 'weights', 'params.bin'));
  const e = await expectUserError(() => readBundle(link, machine), 'BAD_BUNDLE');
  assert.match(e.message, /weights\/params\.bin leads outside the bundle directory/);
  // a blob reference past the end of its file
  const past = fresh((m) => ({ ...m, layers: [{ ...m.layers[0]!, params: { B: { ...m.layers[0]!.params['B']!, offset: 64 } } }] }));
  assert.match((await expectUserError(() => readBundle(past, machine), 'BAD_BUNDLE')).message, /lies outside weights\/params\.bin/);
});

test('a bundle needing AVX-512 on a machine without it is TARGET_MISMATCH, not a SIGILL later', async () => {
  const dir = fresh();
  const e = await expectUserError(() => readBundle(dir, { cpuFlags: new Set(['avx2', 'fma']), cpuModel: 'Old CPU' }), 'TARGET_MISMATCH');
  assert.match(e.message, /need avx512f, which this CPU lacks \(built on Test CPU\)/);
  const other = await readBundle(dir, { cpuFlags: machine.cpuFlags, cpuModel: 'Other CPU' });
  assert.equal(other.warnings.length, 1, 'another CPU model with the same ISA loads, with a warning');
});

test('not a bundle, bad JSON, schema violations: one BAD_BUNDLE line each', async () => {
  await expectUserError(() => readBundle(join(root, 'nope'), machine), 'FILE_NOT_FOUND');
  const empty = mkdtempSync(join(root, 'empty-'));
  assert.match((await expectUserError(() => readBundle(empty, machine), 'BAD_BUNDLE')).message, /has no manifest\.json/);
  const broken = fresh();
  writeFileSync(join(broken, 'manifest.json'), '{"formatVersion": "1.0.0", ');
  assert.match((await expectUserError(() => readBundle(broken, machine), 'BAD_BUNDLE')).message, /not valid JSON/);
  const invalid = fresh((m) => ({ ...m, layers: [{ ...m.layers[0]!, versions: 'none' as never }] }));
  assert.match(
    (await expectUserError(() => readBundle(invalid, machine), 'BAD_BUNDLE')).message,
    /does not match the bundle schema: \/layers\/0\/versions/,
  );
});
