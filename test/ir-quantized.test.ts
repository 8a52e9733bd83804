/**
 * Folded quantized layers against the integer reference, exactly:
 *  - ONNX's QOperator node tests lowered to one layer each and run through the layer reference give
 *    ONNX's expected output bit for bit (the fold read the right weights, zero points and scales);
 *  - a QDQ Conv (+bias, +Relu, per-channel weights, grouped and strided) folds into the same layer
 *    a QLinearConv with those parameters is, and both give identical integers;
 *  - what cannot stay integer is refused by node name; compile refuses a quantized model by its
 *    first INT8 layer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import onnxProto from 'onnx-proto';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { encodeModel, type NodeSpec } from '../src/onnx/encode.js';
import type { Tensor } from '../src/onnx/model.js';
import { tensorFromProto } from '../src/onnx/tensor.js';
import { lowerToLayers } from '../src/ir/lower.js';
import { refuseUncompilableQuantized } from '../src/compile/int8-families.js';
import { runQuantizedLayer } from '../src/quantize/reference.js';
import { isVeltairError } from '../src/errors.js';
import { seededRng } from '../src/random.js';
import { dataFiles, NODE_TESTS, withInputsBaked } from './onnx-node-data.js';

function nodeTest(name: string) {
  const dir = path.join(NODE_TESTS, name);
  const model = decodeModel(fs.readFileSync(path.join(dir, 'model.onnx')), name);
  const read = (prefix: 'input_' | 'output_'): Tensor[] =>
    dataFiles(path.join(dir, 'test_data_set_0'), prefix).map((f) => tensorFromProto(onnxProto.onnx.TensorProto.decode(fs.readFileSync(f))));
  return { model, ins: read('input_'), outs: read('output_') };
}

for (const name of [
  'test_qlinearconv',
  'test_qlinearmatmul_2D',
  'test_convinteger_with_padding',
  'test_convinteger_without_padding',
  'test_basic_convinteger',
  'test_matmulinteger',
]) {
  test(`${name}: lowered to one quantized layer, the layer reference gives ONNX's output exactly`, () => {
    const { model, ins, outs } = nodeTest(name);
    // Input 0 stays the run-time activation; the weights and quantization parameters become constants.
    const baked = new Map(model.graph.inputs.slice(1).map((i, k) => [i.name, ins[k + 1]!]));
    const graph = lowerToLayers(inferModel(withInputsBaked(model, baked)));
    assert.equal(graph.layers.length, 1);
    const got = runQuantizedLayer(graph.layers[0]!, [ins[0]!]);
    assert.equal(got.dtype, outs[0]!.dtype);
    assert.deepEqual(Array.from(got.data as ArrayLike<number>), Array.from(outs[0]!.data as ArrayLike<number>));
  });
}

test('a batched QLinearMatMul weight is refused by node name', () => {
  const { model, ins } = nodeTest('test_qlinearmatmul_3D');
  const baked = new Map(model.graph.inputs.slice(1).map((i, k) => [i.name, ins[k + 1]!]));
  assert.throws(
    () => lowerToLayers(inferModel(withInputsBaked(model, baked))),
    (e) => isVeltairError(e) && e.code === 'UNSUPPORTED_QUANTIZATION' && /rank 3/.test(e.message),
  );
});

interface ConvCase {
  readonly c: number;
  readonly m: number;
  readonly group: number;
  readonly stride: number;
  readonly relu: boolean;
}

const u8 = (dims: number[], v: number[]): Tensor => ({ dtype: 'uint8', dims, data: Uint8Array.from(v) });
const f32 = (dims: number[], v: number[]): Tensor => ({ dtype: 'float32', dims, data: Float32Array.from(v) });

/** The same quantized conv written as QDQ and as QLinearConv (the QDQ one with an optional Relu). */
function convModels(k: ConvCase, seed: number): { qdq: Uint8Array; qop: Uint8Array; x: Tensor } {
  const rng = seededRng(seed);
  const ints = (n: number, lo: number, hi: number) => Array.from({ length: n }, () => lo + Math.floor(rng.next() * (hi - lo + 1)));
  const wDims = [k.m, k.c / k.group, 3, 3];
  const wq: Tensor = {
    dtype: 'int8',
    dims: wDims,
    data: Int8Array.from(
      ints(
        wDims.reduce((a, b) => a * b, 1),
        -127,
        127,
      ),
    ),
  };
  const ws = f32(
    [k.m],
    ints(k.m, 1, 9).map((v) => v / 512),
  );
  const [xs, xz, ys, yz] = [f32([], [0.05]), u8([], [120]), f32([], [0.2]), u8([], [7])];
  const bq: Tensor = { dtype: 'int32', dims: [k.m], data: Int32Array.from(ints(k.m, -3000, 3000)) };
  const bs = f32(
    [k.m],
    Array.from(ws.data as Float32Array, (s) => Math.fround(0.05 * s)),
  );
  const xDims = [1, k.c, 9, 9];
  const attrs = { pads: [1, 1, 1, 1], strides: [k.stride, k.stride], group: k.group };
  const common = {
    opset: 17,
    inputs: [{ name: 'x', dtype: 'uint8' as const, shape: xDims }],
    outputs: [{ name: 'y', dtype: 'uint8' as const }],
  };
  const qdqNodes: NodeSpec[] = [
    { op: 'DequantizeLinear', inputs: ['x', 'xs', 'xz'], outputs: ['xf'] },
    { op: 'DequantizeLinear', inputs: ['wq', 'ws', 'wz'], outputs: ['w'], attrs: { axis: 0 } },
    { op: 'DequantizeLinear', inputs: ['bq', 'bs', 'bz'], outputs: ['b'], attrs: { axis: 0 } },
    { op: 'Conv', name: 'the_conv', inputs: ['xf', 'w', 'b'], outputs: k.relu ? ['c'] : ['r'], attrs },
    ...(k.relu ? [{ op: 'Relu', inputs: ['c'], outputs: ['r'] }] : []),
    { op: 'QuantizeLinear', inputs: ['r', 'ys', 'yz'], outputs: ['y'] },
  ];
  const zeros8: Tensor = { dtype: 'int8', dims: [k.m], data: new Int8Array(k.m) };
  const qdq = encodeModel({
    ...common,
    nodes: qdqNodes,
    initializers: [
      ['xs', xs],
      ['xz', xz],
      ['wq', wq],
      ['ws', ws],
      ['wz', zeros8],
      ['bq', bq],
      ['bs', bs],
      ['bz', { dtype: 'int32', dims: [k.m], data: new Int32Array(k.m) }],
      ['ys', ys],
      ['yz', yz],
    ],
  });
  const qop = encodeModel({
    ...common,
    nodes: [{ op: 'QLinearConv', inputs: ['x', 'xs', 'xz', 'wq', 'ws', 'wz', 'ys', 'yz', 'bq'], outputs: ['y'], attrs }],
    initializers: [
      ['xs', xs],
      ['xz', xz],
      ['wq', wq],
      ['ws', ws],
      ['wz', zeros8],
      ['ys', ys],
      ['yz', yz],
      ['bq', bq],
    ],
  });
  return {
    qdq,
    qop,
    x: u8(
      xDims,
      ints(
        xDims.reduce((a, b) => a * b, 1),
        0,
        255,
      ),
    ),
  };
}

for (const k of [
  { c: 4, m: 6, group: 1, stride: 1, relu: true },
  { c: 4, m: 6, group: 1, stride: 2, relu: false },
  { c: 6, m: 6, group: 6, stride: 1, relu: true },
  { c: 4, m: 8, group: 2, stride: 2, relu: true },
]) {
  test(`QDQ conv (C=${k.c} M=${k.m} group=${k.group} stride=${k.stride}${k.relu ? ' relu' : ''}) folds into the QLinearConv layer, exactly`, () => {
    const { qdq, qop, x } = convModels(k, 11 + k.c * k.group + k.stride);
    const qdqGraph = lowerToLayers(inferModel(decodeModel(qdq, 'qdq.onnx')));
    assert.deepEqual(
      qdqGraph.layers.map((l) => l.op),
      ['qconv2d'],
      'the QDQ pattern is one layer',
    );
    const layer = qdqGraph.layers[0]!;
    assert.equal(layer.name, 'the_conv');
    const ours = Array.from(runQuantizedLayer(layer, [x]).data as Uint8Array);
    // ONNX's QLinearConv, folded by the front end with x baked in, is the reference.
    const qopModel = decodeModel(qop, 'qop.onnx');
    const want = Array.from(inferModel(withInputsBaked(qopModel, new Map([['x', x]]))).constants.get('y')!.data as Uint8Array);
    const expected = k.relu ? want.map((v) => Math.max(v, 7)) : want;
    assert.deepEqual(ours, expected);
    // And the QOperator model lowers to the same layer.
    const qopLayer = lowerToLayers(inferModel(qopModel)).layers[0]!;
    assert.deepEqual(Array.from(runQuantizedLayer(qopLayer, [x]).data as Uint8Array), want);
  });
}

test('a QDQ Conv with a float weight or an int8 activation is refused by node name, before tuning', () => {
  const bad = (xType: 'uint8' | 'int8', floatWeight: boolean): Uint8Array =>
    encodeModel({
      opset: 17,
      inputs: [{ name: 'x', dtype: xType, shape: [1, 2, 4, 4] }],
      outputs: [{ name: 'y', dtype: 'uint8' }],
      nodes: [
        { op: 'DequantizeLinear', inputs: ['x', 's', xType === 'uint8' ? 'z' : 'z8'], outputs: ['xf'] },
        ...(floatWeight ? [] : [{ op: 'DequantizeLinear', inputs: ['wq', 's', 'z8'], outputs: ['w'] }]),
        { op: 'Conv', name: 'conv_7', inputs: ['xf', floatWeight ? 'wf' : 'w'], outputs: ['c'] },
        { op: 'QuantizeLinear', inputs: ['c', 's', 'z'], outputs: ['y'] },
      ],
      initializers: [
        ['s', f32([], [0.1])],
        ['z', u8([], [0])],
        ['z8', { dtype: 'int8', dims: [], data: new Int8Array(1) }],
        ['wq', { dtype: 'int8', dims: [2, 2, 1, 1], data: Int8Array.of(1, 2, 3, 4) }],
        ['wf', f32([2, 2, 1, 1], [1, 2, 3, 4])],
      ],
    });
  for (const [model, why] of [
    [bad('uint8', true), /conv_7.*float constant/],
    [bad('int8', false), /conv_7.*int8; quantized activations must be uint8/],
  ] as const) {
    assert.throws(
      () => lowerToLayers(inferModel(decodeModel(model, 'bad.onnx'))),
      (e) => isVeltairError(e) && e.code === 'UNSUPPORTED_QUANTIZATION' && why.test(e.message) && e.hint.length > 0,
    );
  }
});

test('compile takes a foldable quantized model, and refuses a layer the INT8 kernels cannot take by its name', () => {
  const { qdq } = convModels({ c: 4, m: 6, group: 1, stride: 1, relu: true }, 3);
  const graph = lowerToLayers(inferModel(decodeModel(qdq, 'qdq.onnx')));
  refuseUncompilableQuantized(graph);
  const conv = graph.layers.find((l) => l.op === 'qconv2d')!;
  const zero = conv.params['weight_zero']!;
  const asymmetric = { ...conv, params: { ...conv.params, weight_zero: { ...zero, data: new Int32Array(zero.dims[0]!).fill(2) } } };
  assert.throws(
    () => refuseUncompilableQuantized({ ...graph, layers: graph.layers.map((l) => (l === conv ? asymmetric : l)) }),
    (e) =>
      isVeltairError(e) &&
      e.code === 'UNSUPPORTED_QUANTIZATION' &&
      /layer "the_conv" \(qconv2d \d+\): its weight zero point is 2/.test(e.message),
  );
});
