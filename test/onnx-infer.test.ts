/** Focused shape-inference and folding rules that are easy to get wrong. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import onnxProto from 'onnx-proto';
import { loadModel } from '../src/onnx/load.js';
import { encodeModel, type ModelSpec, type NodeSpec } from '../src/onnx/encode.js';
import type { InferredModel, Tensor } from '../src/onnx/model.js';
import { f32, i64, tempDir, writeModel } from './onnx-test-models.js';

const { onnx } = onnxProto;

async function single(node: NodeSpec, inputShape: readonly number[], inits: [string, Tensor][] = [], opset = 17): Promise<InferredModel> {
  return loadModel(
    writeModel({
      opset,
      inputs: [{ name: 'x', dtype: 'float32', shape: inputShape }],
      outputs: node.outputs.map((name) => ({ name, dtype: 'float32' as const })),
      initializers: inits,
      nodes: [node],
    }),
  );
}

const outShape = (m: InferredModel, i = 0): readonly number[] => m.outputs[i]!.shape;

test('Conv auto_pad SAME_UPPER/SAME_LOWER with stride 2 gives ceil(in/stride); VALID gives no padding', async () => {
  const w = f32([4, 3, 3, 3]);
  for (const autoPad of ['SAME_UPPER', 'SAME_LOWER']) {
    const m = await single(
      { op: 'Conv', inputs: ['x', 'w'], outputs: ['y'], attrs: { auto_pad: autoPad, strides: [2, 2] } },
      [1, 3, 7, 7],
      [['w', w]],
    );
    assert.deepEqual(outShape(m), [1, 4, 4, 4]);
  }
  const valid = await single(
    { op: 'Conv', inputs: ['x', 'w'], outputs: ['y'], attrs: { auto_pad: 'VALID', strides: [2, 2] } },
    [1, 3, 7, 7],
    [['w', w]],
  );
  assert.deepEqual(outShape(valid), [1, 4, 3, 3]);
  const dilated = await single(
    { op: 'Conv', inputs: ['x', 'w'], outputs: ['y'], attrs: { dilations: [2, 2], pads: [1, 1, 1, 1] } },
    [1, 3, 7, 7],
    [['w', w]],
  );
  assert.deepEqual(outShape(dilated), [1, 4, 5, 5]);
  const depthwise = await single(
    { op: 'Conv', inputs: ['x', 'dw'], outputs: ['y'], attrs: { group: 3, pads: [1, 1, 1, 1] } },
    [1, 3, 7, 7],
    [['dw', f32([3, 1, 3, 3])]],
  );
  assert.deepEqual(outShape(depthwise), [1, 3, 7, 7]);
});

test('MaxPool ceil_mode rounds up, but never starts a window in the end padding', async () => {
  const floor = await single(
    { op: 'MaxPool', inputs: ['x'], outputs: ['y'], attrs: { kernel_shape: [3, 3], strides: [2, 2] } },
    [1, 1, 6, 6],
  );
  assert.deepEqual(outShape(floor), [1, 1, 2, 2]);
  const ceil = await single(
    { op: 'MaxPool', inputs: ['x'], outputs: ['y'], attrs: { kernel_shape: [3, 3], strides: [2, 2], ceil_mode: 1 } },
    [1, 1, 6, 6],
  );
  assert.deepEqual(outShape(ceil), [1, 1, 3, 3]);
  // padded 7, k2 s2: ceil((7-2)/2)+1 = 4, but window 4 would start at 6 ≥ 5 + 1 (in the end pad): 3.
  const edge = await single(
    { op: 'MaxPool', inputs: ['x'], outputs: ['y'], attrs: { kernel_shape: [2, 2], strides: [2, 2], pads: [1, 1, 1, 1], ceil_mode: 1 } },
    [1, 1, 5, 5],
  );
  assert.deepEqual(outShape(edge), [1, 1, 3, 3]);
  const avg = await single(
    { op: 'AveragePool', inputs: ['x'], outputs: ['y'], attrs: { kernel_shape: [3, 3], strides: [2, 2], auto_pad: 'SAME_UPPER' } },
    [1, 1, 7, 7],
  );
  assert.deepEqual(outShape(avg), [1, 1, 4, 4]);
});

test('Reshape copies 0 dims, infers -1, and honours allowzero', async () => {
  const m = await single({ op: 'Reshape', inputs: ['x', 's'], outputs: ['y'] }, [2, 3, 4], [['s', i64([0, -1])]]);
  assert.deepEqual(outShape(m), [2, 12]);
  const m2 = await single({ op: 'Reshape', inputs: ['x', 's'], outputs: ['y'] }, [2, 3, 4], [['s', i64([-1, 0, 2])]]);
  assert.deepEqual(outShape(m2), [4, 3, 2]);
  const zero = await single(
    { op: 'Reshape', inputs: ['x', 's'], outputs: ['y'], attrs: { allowzero: 1 } },
    [0, 3, 4],
    [['s', i64([3, 4, 0])]],
  );
  assert.deepEqual(outShape(zero), [3, 4, 0]);
  await assert.rejects(single({ op: 'Reshape', inputs: ['x', 's'], outputs: ['y'] }, [2, 3, 4], [['s', i64([5, -1])]]), /cannot reshape/);
});

/** Write INT64_MAX / INT64_MIN bit-exactly (a double cannot carry them through encode.ts). */
function sliceModelWithInt64(file: string, starts: bigint[], ends: bigint[], axes: bigint[], steps: bigint[]): void {
  const spec: ModelSpec = {
    inputs: [{ name: 'x', dtype: 'float32', shape: [10, 5] }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [
      ['starts', i64([0])],
      ['ends', i64([0])],
      ['axes', i64([0])],
      ['steps', i64([0])],
    ],
    nodes: [{ op: 'Slice', inputs: ['x', 'starts', 'ends', 'axes', 'steps'], outputs: ['y'] }],
  };
  const proto = onnx.ModelProto.decode(encodeModel(spec));
  const values: Record<string, bigint[]> = { starts, ends, axes, steps };
  for (const t of proto.graph!.initializer!) {
    const v = values[t.name!]!;
    t.dims = [v.length];
    t.rawData = new Uint8Array(BigInt64Array.from(v).buffer);
  }
  fs.writeFileSync(file, onnx.ModelProto.encode(proto).finish());
}

test('Slice clamps INT64_MAX/INT64_MIN ends and handles negative steps', async () => {
  const dir = tempDir();
  const MAX = 9223372036854775807n;
  const MIN = -9223372036854775808n;
  const cases: [bigint[], bigint[], bigint[], bigint[], number[]][] = [
    [[2n], [MAX], [0n], [1n], [8, 5]],
    [[-1n], [MIN], [0n], [-1n], [10, 5]],
    [
      [-1n, 4n],
      [MIN, 0n],
      [0n, 1n],
      [-3n, -2n],
      [4, 2],
    ],
    [[20n], [MAX], [1n], [1n], [10, 0]],
    [[1n], [-1n], [-1n], [1n], [10, 3]],
  ];
  for (const [i, [s, e, a, st, want]] of cases.entries()) {
    const file = path.join(dir, `slice${i}.onnx`);
    sliceModelWithInt64(file, s, e, a, st);
    const m = await loadModel(file);
    assert.deepEqual(outShape(m), want, `case ${i}`);
  }
});

test('a PyTorch-style shape sub-graph (Shape→Gather→Unsqueeze→Concat→Reshape) folds away completely', async () => {
  const p = writeModel({
    opset: 13,
    inputs: [{ name: 'x', dtype: 'float32', shape: ['batch_size', 3, 4, 4] }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [
      ['zero', i64([0], [])],
      ['ax0', i64([0])],
      ['minus1', i64([-1])],
    ],
    nodes: [
      { op: 'Relu', inputs: ['x'], outputs: ['r'] },
      { op: 'Shape', inputs: ['r'], outputs: ['shape'] },
      { op: 'Gather', inputs: ['shape', 'zero'], outputs: ['n'], attrs: { axis: 0 } },
      { op: 'Unsqueeze', inputs: ['n', 'ax0'], outputs: ['n1'] },
      { op: 'Concat', inputs: ['n1', 'minus1'], outputs: ['target'], attrs: { axis: 0 } },
      { op: 'Reshape', inputs: ['r', 'target'], outputs: ['flat'] },
      { op: 'Flatten', inputs: ['flat'], outputs: ['y'] },
    ].reverse(), // listed out of order on purpose: the front end sorts topologically
  });
  const m = await loadModel(p);
  assert.deepEqual(
    m.nodes.map((n) => n.opType),
    ['Relu', 'Reshape', 'Flatten'],
  );
  assert.deepEqual(Array.from(m.constants.get('target')!.data as Float64Array), [1, -1]);
  assert.deepEqual(outShape(m), [1, 48]);
  const pinned = await loadModel(p, { inputShapes: new Map([['x', [5, 3, 4, 4]]]) });
  assert.deepEqual(outShape(pinned), [5, 48]);
});

test('Split: attribute in opset 11, input in 13, num_outputs in 18', async () => {
  const m11 = await single({ op: 'Split', inputs: ['x'], outputs: ['a', 'b'], attrs: { axis: 1, split: [2, 4] } }, [3, 6], [], 11);
  assert.deepEqual(
    [outShape(m11, 0), outShape(m11, 1)],
    [
      [3, 2],
      [3, 4],
    ],
  );
  const m13 = await single(
    { op: 'Split', inputs: ['x', 'sizes'], outputs: ['a', 'b'], attrs: { axis: 1 } },
    [3, 6],
    [['sizes', i64([1, 5])]],
    13,
  );
  assert.deepEqual(
    [outShape(m13, 0), outShape(m13, 1)],
    [
      [3, 1],
      [3, 5],
    ],
  );
  const even = await single({ op: 'Split', inputs: ['x'], outputs: ['a', 'b', 'c'], attrs: { axis: 1 } }, [3, 6], [], 13);
  assert.deepEqual(
    even.outputs.map((o) => o.shape),
    [
      [3, 2],
      [3, 2],
      [3, 2],
    ],
  );
  const m18 = await single(
    { op: 'Split', inputs: ['x'], outputs: ['a', 'b', 'c', 'd'], attrs: { axis: 0, num_outputs: 4 } },
    [10, 2],
    [],
    18,
  );
  assert.deepEqual(
    m18.outputs.map((o) => o.shape),
    [
      [3, 2],
      [3, 2],
      [3, 2],
      [1, 2],
    ],
  );
});

test('Squeeze/Unsqueeze: axes attribute in opset 11, axes input in opset 13', async () => {
  const s11 = await single({ op: 'Squeeze', inputs: ['x'], outputs: ['y'], attrs: { axes: [0, 2] } }, [1, 3, 1, 4], [], 11);
  assert.deepEqual(outShape(s11), [3, 4]);
  const s13 = await single({ op: 'Squeeze', inputs: ['x', 'axes'], outputs: ['y'] }, [1, 3, 1, 4], [['axes', i64([-2])]], 13);
  assert.deepEqual(outShape(s13), [1, 3, 4]);
  const all = await single({ op: 'Squeeze', inputs: ['x'], outputs: ['y'] }, [1, 3, 1, 4], [], 13);
  assert.deepEqual(outShape(all), [3, 4]);
  const u11 = await single({ op: 'Unsqueeze', inputs: ['x'], outputs: ['y'], attrs: { axes: [0, 3] } }, [3, 4], [], 11);
  assert.deepEqual(outShape(u11), [1, 3, 4, 1]);
  const u13 = await single({ op: 'Unsqueeze', inputs: ['x', 'axes'], outputs: ['y'] }, [3, 4], [['axes', i64([-1])]], 13);
  assert.deepEqual(outShape(u13), [3, 4, 1]);
});

test('MatMul follows numpy: 1-D operands and broadcast batch dims; Gemm honours transB', async () => {
  const mm = (a: number[], b: number[]) =>
    loadModel(
      writeModel({
        inputs: [
          { name: 'a', dtype: 'float32', shape: a },
          { name: 'b', dtype: 'float32', shape: b },
        ],
        outputs: [{ name: 'y', dtype: 'float32' }],
        initializers: [],
        nodes: [{ op: 'MatMul', inputs: ['a', 'b'], outputs: ['y'] }],
      }),
    );
  assert.deepEqual(outShape(await mm([4], [4])), []);
  assert.deepEqual(outShape(await mm([4], [2, 4, 5])), [2, 5]);
  assert.deepEqual(outShape(await mm([2, 1, 3, 4], [5, 4, 6])), [2, 5, 3, 6]);
  assert.deepEqual(outShape(await mm([3, 4], [4])), [3]);
  await assert.rejects(mm([3, 4], [5, 6]), /inner dimensions/);
  const g = await single(
    { op: 'Gemm', inputs: ['x', 'w', 'c'], outputs: ['y'], attrs: { transB: 1 } },
    [2, 8],
    [
      ['w', f32([16, 8])],
      ['c', f32([16])],
    ],
  );
  assert.deepEqual(outShape(g), [2, 16]);
});

test('batch-only symbolic inputs default to 1; a pinned name binds the same symbol on other inputs', async () => {
  const p = writeModel({
    inputs: [
      { name: 'ids', dtype: 'float32', shape: ['batch', 'seq'] },
      { name: 'mask', dtype: 'float32', shape: ['batch', 'seq'] },
    ],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [],
    nodes: [{ op: 'Mul', inputs: ['ids', 'mask'], outputs: ['y'] }],
  });
  const m = await loadModel(p, { inputShapes: new Map([['ids', [1, 128]]]) });
  assert.deepEqual(
    m.inputs.map((i) => i.shape),
    [
      [1, 128],
      [1, 128],
    ],
  );
  const q = writeModel({
    inputs: [{ name: 'x', dtype: 'float32', shape: ['N', 3, 8, 8] }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [],
    nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }],
  });
  assert.deepEqual((await loadModel(q)).inputs[0]!.shape, [1, 3, 8, 8]);
});

test('weight-only sub-graphs fold: Transpose of an initializer becomes a constant with the right values', async () => {
  const w: Tensor = { dtype: 'float32', dims: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) };
  const p = writeModel({
    inputs: [{ name: 'x', dtype: 'float32', shape: [4, 3] }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [
      ['w', w],
      ['scale', f32([1], 2)],
    ],
    nodes: [
      { op: 'Transpose', inputs: ['w'], outputs: ['wt'], attrs: { perm: [1, 0] } },
      { op: 'Mul', inputs: ['wt', 'scale'], outputs: ['ws'] },
      { op: 'MatMul', inputs: ['x', 'ws'], outputs: ['y'] },
    ],
  });
  const m = await loadModel(p);
  assert.deepEqual(
    m.nodes.map((n) => n.opType),
    ['MatMul'],
  );
  assert.deepEqual(Array.from(m.constants.get('ws')!.data as Float32Array), [2, 8, 4, 10, 6, 12]);
  assert.deepEqual(outShape(m), [4, 2]);
});

test('a value-dependent shape computed at run time is DYNAMIC_SHAPE naming the node', async () => {
  const p = writeModel({
    inputs: [
      { name: 'x', dtype: 'float32', shape: [2, 3] },
      { name: 'target', dtype: 'int64', shape: [2] },
    ],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [],
    nodes: [{ op: 'Reshape', name: 'dyn', inputs: ['x', 'target'], outputs: ['y'] }],
  });
  await assert.rejects(loadModel(p), (e: Error & { code?: string }) => e.code === 'DYNAMIC_SHAPE' && /"dyn"/.test(e.message));
});
