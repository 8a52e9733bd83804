import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers } from '../src/ir/lower.js';
import { fixture, int64s, scalar, tensor, values, type FixtureNode } from './ir-fixture.js';
import type { Tensor } from '../src/onnx/model.js';

const X = [1, 6, 8];
const STAT = [1, 6, 1];

interface LnOptions {
  readonly square?: 'pow' | 'mul';
  readonly exponent?: number;
  readonly axesAsInput?: boolean;
  readonly affine?: boolean;
}

function decomposedLayerNorm(o: LnOptions = {}) {
  const reduce = (input: string, out: string): FixtureNode =>
    o.axesAsInput
      ? { op: 'ReduceMean', inputs: [input, 'axes'], outputs: out, shape: STAT }
      : { op: 'ReduceMean', inputs: [input], outputs: out, shape: STAT, attrs: { axes: [-1] } };
  const nodes: FixtureNode[] = [
    reduce('x', 'mu'),
    { op: 'Sub', inputs: ['x', 'mu'], outputs: 'd', shape: X },
    o.square === 'mul'
      ? { op: 'Mul', inputs: ['d', 'd'], outputs: 'd2', shape: X }
      : { op: 'Pow', inputs: ['d', 'two'], outputs: 'd2', shape: X },
    reduce('d2', 'var'),
    { op: 'Add', inputs: ['var', 'eps'], outputs: 've', shape: STAT },
    { op: 'Sqrt', inputs: ['ve'], outputs: 'sd', shape: STAT },
    { op: 'Div', inputs: ['d', 'sd'], outputs: o.affine === false ? 'y' : 'n', shape: X },
  ];
  if (o.affine !== false) {
    nodes.push(
      { op: 'Mul', inputs: ['n', 'gamma'], outputs: 'gn', shape: X },
      { op: 'Add', inputs: ['gn', 'beta'], outputs: 'y', shape: X },
    );
  }
  const constants: Record<string, Tensor> = {
    two: scalar(o.exponent ?? 2),
    eps: scalar(1e-12),
    axes: int64s([-1]),
    gamma: tensor([8], [1, 2, 3, 4, 5, 6, 7, 8]),
    beta: tensor([8], [8, 7, 6, 5, 4, 3, 2, 1]),
  };
  return fixture({ inputs: { x: X }, outputs: ['y'], constants, nodes, opset: o.axesAsInput ? 18 : 13 });
}

for (const [label, opts] of [
  ['Pow(2) form', {}],
  ['Mul(d, d) form', { square: 'mul' }],
  ['opset-18 form (axes as an input)', { axesAsInput: true }],
] as const) {
  test(`decomposed LayerNorm, ${label}, becomes one layernormalization layer`, () => {
    const g = lowerToLayers(decomposedLayerNorm(opts));
    assert.deepEqual(
      g.layers.map((l) => l.op),
      ['layernormalization'],
    );
    const ln = g.layers[0]!;
    assert.deepEqual(ln.inputs, ['x']);
    assert.deepEqual(ln.outputs, ['y']);
    assert.equal(ln.attrs.axis, 2);
    assert.ok(Math.abs((ln.attrs.epsilon as number) - 1e-12) < 1e-18);
    assert.deepEqual(values(ln.params.Scale), Float64Array.of(1, 2, 3, 4, 5, 6, 7, 8));
    assert.deepEqual(values(ln.params.B), Float64Array.of(8, 7, 6, 5, 4, 3, 2, 1));
    assert.equal(ln.macs, 48);
  });
}

test('decomposed LayerNorm without γ/β gets unit scale and zero shift', () => {
  const g = lowerToLayers(decomposedLayerNorm({ affine: false }));
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['layernormalization'],
  );
  assert.deepEqual(values(g.layers[0]!.params.Scale), new Float64Array(8).fill(1));
  assert.deepEqual(values(g.layers[0]!.params.B), new Float64Array(8));
});

test('a LayerNorm look-alike with Pow(3) is not recognised', () => {
  const g = lowerToLayers(decomposedLayerNorm({ exponent: 3 }));
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['reducemean', 'sub', 'pow', 'reducemean', 'add', 'sqrt', 'div', 'mul', 'add'],
  );
});

test('ONNX LayerNormalization becomes a layernormalization layer with its axis made positive', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: X },
      outputs: ['y'],
      constants: { s: tensor([8]), b: tensor([8]) },
      nodes: [{ op: 'LayerNormalization', inputs: ['x', 's', 'b'], outputs: 'y', shape: X, attrs: { axis: -1 } }],
    }),
  );
  const ln = g.layers[0]!;
  assert.deepEqual({ op: ln.op, axis: ln.attrs.axis, epsilon: ln.attrs.epsilon }, { op: 'layernormalization', axis: 2, epsilon: 1e-5 });
});

/** GELU on x in one of the exporter association orders. */
function gelu(order: 'xa-half' | 'a-half-x' | 'x-half-a', sqrt2 = 1.4142135381698608) {
  const tail: FixtureNode[] = {
    'xa-half': [
      { op: 'Mul', inputs: ['x', 'a'], outputs: 'm', shape: X },
      { op: 'Mul', inputs: ['m', 'half'], outputs: 'y', shape: X },
    ],
    'a-half-x': [
      { op: 'Mul', inputs: ['a', 'half'], outputs: 'm', shape: X },
      { op: 'Mul', inputs: ['x', 'm'], outputs: 'y', shape: X },
    ],
    'x-half-a': [
      { op: 'Mul', inputs: ['half', 'x'], outputs: 'h', shape: X },
      { op: 'Mul', inputs: ['h', 'a'], outputs: 'y', shape: X },
    ],
  }[order];
  return fixture({
    inputs: { x: X },
    outputs: ['y'],
    constants: { sqrt2: scalar(sqrt2), one: scalar(1), half: scalar(0.5) },
    nodes: [
      ...(order === 'x-half-a' ? tail.slice(0, 1) : []),
      { op: 'Div', inputs: ['x', 'sqrt2'], outputs: 't', shape: X },
      { op: 'Erf', inputs: ['t'], outputs: 'e', shape: X },
      { op: 'Add', inputs: ['one', 'e'], outputs: 'a', shape: X },
      ...(order === 'x-half-a' ? tail.slice(1) : tail),
    ],
  });
}

for (const order of ['xa-half', 'a-half-x', 'x-half-a'] as const) {
  test(`GELU (erf form, ${order}) on a graph input becomes one gelu layer`, () => {
    const g = lowerToLayers(gelu(order));
    assert.deepEqual(
      g.layers.map((l) => l.op),
      ['gelu'],
    );
    assert.deepEqual(g.layers[0]!.inputs, ['x']);
    assert.deepEqual(g.layers[0]!.outputs, ['y']);
    assert.equal(g.layers[0]!.attrs.approximate, 'none');
    assert.equal(g.layers[0]!.macs, 48);
  });
}

test('a GELU look-alike dividing by 2 instead of √2 is not recognised', () => {
  const g = lowerToLayers(gelu('xa-half', 2));
  // no gelu: the five ops stay themselves, run as one elementwise chain
  assert.deepEqual(
    g.layers.map((l) => [l.op, l.attrs['fused']]),
    [['elementwise_chain', 'div+erf+add+mul+mul']],
  );
});

test('tanh-approximated GELU after a dense layer fuses as gelu_tanh', () => {
  const H = [1, 6, 8];
  const g = lowerToLayers(
    fixture({
      inputs: { i: [1, 6, 4] },
      outputs: ['y'],
      constants: {
        w: tensor([4, 8]),
        three: scalar(3),
        c: scalar(0.044715),
        k: scalar(Math.sqrt(2 / Math.PI)),
        one: scalar(1),
        half: scalar(0.5),
      },
      nodes: [
        { op: 'MatMul', inputs: ['i', 'w'], outputs: 'x', shape: H },
        { op: 'Mul', inputs: ['half', 'x'], outputs: 'h', shape: H },
        { op: 'Pow', inputs: ['x', 'three'], outputs: 'p', shape: H },
        { op: 'Mul', inputs: ['c', 'p'], outputs: 'cp', shape: H },
        { op: 'Add', inputs: ['x', 'cp'], outputs: 's', shape: H },
        { op: 'Mul', inputs: ['k', 's'], outputs: 'u', shape: H },
        { op: 'Tanh', inputs: ['u'], outputs: 't', shape: H },
        { op: 'Add', inputs: ['one', 't'], outputs: 'a', shape: H },
        { op: 'Mul', inputs: ['h', 'a'], outputs: 'y', shape: H },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['dense'],
  );
  assert.deepEqual(g.layers[0]!.workload?.epilogue, ['gelu_tanh']);
});
