import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers } from '../src/ir/lower.js';
import { fixture, maxRelErr, naiveConv, randomTensor, rng, values, type ConvGeometry } from './ir-fixture.js';
import type { Tensor } from '../src/onnx/model.js';

function batchNorm(y: Float64Array, shape: readonly number[], bn: readonly Tensor[], eps: number): Float64Array {
  const [gamma, beta, mean, variance] = bn.map(values) as [Float64Array, Float64Array, Float64Array, Float64Array];
  const [n, c, h, w] = shape as [number, number, number, number];
  const out = new Float64Array(y.length);
  for (let i = 0; i < y.length; i++) {
    const ch = Math.floor(i / (h * w)) % c;
    out[i] = ((y[i]! - mean[ch]!) / Math.sqrt(variance[ch]! + eps)) * gamma[ch]! + beta[ch]!;
  }
  void n;
  return out;
}

function convBnCase(seed: number, opts: { groups: number; bias: boolean; cin: number; cout: number }) {
  const rand = rng(seed);
  const { groups, cin, cout } = opts;
  const xs = [2, cin, 7, 6];
  const ws = [cout, cin / groups, 3, 3];
  const geo: ConvGeometry = { groups, strides: [2, 1], pads: [1, 0, 1, 2], dilations: [1, 2] };
  const oh = Math.floor((7 + 2 - 3) / 2) + 1;
  const ow = Math.floor((6 + 2 - 5) / 1) + 1;
  const ys = [2, cout, oh, ow];
  const bn = [
    randomTensor([cout], rand, 0.5, 2),
    randomTensor([cout], rand),
    randomTensor([cout], rand),
    randomTensor([cout], rand, 0.1, 3),
  ];
  const constants: Record<string, Tensor> = {
    w: randomTensor(ws, rand),
    gamma: bn[0]!,
    beta: bn[1]!,
    mean: bn[2]!,
    var: bn[3]!,
  };
  if (opts.bias) constants.b = randomTensor([cout], rand);
  const m = fixture({
    inputs: { x: xs },
    outputs: ['z'],
    constants,
    nodes: [
      {
        op: 'Conv',
        inputs: opts.bias ? ['x', 'w', 'b'] : ['x', 'w'],
        outputs: 'y',
        shape: ys,
        name: 'conv',
        attrs: { group: groups, strides: [2, 1], pads: [1, 0, 1, 2], dilations: [1, 2], kernel_shape: [3, 3] },
      },
      { op: 'BatchNormalization', inputs: ['y', 'gamma', 'beta', 'mean', 'var'], outputs: 'z', shape: ys, attrs: { epsilon: 1e-3 } },
    ],
  });
  const x = randomTensor(xs, rand);
  const ref = batchNorm(
    naiveConv(values(x), xs, values(constants.w), ws, opts.bias ? values(constants.b) : undefined, geo).data,
    ys,
    bn,
    1e-3,
  );
  return { m, x, xs, ws, geo, ref };
}

for (const [label, opts] of [
  ['plain conv with bias', { groups: 1, bias: true, cin: 3, cout: 5 }],
  ['conv without bias (a bias is created)', { groups: 1, bias: false, cin: 3, cout: 5 }],
  ['grouped conv', { groups: 2, bias: true, cin: 4, cout: 6 }],
] as const) {
  test(`BatchNormalization after a ${label} folds into its weight and bias exactly`, () => {
    const { m, x, xs, ws, geo, ref } = convBnCase(7, opts);
    const g = lowerToLayers(m);
    assert.equal(g.layers.length, 1);
    const conv = g.layers[0]!;
    assert.equal(conv.op, 'conv2d');
    assert.deepEqual(conv.outputs, ['z']);
    assert.deepEqual(conv.workload?.epilogue, ['bias']);
    assert.deepEqual(conv.params.weight?.dims, ws);
    const folded = naiveConv(values(x), xs, values(conv.params.weight), ws, values(conv.params.bias), geo).data;
    // float32 rounding of the folded weight is the only difference.
    assert.ok(maxRelErr(folded, ref) < 1e-5, `max relative error ${maxRelErr(folded, ref)}`);
    // and the fold really changed something (so the comparison above can fail)
    const unfolded = naiveConv(values(x), xs, values(m.constants.get('w')), ws, undefined, geo).data;
    assert.ok(maxRelErr(unfolded, ref) > 1e-2);
  });
}

test('BN is not folded when the conv output has another reader; it becomes its own layer', () => {
  const rand = rng(3);
  const m = fixture({
    inputs: { x: [1, 2, 4, 4] },
    outputs: ['z', 'y'],
    constants: {
      w: randomTensor([3, 2, 1, 1], rand),
      s: randomTensor([3], rand),
      b: randomTensor([3], rand),
      mu: randomTensor([3], rand),
      v: randomTensor([3], rand, 0.5, 1),
    },
    nodes: [
      { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: [1, 3, 4, 4] },
      { op: 'BatchNormalization', inputs: ['y', 's', 'b', 'mu', 'v'], outputs: 'z', shape: [1, 3, 4, 4] },
    ],
  });
  const g = lowerToLayers(m);
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['conv2d', 'batchnormalization'],
  );
  assert.deepEqual(g.layers[0]!.epilogue, []);
  assert.deepEqual(values(g.layers[0]!.params.weight), values(m.constants.get('w')));
  const bn = g.layers[1]!;
  assert.equal(bn.attrs.epsilon, 1e-5);
  assert.deepEqual(Object.keys(bn.params).sort(), ['B', 'input_mean', 'input_var', 'scale']);
  assert.equal(bn.macs, 48);
  assert.equal(bn.tunable, false);
});

test('BN after a ReLU is not folded (the fold would be wrong after a non-linearity)', () => {
  const rand = rng(4);
  const m = fixture({
    inputs: { x: [1, 2, 4, 4] },
    outputs: ['z'],
    constants: {
      w: randomTensor([3, 2, 1, 1], rand),
      s: randomTensor([3], rand),
      b: randomTensor([3], rand),
      mu: randomTensor([3], rand),
      v: randomTensor([3], rand, 0.5, 1),
    },
    nodes: [
      { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: [1, 3, 4, 4] },
      { op: 'Relu', inputs: ['y'], outputs: 'r', shape: [1, 3, 4, 4] },
      { op: 'BatchNormalization', inputs: ['r', 's', 'b', 'mu', 'v'], outputs: 'z', shape: [1, 3, 4, 4] },
    ],
  });
  const g = lowerToLayers(m);
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['conv2d', 'batchnormalization'],
  );
  assert.deepEqual(g.layers[0]!.workload?.epilogue, ['relu']);
});
