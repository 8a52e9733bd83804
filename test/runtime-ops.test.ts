/**
 * Every native op against ONNX Runtime on small odd shapes: each case is a one-node ONNX model run
 * through veltair's front end, graph plan, translation and native executor, compared with ORT.
 * Blocked (NCHW[V]c) cases run the layer between a reorder in and a reorder out.
 */
import { test } from 'node:test';
import type { Tensor } from '../src/onnx/model.js';
import { check, f32, named, scalar, seeded, X, type Case } from './runtime-harness.js';

const UNARY = ['Relu', 'Sigmoid', 'Tanh', 'Erf', 'Exp', 'Neg', 'Abs', 'Floor', 'Ceil', 'Sin', 'Cos', 'Softplus', 'Sign', 'HardSwish'];

const CASES: Case[] = [
  ...UNARY.map((op): Case => ({ name: op, node: { op }, feeds: [X([2, 3, 5, 7])], out: [2, 3, 5, 7] })),
  ...['Relu', 'Sigmoid', 'HardSwish', 'Tanh'].map((op): Case => ({
    name: `${op} blocked`,
    node: { op },
    feeds: [X([2, 19, 3, 5])],
    out: [2, 19, 3, 5],
    vec: 16,
  })),
  { name: 'Sqrt', node: { op: 'Sqrt' }, feeds: [X([3, 11], 2, 0.01, 4)], out: [3, 11] },
  { name: 'Log', node: { op: 'Log' }, feeds: [X([3, 11], 2, 0.01, 4)], out: [3, 11] },
  { name: 'Reciprocal', node: { op: 'Reciprocal' }, feeds: [X([3, 11], 2, 0.5, 4)], out: [3, 11] },
  {
    name: 'Clip',
    node: { op: 'Clip', inputs: ['x', 'lo', 'hi'] },
    feeds: [X([4, 9])],
    out: [4, 9],
    inits: [
      ['lo', { dtype: 'float32', dims: [], data: new Float32Array([-0.5]) }],
      ['hi', { dtype: 'float32', dims: [], data: new Float32Array([1.25]) }],
    ],
  },
  { name: 'LeakyRelu', node: { op: 'LeakyRelu', attrs: { alpha: 0.15 } }, feeds: [X([5, 7])], out: [5, 7] },
  {
    name: 'HardSigmoid blocked',
    node: { op: 'HardSigmoid', attrs: { alpha: 0.3, beta: 0.4 } },
    feeds: [X([1, 21, 4, 3])],
    out: [1, 21, 4, 3],
    vec: 8,
  },
  { name: 'Elu', node: { op: 'Elu', attrs: { alpha: 0.7 } }, feeds: [X([5, 7])], out: [5, 7] },
  { name: 'Selu', node: { op: 'Selu' }, feeds: [X([5, 7])], out: [5, 7] },
  {
    name: 'GELU (erf pattern)',
    feeds: [X([3, 13])],
    out: [3, 13],
    inits: [
      ['s2', scalar(Math.SQRT2)],
      ['one', scalar(1)],
      ['half', scalar(0.5)],
    ],
    nodes: [
      { op: 'Div', inputs: ['x', 's2'], outputs: ['a'] },
      { op: 'Erf', inputs: ['a'], outputs: ['b'] },
      { op: 'Add', inputs: ['b', 'one'], outputs: ['c'] },
      { op: 'Mul', inputs: ['x', 'c'], outputs: ['d'] },
      { op: 'Mul', inputs: ['d', 'half'], outputs: ['y'] },
    ],
  },
];

const Y = (dims: number[], seed = 2, lo = -2, hi = 2) => named('b', f32(dims, seed, lo, hi));
const tensor = (dims: number[], seed: number, lo = -1, hi = 1): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    lo,
    hi,
  ),
});
const bin = (op: string, a: number[], b: number[], out: number[], extra: Partial<Case> = {}): Case => ({
  name: `${op} [${a}]∘[${b}]`,
  node: { op },
  feeds: [X(a), Y(b, 2, 0.5, 2)],
  out,
  ...extra,
});

CASES.push(
  bin('Add', [2, 3, 5], [2, 3, 5], [2, 3, 5]),
  bin('Sub', [2, 3, 5], [3, 1], [2, 3, 5]),
  bin('Mul', [4, 1, 6], [1, 5, 1], [4, 5, 6]),
  bin('Div', [3, 7], [7], [3, 7]),
  bin('Pow', [2, 9], [2, 1], [2, 9], { feeds: [X([2, 9], 3, 0.1, 2), Y([2, 1])] }),
  bin('Max', [1, 3, 1, 5], [2, 1, 4, 5], [2, 3, 4, 5]),
  bin('Min', [2, 3, 4, 5], [5], [2, 3, 4, 5]),
  bin('Add', [2, 19, 3, 5], [2, 19, 3, 5], [2, 19, 3, 5], { vec: 16, name: 'Add blocked same shape' }),
  bin('Mul', [2, 19, 3, 5], [2, 19, 1, 1], [2, 19, 3, 5], { vec: 16, name: 'Mul blocked channel gate (squeeze-excite)' }),
  bin('Add', [2, 21, 3, 5], [1, 21, 1, 1], [2, 21, 3, 5], { vec: 8, name: 'Add blocked channel broadcast V=8' }),
  {
    name: 'Sub constant first (operand order)',
    node: { op: 'Sub', inputs: ['k', 'x'] },
    feeds: [X([3, 4])],
    out: [3, 4],
    inits: [['k', tensor([4], 9)]],
  },
  {
    name: 'Div by constant',
    node: { op: 'Div', inputs: ['x', 'k'] },
    feeds: [X([3, 4])],
    out: [3, 4],
    inits: [['k', tensor([3, 1], 9, 0.5, 2)]],
  },
  {
    name: 'PRelu',
    node: { op: 'PRelu', inputs: ['x', 'slope'] },
    feeds: [X([2, 3, 4])],
    out: [2, 3, 4],
    inits: [['slope', tensor([3, 1], 5)]],
  },
  { name: 'Less → bool', node: { op: 'Less' }, feeds: [X([3, 5]), Y([5])], out: [3, 5], outDtype: 'bool' },
  {
    name: 'Where',
    node: { op: 'Where', inputs: ['c', 'x', 'b'] },
    feeds: [X([2, 1, 5]), Y([3, 1])],
    out: [2, 3, 5],
    inits: [['c', { dtype: 'bool', dims: [3, 5], data: Uint8Array.from({ length: 15 }, (_, i) => ((i * 7) % 3 === 0 ? 1 : 0)) }]],
  },
  {
    name: 'MaxPool 3x3 s2 pads',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } },
    feeds: [X([1, 3, 9, 8])],
    out: [1, 3, 5, 4],
  },
  {
    name: 'MaxPool ceil dilated',
    node: { op: 'MaxPool', attrs: { kernel_shape: [2, 3], strides: [2, 2], dilations: [2, 1], ceil_mode: 1 } },
    feeds: [X([2, 3, 10, 9])],
    out: [2, 3, 4, 4],
  },
  {
    name: 'MaxPool blocked',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } },
    feeds: [X([1, 20, 9, 8])],
    out: [1, 20, 5, 4],
    vec: 16,
  },
  {
    name: 'MaxPool blocked 3x3 s1 pads V=8 (every column interior but the edges)',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [1, 1], pads: [1, 1, 1, 1] } },
    feeds: [X([2, 11, 7, 9])],
    out: [2, 11, 7, 9],
    vec: 8,
  },
  {
    name: 'MaxPool blocked 3x3 s2 ceil, no pad, V=16 (a window past the right edge)',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [2, 2], ceil_mode: 1 } },
    feeds: [X([1, 18, 10, 10])],
    out: [1, 18, 5, 5],
    vec: 16,
  },
  {
    name: 'MaxPool blocked 3x3 s2 on a row narrower than the window',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } },
    feeds: [X([1, 16, 5, 2])],
    out: [1, 16, 3, 1],
    vec: 16,
  },
  {
    name: 'MaxPool blocked 3x3 s2 with only the right pad to fit the window (no column is interior)',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 0, 1, 1] } },
    feeds: [X([1, 16, 3, 2], 1, 0, 1)],
    out: [1, 16, 2, 1],
    vec: 16,
  },
  {
    name: 'MaxPool blocked 3x3 s2 pads V=8 (stride-2 windows share a column: each column max taken once)',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } },
    feeds: [X([1, 12, 9, 15])],
    out: [1, 12, 5, 8],
    vec: 8,
  },
  {
    name: 'MaxPool blocked 3x3 s2 row-dilated V=16 (three fixed row pointers dh rows apart, the shared column)',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [2, 2], dilations: [2, 1], pads: [2, 1, 2, 1] } },
    feeds: [X([1, 17, 13, 11])],
    out: [1, 17, 7, 6],
    vec: 16,
  },
  {
    name: 'MaxPool blocked 3x3 s3 V=16 (three fixed row pointers, no column shared)',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3, 3], strides: [3, 3], pads: [1, 1, 1, 1] } },
    feeds: [X([1, 16, 10, 10])],
    out: [1, 16, 4, 4],
    vec: 16,
  },
  {
    name: 'MaxPool blocked 2x3 s2 row-dilated ceil V=16 (the shared column over dilated rows)',
    node: { op: 'MaxPool', attrs: { kernel_shape: [2, 3], strides: [2, 2], dilations: [2, 1], ceil_mode: 1 } },
    feeds: [X([1, 17, 10, 13])],
    out: [1, 17, 5, 6],
    vec: 16,
  },
  {
    name: 'AveragePool exclude pad',
    node: { op: 'AveragePool', attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } },
    feeds: [X([1, 2, 7, 9])],
    out: [1, 2, 4, 5],
  },
  {
    name: 'AveragePool include pad ceil',
    node: { op: 'AveragePool', attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1], count_include_pad: 1, ceil_mode: 1 } },
    feeds: [X([1, 2, 8, 8])],
    out: [1, 2, 5, 5],
  },
  {
    name: 'AveragePool blocked',
    node: { op: 'AveragePool', attrs: { kernel_shape: [2, 2], strides: [2, 2] } },
    feeds: [X([2, 17, 6, 7])],
    out: [2, 17, 3, 3],
    vec: 8,
  },
  {
    name: 'MaxPool 1-D',
    node: { op: 'MaxPool', attrs: { kernel_shape: [3], strides: [2], pads: [1, 1] } },
    feeds: [X([2, 3, 11])],
    out: [2, 3, 6],
  },
  { name: 'GlobalAveragePool', node: { op: 'GlobalAveragePool' }, feeds: [X([2, 5, 3, 7])], out: [2, 5, 1, 1] },
  { name: 'GlobalMaxPool', node: { op: 'GlobalMaxPool' }, feeds: [X([2, 5, 3, 7])], out: [2, 5, 1, 1] },
  { name: 'GlobalAveragePool blocked', node: { op: 'GlobalAveragePool' }, feeds: [X([2, 19, 3, 7])], out: [2, 19, 1, 1], vec: 16 },
  { name: 'Softmax last axis', node: { op: 'Softmax', attrs: { axis: -1 } }, feeds: [X([3, 37], 1, -20, 20)], out: [3, 37] },
  { name: 'Softmax middle axis', node: { op: 'Softmax', attrs: { axis: 1 } }, feeds: [X([2, 5, 3])], out: [2, 5, 3] },
  { name: 'Softmax opset 11 default axis (flatten to 2-D)', node: { op: 'Softmax' }, feeds: [X([2, 3, 4])], out: [2, 3, 4], opset: 11 },
  { name: 'LogSoftmax', node: { op: 'LogSoftmax', attrs: { axis: -1 } }, feeds: [X([4, 21])], out: [4, 21] },
  {
    name: 'LayerNormalization',
    node: { op: 'LayerNormalization', inputs: ['x', 'g', 'bb'], attrs: { axis: -1, epsilon: 1e-5 } },
    feeds: [X([2, 3, 19])],
    out: [2, 3, 19],
    inits: [
      ['g', tensor([19], 3)],
      ['bb', tensor([19], 4)],
    ],
  },
  {
    name: 'LayerNormalization two axes, no bias',
    node: { op: 'LayerNormalization', inputs: ['x', 'g'], attrs: { axis: 1 } },
    feeds: [X([3, 4, 5])],
    out: [3, 4, 5],
    inits: [['g', tensor([4, 5], 3)]],
  },
  {
    name: 'BatchNormalization',
    node: { op: 'BatchNormalization', inputs: ['x', 's', 'bb', 'm', 'v'], attrs: { epsilon: 1e-3 } },
    feeds: [X([2, 3, 4, 5])],
    out: [2, 3, 4, 5],
    inits: [
      ['s', tensor([3], 1)],
      ['bb', tensor([3], 2)],
      ['m', tensor([3], 3)],
      ['v', tensor([3], 4, 0.5, 2)],
    ],
  },
  {
    name: 'ReduceMean spatial keepdims',
    node: { op: 'ReduceMean', inputs: ['x', 'ax'], attrs: { keepdims: 1 } },
    feeds: [X([2, 3, 4, 5])],
    out: [2, 3, 1, 1],
    opset: 18,
    inits: [['ax', { dtype: 'int64', dims: [2], data: new Float64Array([2, 3]) }]],
  },
  {
    name: 'ReduceSum middle',
    node: { op: 'ReduceSum', inputs: ['x', 'ax'], attrs: { keepdims: 0 } },
    feeds: [X([2, 3, 4])],
    out: [2, 4],
    opset: 13,
    inits: [['ax', { dtype: 'int64', dims: [1], data: new Float64Array([1]) }]],
  },
  { name: 'ReduceMax all', node: { op: 'ReduceMax', attrs: { keepdims: 0 } }, feeds: [X([3, 5])], out: [], opset: 13 },
  { name: 'Cast float→int64', node: { op: 'Cast', attrs: { to: 7 } }, feeds: [X([3, 5], 1, -9, 9)], out: [3, 5], outDtype: 'int64' },
);

for (const c of CASES) {
  test(`native ${c.name} matches ONNX Runtime`, async () => {
    await check(c);
  });
}
