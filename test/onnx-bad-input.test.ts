/** Every bad input fails with one clear line naming the culprit, and a hint. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import onnxProto from 'onnx-proto';
import { loadModel, parseInputShape } from '../src/onnx/load.js';
import { encodeModel } from '../src/onnx/encode.js';
import { convReluSpec, expectUserError, f32, tempDir, writeModel } from './onnx-test-models.js';

const { onnx } = onnxProto;

test('a path that does not exist is FILE_NOT_FOUND naming it', async () => {
  const missing = path.join(tempDir(), 'nope.onnx');
  const e = await expectUserError(() => loadModel(missing), 'FILE_NOT_FOUND');
  assert.match(e.message, /nope\.onnx/);
});

test('a directory is FILE_UNREADABLE naming it', async () => {
  const dir = tempDir();
  const e = await expectUserError(() => loadModel(dir), 'FILE_UNREADABLE');
  assert.ok(e.message.includes(path.basename(dir)) && e.message.includes('directory'));
});

test('an empty file is NOT_ONNX', async () => {
  const p = path.join(tempDir(), 'empty.onnx');
  fs.writeFileSync(p, new Uint8Array());
  const e = await expectUserError(() => loadModel(p), 'NOT_ONNX');
  assert.match(e.message, /empty\.onnx.*empty/);
});

test('a truncated ONNX file is NOT_ONNX', async () => {
  const good = encodeModel(convReluSpec());
  const p = path.join(tempDir(), 'cut.onnx');
  fs.writeFileSync(p, good.subarray(0, Math.floor(good.length * 0.6)));
  const e = await expectUserError(() => loadModel(p), 'NOT_ONNX');
  assert.match(e.message, /cut\.onnx.*not an ONNX model/);
});

test('random bytes are NOT_ONNX', async () => {
  let seed = 12345;
  const bytes = Uint8Array.from({ length: 4096 }, () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed >>> 24;
  });
  const p = path.join(tempDir(), 'noise.onnx');
  fs.writeFileSync(p, bytes);
  const e = await expectUserError(() => loadModel(p), 'NOT_ONNX');
  assert.match(e.message, /noise\.onnx/);
  // A text file is not ONNX either.
  const txt = path.join(tempDir(), 'readme.onnx');
  fs.writeFileSync(txt, 'this is not a model\n'.repeat(20));
  await expectUserError(() => loadModel(txt), 'NOT_ONNX');
});

test('unsupported operators are all listed, with node names, in one message', async () => {
  const p = writeModel({
    inputs: [
      { name: 'boxes', dtype: 'float32', shape: [1, 10, 4] },
      { name: 'scores', dtype: 'float32', shape: [1, 1, 10] },
    ],
    outputs: [
      { name: 'sel', dtype: 'int64' },
      { name: 'vals', dtype: 'float32' },
      { name: 'y', dtype: 'float32' },
    ],
    initializers: [['k', { dtype: 'int64', dims: [1], data: Float64Array.from([3]) }]],
    nodes: [
      { op: 'NonMaxSuppression', name: 'nms_1', inputs: ['boxes', 'scores'], outputs: ['sel'] },
      { op: 'Unique', name: 'uniq', inputs: ['scores'], outputs: ['vals'] },
      { op: 'FusedThing', domain: 'com.example', name: 'custom', inputs: ['scores'], outputs: ['y'] },
    ],
  });
  const e = await expectUserError(() => loadModel(p), 'UNSUPPORTED_OPS');
  assert.match(e.message, /NonMaxSuppression \(node "nms_1"\)/);
  assert.match(e.message, /Unique \(node "uniq"\)/);
  assert.match(e.message, /com\.example\.FusedThing \(node "custom"\)/);
});

test('a missing initializer is MISSING_INPUT naming the node and the input', async () => {
  const spec = convReluSpec();
  const p = writeModel({ ...spec, initializers: [['b', f32([8])]] });
  const e = await expectUserError(() => loadModel(p), 'MISSING_INPUT');
  assert.match(e.message, /"conv1".*"w"/);
});

test('a cyclic graph is CYCLIC_GRAPH naming the nodes on the cycle', async () => {
  const p = writeModel({
    inputs: [{ name: 'x', dtype: 'float32', shape: [1, 4] }],
    outputs: [{ name: 'out', dtype: 'float32' }],
    initializers: [],
    nodes: [
      { op: 'Add', name: 'add_a', inputs: ['x', 'b_out'], outputs: ['a_out'] },
      { op: 'Relu', name: 'relu_b', inputs: ['a_out'], outputs: ['b_out'] },
      { op: 'Relu', name: 'tail', inputs: ['b_out'], outputs: ['out'] },
    ],
  });
  const e = await expectUserError(() => loadModel(p), 'CYCLIC_GRAPH');
  assert.match(e.message, /"add_a"/);
  assert.match(e.message, /"relu_b"/);
  assert.doesNotMatch(e.message, /"tail"/);
});

test('a symbolic dimension other than the batch, left unpinned, is SYMBOLIC_DIM with an --input-shape hint', async () => {
  const p = writeModel(convReluSpec({ inputs: [{ name: 'input', dtype: 'float32', shape: ['batch', 3, 'height', 'width'] }] }));
  const e = await expectUserError(() => loadModel(p), 'SYMBOLIC_DIM');
  assert.match(e.message, /"height".*"input"/);
  assert.match(e.hint, /--input-shape input=/);
  const pinned = await loadModel(p, { inputShapes: new Map([['input', [2, 3, 16, 16]]]) });
  assert.deepEqual(pinned.outputs[0]!.shape, [2, 8, 16, 16]);
});

test('a pinned shape that contradicts a fixed dim is SHAPE_MISMATCH; an unknown input name is BAD_ARGUMENT listing the names', async () => {
  const p = writeModel(convReluSpec());
  const e = await expectUserError(() => loadModel(p, { inputShapes: new Map([['input', [1, 4, 8, 8]]]) }), 'SHAPE_MISMATCH');
  assert.match(e.message, /\[1, 3, 8, 8\].*\[1, 4, 8, 8\]/);
  const b = await expectUserError(() => loadModel(p, { inputShapes: new Map([['image', [1, 3, 8, 8]]]) }), 'BAD_ARGUMENT');
  assert.match(b.message, /"image"/);
  assert.match(b.hint, /"input"/);
});

test('a malformed --input-shape value is BAD_ARGUMENT', async () => {
  await expectUserError(() => parseInputShape('input'), 'BAD_ARGUMENT');
  await expectUserError(() => parseInputShape('input=1x3xHx224'), 'BAD_ARGUMENT');
  assert.deepEqual(parseInputShape('input=1x3x224x224'), { name: 'input', shape: [1, 3, 224, 224] });
});

test('a conv whose input channels do not match its weight is SHAPE_MISMATCH naming the node', async () => {
  const p = writeModel(
    convReluSpec({
      initializers: [
        ['w', f32([8, 4, 3, 3])],
        ['b', f32([8])],
      ],
    }),
  );
  const e = await expectUserError(() => loadModel(p), 'SHAPE_MISMATCH');
  assert.match(e.message, /"conv1".*3 channels/);
  const grouped = writeModel(
    convReluSpec({
      nodes: [{ op: 'Conv', name: 'gconv', inputs: ['input', 'w'], outputs: ['output'], attrs: { group: 2 } }],
      initializers: [['w', f32([8, 1, 3, 3])]],
    }),
  );
  const g = await expectUserError(() => loadModel(grouped), 'SHAPE_MISMATCH');
  assert.match(g.message, /"gconv".*group=2/);
});

test('shapes that cannot broadcast are SHAPE_MISMATCH naming the node and both shapes', async () => {
  const p = writeModel({
    inputs: [
      { name: 'a', dtype: 'float32', shape: [2, 3] },
      { name: 'b', dtype: 'float32', shape: [4, 3] },
    ],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [],
    nodes: [{ op: 'Add', name: 'residual', inputs: ['a', 'b'], outputs: ['y'] }],
  });
  const e = await expectUserError(() => loadModel(p), 'SHAPE_MISMATCH');
  assert.match(e.message, /"residual".*\[2, 3\].*\[4, 3\]/);
});

test('absurd dimensions are DIM_OVERFLOW naming the value, not a silent overflow', async () => {
  const p = writeModel({
    inputs: [{ name: 'huge', dtype: 'float32', shape: [1e9, 1e9, 1e9] }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [],
    nodes: [{ op: 'Relu', inputs: ['huge'], outputs: ['y'] }],
  });
  const e = await expectUserError(() => loadModel(p), 'DIM_OVERFLOW');
  assert.match(e.message, /"huge"/);
  // Each operand fits, but the product does not.
  const q = writeModel({
    inputs: [
      { name: 'a', dtype: 'float32', shape: [1e6, 1, 1] },
      { name: 'b', dtype: 'float32', shape: [1e6, 1e6] },
    ],
    outputs: [{ name: 'sum', dtype: 'float32' }],
    initializers: [],
    nodes: [{ op: 'Add', inputs: ['a', 'b'], outputs: ['sum'] }],
  });
  const f = await expectUserError(() => loadModel(q), 'DIM_OVERFLOW');
  assert.match(f.message, /"sum"/);
});

function withExternalWeight(location: string): Uint8Array {
  const proto = onnx.ModelProto.decode(encodeModel(convReluSpec()));
  const w = proto.graph!.initializer!.find((t) => t.name === 'w')!;
  w.rawData = new Uint8Array();
  w.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
  w.externalData = [
    { key: 'location', value: location },
    { key: 'offset', value: '0' },
    { key: 'length', value: String(8 * 3 * 3 * 3 * 4) },
  ];
  return onnx.ModelProto.encode(proto).finish();
}

test('external data that escapes the model folder is EXTERNAL_DATA naming the tensor and path', async () => {
  const root = tempDir();
  const modelDir = path.join(root, 'model');
  fs.mkdirSync(modelDir);
  fs.writeFileSync(path.join(root, 'secret.bin'), new Uint8Array(8 * 27 * 4));
  const escaping = path.join(modelDir, 'escape.onnx');
  fs.writeFileSync(escaping, withExternalWeight('../secret.bin'));
  const e = await expectUserError(() => loadModel(escaping), 'EXTERNAL_DATA');
  assert.match(e.message, /"w".*"\.\.\/secret\.bin".*escapes/);
  const absolute = path.join(modelDir, 'absolute.onnx');
  fs.writeFileSync(absolute, withExternalWeight(path.join(root, 'secret.bin')));
  const a = await expectUserError(() => loadModel(absolute), 'EXTERNAL_DATA');
  assert.match(a.message, /"w".*absolute/);
  // A link inside the folder that points out of it is refused too.
  fs.symlinkSync(path.join(root, 'secret.bin'), path.join(modelDir, 'link.bin'));
  const linked = path.join(modelDir, 'linked.onnx');
  fs.writeFileSync(linked, withExternalWeight('link.bin'));
  await expectUserError(() => loadModel(linked), 'EXTERNAL_DATA');
});

test('external data inside the model folder loads', async () => {
  const dir = tempDir();
  const weights = Float32Array.from({ length: 8 * 27 }, (_, i) => i);
  fs.writeFileSync(path.join(dir, 'weights.bin'), new Uint8Array(weights.buffer));
  const p = path.join(dir, 'ok.onnx');
  fs.writeFileSync(p, withExternalWeight('weights.bin'));
  const m = await loadModel(p);
  assert.deepEqual(Array.from(m.constants.get('w')!.data as Float32Array).slice(0, 4), [0, 1, 2, 3]);
  const missing = path.join(dir, 'missing.onnx');
  fs.writeFileSync(missing, withExternalWeight('absent.bin'));
  const e = await expectUserError(() => loadModel(missing), 'EXTERNAL_DATA');
  assert.match(e.message, /"absent\.bin".*does not exist/);
});
