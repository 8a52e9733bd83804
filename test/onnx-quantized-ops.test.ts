/**
 * The quantized operators' folds are veltair's integer reference: they must reproduce ONNX's own
 * backend node tests (libonnx-testdata) bit for bit, not within a float tolerance, and round and
 * saturate the way ONNX specifies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import onnxProto from 'onnx-proto';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { tensorFromProto } from '../src/onnx/tensor.js';
import { encodeModel } from '../src/onnx/encode.js';
import type { Tensor } from '../src/onnx/model.js';
import { quantizeValue, requantize, roundHalfEven } from '../src/onnx/quant-math.js';
import { dataFiles, NODE_TESTS, withInputsBaked } from './onnx-node-data.js';

const QUANTIZED_NODE_TESTS = [
  'test_basic_convinteger',
  'test_convinteger_with_padding',
  'test_convinteger_without_padding',
  'test_dequantizelinear',
  'test_dequantizelinear_axis',
  'test_dynamicquantizelinear_expanded',
  'test_dynamicquantizelinear_max_adjusted_expanded',
  'test_dynamicquantizelinear_min_adjusted_expanded',
  'test_matmulinteger',
  'test_qlinearconv',
  'test_qlinearmatmul_2D',
  'test_qlinearmatmul_3D',
  'test_quantizelinear',
  'test_quantizelinear_axis',
];

function readSet(dir: string, prefix: 'input_' | 'output_') {
  return dataFiles(dir, prefix).map((f) => {
    const p = onnxProto.onnx.TensorProto.decode(fs.readFileSync(f));
    return { name: p.name ?? '', tensor: tensorFromProto(p) };
  });
}

for (const name of QUANTIZED_NODE_TESTS) {
  test(`${name}: the integer reference reproduces ONNX's expected output exactly`, () => {
    const dir = path.join(NODE_TESTS, name);
    const model = decodeModel(fs.readFileSync(path.join(dir, 'model.onnx')), name);
    const data = path.join(dir, 'test_data_set_0');
    const ins = readSet(data, 'input_');
    const feeds = new Map(ins.map((t, i) => [t.name || model.graph.inputs[i]!.name, t.tensor]));
    const folded = inferModel(withInputsBaked(model, feeds));
    readSet(data, 'output_').forEach((want, i) => {
      const got = folded.constants.get(want.name || model.graph.outputs[i]!.name);
      assert.ok(got !== undefined, `${name}: output ${i} was not folded`);
      assert.equal(got.dtype, want.tensor.dtype);
      assert.deepEqual(Array.from(got.data as ArrayLike<number>), Array.from(want.tensor.data as ArrayLike<number>));
    });
  });
}

test('rounding is half to even and quantization saturates', () => {
  assert.deepEqual([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 2.5001].map(roundHalfEven), [0, 2, 2, -0, -2, -2, 2, 3]);
  assert.equal(quantizeValue(1000, 1, 0, 'uint8'), 255);
  assert.equal(quantizeValue(-1000, 1, 128, 'uint8'), 0);
  assert.equal(quantizeValue(-1000, 1, 0, 'int8'), -128);
  assert.equal(quantizeValue(3, 2, 10, 'uint8'), 12); // 1.5 → 2
  assert.equal(quantizeValue(5, 2, 10, 'uint8'), 12); // 2.5 → 2
  assert.equal(requantize(5, 0.5, 0, 'uint8'), 2);
  assert.equal(requantize(7, 0.5, 0, 'uint8'), 4);
  assert.equal(requantize(300, 1, 0, 'uint8', 0, 200), 200, 'a clip bound caps the output');
});

/** A one-node com.microsoft model with its operands as initializers, folded by the front end. */
function foldMicrosoft(opType: string, inputs: [string, { dtype: 'uint8' | 'float32'; dims: number[]; values: number[] }][]) {
  const bytes = encodeModel({
    extraOpsets: [{ domain: 'com.microsoft', version: 1 }],
    nodes: [{ op: opType, domain: 'com.microsoft', name: 'q', inputs: inputs.map(([n]) => n), outputs: ['y'] }],
    initializers: inputs.map(([n, t]): [string, Tensor] => [
      n,
      { dtype: t.dtype, dims: t.dims, data: t.dtype === 'uint8' ? Uint8Array.from(t.values) : Float32Array.from(t.values) },
    ]),
    inputs: [],
    outputs: [{ name: 'y', dtype: 'uint8' }],
  });
  return inferModel(decodeModel(bytes, 'micro.onnx')).constants.get('y')!;
}

test('QLinearAdd: dequantize, add in float32, quantize', () => {
  const u8 = (values: number[]) => ({ dtype: 'uint8' as const, dims: [values.length], values });
  const f = (v: number) => ({ dtype: 'float32' as const, dims: [], values: [v] });
  const y = foldMicrosoft('QLinearAdd', [
    ['a', u8([0, 10, 200, 255])],
    ['as', f(0.5)],
    ['az', u8([10])],
    ['b', u8([5, 5, 255, 255])],
    ['bs', f(0.25)],
    ['bz', u8([0])],
    ['cs', f(1)],
    ['cz', u8([3])],
  ]);
  // (0−10)·0.5 + 5·0.25 = −3.75 → −4 + 3, saturated to 0; (200−10)·0.5 + 255·0.25 = 158.75 → 159 + 3; (255−10)·0.5 + 63.75 = 186.25 → 186 + 3.
  assert.deepEqual(Array.from(y.data as Uint8Array), [0, 4, 162, 189]);
});

test('QLinearGlobalAveragePool: integer channel sums requantized', () => {
  const y = foldMicrosoft('QLinearGlobalAveragePool', [
    ['x', { dtype: 'uint8', dims: [1, 2, 2, 2], values: [1, 2, 3, 4, 10, 10, 10, 13] }],
    ['xs', { dtype: 'float32', dims: [], values: [0.5] }],
    ['xz', { dtype: 'uint8', dims: [], values: [1] }],
    ['ys', { dtype: 'float32', dims: [], values: [0.25] }],
    ['yz', { dtype: 'uint8', dims: [], values: [0] }],
  ]);
  // Channel 0: Σ(x−1) = 6, mean 1.5 → ·0.5/0.25 = 3. Channel 1: Σ = 39, mean 9.75 → 19.5 → 20 (half to even).
  assert.deepEqual(Array.from(y.data as Uint8Array), [3, 20]);
});
