/**
 * The session API on a hand-written bundle (one Add layer with a constant, no kernels, so no
 * compile): metadata, run / runSync, feed validation (each refusal names the input and what was
 * expected), the version API's argument checks, close. Also the .npy / TensorProto readers and
 * writer, and the param-decoding regression behind BERT's wrong biases.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import onnxProto from 'onnx-proto';
import { loadBundle } from '../src/index.js';
import { decodeNpy, encodeNpy } from '../src/runtime/io-npy.js';
import { decodePb } from '../src/runtime/io-pb.js';
import { paramFloats } from '../src/runtime/runtime-layer.js';
import { VeltairError } from '../src/errors.js';
import { writeFakeBundle } from './bundle-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-session-'));
after(() => rmSync(root, { recursive: true, force: true }));
// The fake bundle has no kernels: any machine may run it.
const bundle = join(root, 'add.bundle');
writeFakeBundle(bundle, (m) => ({ ...m, target: { ...m.target, requiredIsa: [] } }));

function userErr(code: string, pattern: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof VeltairError, `a VeltairError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.exitCode, 1);
    assert.match(e.message, pattern);
    return true;
  };
}

test('a loaded session describes its inputs and outputs and runs (async and sync) to the right values', async () => {
  const s = await loadBundle(bundle);
  try {
    assert.deepEqual(s.inputs, [{ name: 'x', dtype: 'float32', shape: [1, 4] }]);
    assert.deepEqual(s.outputs, [{ name: 'y', dtype: 'float32', shape: [1, 4] }]);
    assert.deepEqual(s.levels, [0]);
    assert.deepEqual(s.tunableLayers, []);
    const out = await s.run({ x: new Float32Array([10, 20, 30, 40]) });
    assert.deepEqual(Object.keys(out), ['y']);
    assert.equal(out['y']!.dtype, 'float32');
    assert.deepEqual(out['y']!.shape, [1, 4]);
    assert.deepEqual(Array.from(out['y']!.data as Float32Array), [11, 22, 33, 44]);
    const again = s.runSync({ x: { data: new Float32Array([1, 1, 1, 1]), shape: [1, 4], dtype: 'float32' } });
    assert.deepEqual(Array.from(again['y']!.data as Float32Array), [2, 3, 4, 5]);
    assert.notEqual(again['y']!.data, out['y']!.data, 'every run returns fresh arrays');
  } finally {
    s.close();
  }
});

test('feeds are checked before native code: unknown, missing, wrong dtype, wrong shape, wrong size', async () => {
  const s = await loadBundle(bundle);
  try {
    const x = new Float32Array(4);
    assert.throws(() => s.runSync({ x, z: x }), userErr('BAD_INPUT', /no input "z"; its inputs are "x" \(float32 \[1, 4\]\)/));
    assert.throws(() => s.runSync({}), userErr('BAD_INPUT', /input "x" \(float32 \[1, 4\]\) is missing/));
    assert.throws(
      () => s.runSync({ x: new Float64Array(4) }),
      userErr('BAD_INPUT', /input "x" is a Float64Array; expected float32 \[1, 4\] as a Float32Array/),
    );
    assert.throws(
      () => s.runSync({ x: { data: new Int32Array(4), dtype: 'int32' } }),
      userErr('BAD_INPUT', /input "x" is int32; expected float32 \[1, 4\]/),
    );
    assert.throws(
      () => s.runSync({ x: { data: x, shape: [4, 1] } }),
      userErr('BAD_INPUT', /input "x" has shape \[4, 1\]; expected float32 \[1, 4\]/),
    );
    assert.throws(
      () => s.runSync({ x: new Float32Array(5) }),
      userErr('BAD_INPUT', /input "x" has 5 elements; expected float32 \[1, 4\] = 4 elements/),
    );
    assert.throws(() => s.runSync({ x: [1, 2, 3, 4] as unknown as Float32Array }), userErr('BAD_INPUT', /is an Array; expected/));
    await assert.rejects(s.run({}), userErr('BAD_INPUT', /missing/));
  } finally {
    s.close();
  }
});

test('the version API checks its arguments; a closed session refuses to run', async () => {
  await assert.rejects(loadBundle(bundle, { level: 7 }), userErr('BAD_ARGUMENT', /level "7" is not an integer from 0 to 4/));
  await assert.rejects(loadBundle(bundle, { threads: 0 }), userErr('BAD_ARGUMENT', /thread count "0"/));
  const s = await loadBundle(bundle, { level: 3 });
  assert.equal(s.level, 3);
  assert.deepEqual(s.versionsForLevel(0), []);
  assert.deepEqual(s.setLevel(1), []);
  assert.equal(s.level, 1);
  assert.throws(() => s.useVersions([0]), userErr('BAD_ARGUMENT', /one entry per tunable layer \(0\); got 1/));
  s.useVersions([]);
  assert.equal(s.level, undefined);
  s.setThreads(2);
  assert.deepEqual(Array.from(s.runSync({ x: new Float32Array(4) })['y']!.data as Float32Array), [1, 2, 3, 4]);
  s.close();
  s.close();
  assert.throws(() => s.runSync({ x: new Float32Array(4) }), userErr('BAD_ARGUMENT', /is closed/));
  await assert.rejects(loadBundle(join(root, 'nope')), userErr('FILE_NOT_FOUND', /bundle .*nope does not exist/));
});

test("paramFloats reads a param that is a Buffer view into a larger blob file (not the file's first bytes)", () => {
  const file = Buffer.alloc(64);
  new Float32Array(file.buffer, file.byteOffset, 16).set(Array.from({ length: 16 }, (_, i) => i));
  const bias = file.subarray(36, 48); // floats 9, 10, 11
  assert.deepEqual(Array.from(paramFloats({ dtype: 'float32', dims: [3], bytes: bias })), [9, 10, 11]);
  const odd = Buffer.concat([Buffer.alloc(3), Buffer.from(new Float32Array([1.5, -2]).buffer)]).subarray(3);
  assert.deepEqual(Array.from(paramFloats({ dtype: 'float32', dims: [2], bytes: odd })), [1.5, -2]);
});

/** A .npy file with any header, as numpy (or something claiming to be numpy) would write it. */
function npy(dict: string, data: Uint8Array, major = 1): Uint8Array {
  const prefix = major === 1 ? 10 : 12;
  const header = dict + ' '.repeat((64 - ((prefix + dict.length + 1) % 64)) % 64) + '\n';
  const out = new Uint8Array(prefix + header.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, major, 0]);
  const dv = new DataView(out.buffer);
  if (major === 1) dv.setUint16(8, header.length, true);
  else dv.setUint32(8, header.length, true);
  out.set(new TextEncoder().encode(header), prefix);
  out.set(data, prefix + header.length);
  return out;
}
const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

test('.npy: round trips, format versions 1 to 3, and every refusal names the file and what is supported', () => {
  const f = { dtype: 'float32' as const, shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) };
  const enc = encodeNpy(f);
  const headerEnd = enc.indexOf(0x0a) + 1;
  assert.equal(headerEnd % 64, 0, 'numpy pads the header to 64 bytes');
  assert.deepEqual(decodeNpy(enc, 'a.npy'), f);
  for (const t of [
    { dtype: 'int64' as const, shape: [3], data: BigInt64Array.from([-1n, 2n ** 40n, 3n]) },
    { dtype: 'bool' as const, shape: [], data: Uint8Array.from([1]) },
    { dtype: 'float64' as const, shape: [1, 0], data: new Float64Array(0) },
  ])
    assert.deepEqual(decodeNpy(encodeNpy(t), 'b.npy'), t);
  const four = bytesOf(Float32Array.from([1, 2, 3, 4]));
  for (const major of [2, 3]) {
    const t = decodeNpy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", four, major), 'v.npy');
    assert.deepEqual([t.dtype, t.shape, Array.from(t.data as Float32Array)], ['float32', [2, 2], [1, 2, 3, 4]]);
  }
  // Fortran order is harmless when at most one dimension exceeds 1.
  assert.deepEqual(decodeNpy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }", four), 'f1.npy').shape, [4]);

  const refuse = (bytes: Uint8Array, pattern: RegExp) => assert.throws(() => decodeNpy(bytes, 'in.npy'), userErr('BAD_INPUT', pattern));
  refuse(
    npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four),
    /^in\.npy: the array is in Fortran \(column-major\) order; only little-endian float32/,
  );
  refuse(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", four), /^in\.npy: big-endian data \(">f4"\) is not supported/);
  refuse(
    npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four),
    /^in\.npy: dtype "<c8" is not supported; only little-endian float32, float64, int64/,
  );
  refuse(npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", four), /dtype "\|O" is not supported/);
  refuse(npy("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", four), /dtype "<U3" is not supported/);
  refuse(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", four), /structured \(record\) dtypes are not supported/);
  refuse(
    npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four),
    /holds 16 bytes of data, but shape \(2, 3\) of float32 needs 24/,
  );
  refuse(enc.subarray(0, 9), /is not a \.npy file/);
  refuse(new TextEncoder().encode('P5 not numpy at all'), /is not a \.npy file/);
  refuse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four, 4), /format version 4\.0 is not supported/);
});

test('TensorProto .pb: dtype, shape and exact int64 come through; garbage is refused naming the file', () => {
  const { onnx } = onnxProto;
  const f = onnx.TensorProto.encode({ name: 'x', dataType: 1, dims: [2, 2], floatData: [1, 2, 3, 4] }).finish();
  const t = decodePb(f, 'x.pb');
  assert.deepEqual([t.name, t.dtype, t.shape, Array.from(t.data as Float32Array)], ['x', 'float32', [2, 2], [1, 2, 3, 4]]);
  const big = 2n ** 60n + 3n;
  const raw = onnx.TensorProto.encode({ name: 'ids', dataType: 7, dims: [2], rawData: bytesOf(BigInt64Array.from([big, -5n])) }).finish();
  assert.deepEqual(Array.from(decodePb(raw, 'ids.pb').data as BigInt64Array), [big, -5n], 'int64 beyond 2^53 is exact');
  const typed = onnx.TensorProto.encode({ name: 'ids', dataType: 7, dims: [2], int64Data: [7, -9] }).finish();
  assert.deepEqual(Array.from(decodePb(typed, 'ids.pb').data as BigInt64Array), [7n, -9n]);
  const str = onnx.TensorProto.encode({ name: 's', dataType: 8, dims: [1], stringData: [new Uint8Array([65])] }).finish();
  assert.throws(() => decodePb(str, 's.pb'), userErr('BAD_INPUT', /^s\.pb: holds string tensor "s"/));
  assert.throws(() => decodePb(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x0f]), 'junk.pb'), userErr('BAD_INPUT', /^junk\.pb: /));
  const short = onnx.TensorProto.encode({ name: 'x', dataType: 1, dims: [3], floatData: [1] }).finish();
  assert.throws(() => decodePb(short, 'short.pb'), userErr('BAD_INPUT', /^short\.pb: tensor "x": holds 1 values, expected 3/));
});
