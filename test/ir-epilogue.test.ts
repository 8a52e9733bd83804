import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers } from '../src/ir/lower.js';
import { fixture, randomTensor, rng, scalar, tensor, values, type FixtureNode } from './ir-fixture.js';
import type { Tensor } from '../src/onnx/model.js';

const S = [1, 4, 5, 5];

function bnConsts(prefix: string, rand: () => number): Record<string, Tensor> {
  return {
    [`${prefix}_s`]: randomTensor([4], rand, 0.5, 1.5),
    [`${prefix}_b`]: randomTensor([4], rand),
    [`${prefix}_m`]: randomTensor([4], rand),
    [`${prefix}_v`]: randomTensor([4], rand, 0.5, 1),
  };
}

function convBn(prefix: string, input: string, out: string): FixtureNode[] {
  return [
    { op: 'Conv', inputs: [input, `${prefix}_w`], outputs: `${prefix}_y`, shape: S, name: prefix, attrs: { pads: [1, 1, 1, 1] } },
    {
      op: 'BatchNormalization',
      inputs: [`${prefix}_y`, `${prefix}_s`, `${prefix}_b`, `${prefix}_m`, `${prefix}_v`],
      outputs: out,
      shape: S,
    },
  ];
}

function resnetBlock(residualFirst: boolean) {
  const rand = rng(11);
  return fixture({
    inputs: { x: S },
    outputs: ['out'],
    constants: {
      c1_w: randomTensor([4, 4, 3, 3], rand),
      c2_w: randomTensor([4, 4, 3, 3], rand),
      ...bnConsts('c1', rand),
      ...bnConsts('c2', rand),
    },
    nodes: [
      ...convBn('c1', 'x', 'bn1'),
      { op: 'Relu', inputs: ['bn1'], outputs: 'r1', shape: S },
      ...convBn('c2', 'r1', 'bn2'),
      { op: 'Add', inputs: residualFirst ? ['x', 'bn2'] : ['bn2', 'x'], outputs: 'sum', shape: S },
      { op: 'Relu', inputs: ['sum'], outputs: 'out', shape: S },
    ],
  });
}

test('ResNet basic block: conv+BN+ReLU, then conv+BN + residual add + ReLU, fused in that order', () => {
  for (const residualFirst of [false, true]) {
    const g = lowerToLayers(resnetBlock(residualFirst));
    assert.deepEqual(
      g.layers.map((l) => l.op),
      ['conv2d', 'conv2d'],
    );
    const [a, b] = g.layers as [(typeof g.layers)[0], (typeof g.layers)[0]];
    assert.deepEqual(a.workload?.epilogue, ['bias', 'relu']);
    assert.deepEqual(a.outputs, ['r1']);
    assert.deepEqual(b.workload?.epilogue, ['bias', 'residual_add', 'relu']);
    assert.deepEqual(b.epilogue[1], { kind: 'residual_add', value: 'x' });
    assert.deepEqual(b.outputs, ['out']);
    // the residual operand is an input of the layer (after the op's own argument)
    assert.deepEqual(b.inputs, ['r1', 'x']);
    assert.deepEqual(b.inputShapes, [S, S]);
    assert.notEqual(a.workload?.key, b.workload?.key);
    assert.deepEqual([...g.shapes.keys()].sort(), ['out', 'r1', 'x']);
  }
});

test('ReLU before the residual add gives a different epilogue order and key', () => {
  const rand = rng(5);
  const make = (reluFirst: boolean) =>
    fixture({
      inputs: { x: S },
      outputs: ['out'],
      constants: { w: randomTensor([4, 4, 3, 3], rand) },
      nodes: reluFirst
        ? [
            { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: S, attrs: { pads: [1, 1, 1, 1] } },
            { op: 'Relu', inputs: ['y'], outputs: 'r', shape: S },
            { op: 'Add', inputs: ['r', 'x'], outputs: 'out', shape: S },
          ]
        : [
            { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: S, attrs: { pads: [1, 1, 1, 1] } },
            { op: 'Add', inputs: ['y', 'x'], outputs: 'r', shape: S },
            { op: 'Relu', inputs: ['r'], outputs: 'out', shape: S },
          ],
    });
  const first = lowerToLayers(make(true)).layers;
  const second = lowerToLayers(make(false)).layers;
  assert.equal(first.length, 1);
  assert.deepEqual(first[0]!.workload?.epilogue, ['relu', 'residual_add']);
  assert.deepEqual(second[0]!.workload?.epilogue, ['residual_add', 'relu']);
  assert.notEqual(first[0]!.workload?.key, second[0]!.workload?.key);
});

test('projection shortcut: the fused layer runs after the branch whose output it adds', () => {
  const rand = rng(6);
  const m = fixture({
    inputs: { x: S },
    outputs: ['out'],
    constants: {
      a_w: randomTensor([4, 4, 3, 3], rand),
      p_w: randomTensor([4, 4, 3, 3], rand),
      ...bnConsts('a', rand),
      ...bnConsts('p', rand),
    },
    nodes: [
      ...convBn('a', 'x', 'abn'),
      ...convBn('p', 'x', 'pbn'),
      { op: 'Add', inputs: ['abn', 'pbn'], outputs: 'sum', shape: S },
      { op: 'Relu', inputs: ['sum'], outputs: 'out', shape: S },
    ],
  });
  const g = lowerToLayers(m);
  assert.deepEqual(
    g.layers.map((l) => l.name),
    ['p', 'a'],
  );
  assert.deepEqual(g.layers[0]!.workload?.epilogue, ['bias']);
  assert.deepEqual(g.layers[1]!.workload?.epilogue, ['bias', 'residual_add', 'relu']);
  assert.deepEqual(g.layers[1]!.epilogue[1], { kind: 'residual_add', value: 'pbn' });
  assert.deepEqual(
    g.layers.map((l) => l.index),
    [0, 1],
  );
});

test('a constant add after an activation is not a bias: it stays a layer', () => {
  const m = fixture({
    inputs: { x: S },
    outputs: ['out'],
    constants: { w: tensor([4, 4, 1, 1]), c: tensor([4, 1, 1], [1, 2, 3, 4]) },
    nodes: [
      { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: S },
      { op: 'Relu', inputs: ['y'], outputs: 'r', shape: S },
      { op: 'Add', inputs: ['r', 'c'], outputs: 'out', shape: S },
    ],
  });
  const g = lowerToLayers(m);
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['conv2d', 'add'],
  );
  assert.deepEqual(g.layers[0]!.workload?.epilogue, ['relu']);
  assert.deepEqual(values(g.layers[1]!.params.B), Float64Array.of(1, 2, 3, 4));
  assert.equal(g.layers[1]!.macs, 100);
});

test('a per-channel constant add directly after a conv becomes its bias', () => {
  const m = fixture({
    inputs: { x: S },
    outputs: ['out'],
    constants: { w: tensor([4, 4, 1, 1]), b: tensor([4], [1, 1, 1, 1]), c: tensor([1, 4, 1, 1], [1, 2, 3, 4]) },
    nodes: [
      { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: 'y', shape: S },
      { op: 'Add', inputs: ['c', 'y'], outputs: 'out', shape: S },
    ],
  });
  const [conv] = lowerToLayers(m).layers;
  assert.deepEqual(conv!.workload?.epilogue, ['bias']);
  assert.deepEqual(values(conv!.params.bias), Float64Array.of(2, 3, 4, 5));
});

test('activations with parameters keep them on the step, not in the key', () => {
  const make = (lo: number, hi: number) =>
    fixture({
      inputs: { x: S },
      outputs: ['out'],
      constants: { w: tensor([4, 4, 1, 1]), lo: scalar(lo), hi: scalar(hi) },
      nodes: [
        { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: S },
        { op: 'Clip', inputs: ['y', 'lo', 'hi'], outputs: 'c', shape: S },
        { op: 'LeakyRelu', inputs: ['c'], outputs: 'out', shape: S, attrs: { alpha: 0.25 } },
      ],
    });
  const [six] = lowerToLayers(make(0, 6)).layers;
  const [four] = lowerToLayers(make(0, 4)).layers;
  assert.deepEqual(six!.epilogue, [
    { kind: 'activation', activation: { fn: 'clip', min: 0, max: 6 } },
    { kind: 'activation', activation: { fn: 'leaky_relu', alpha: 0.25 } },
  ]);
  assert.deepEqual(six!.workload?.epilogue, ['clip', 'leaky_relu']);
  assert.equal(six!.workload?.key, four!.workload?.key);
});

test('x·sigmoid(x) after a conv is fused as SiLU', () => {
  const m = fixture({
    inputs: { x: S },
    outputs: ['out'],
    constants: { w: tensor([4, 4, 1, 1]) },
    nodes: [
      { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: S },
      { op: 'Sigmoid', inputs: ['y'], outputs: 's', shape: S },
      { op: 'Mul', inputs: ['s', 'y'], outputs: 'out', shape: S },
    ],
  });
  const g = lowerToLayers(m);
  assert.equal(g.layers.length, 1);
  assert.deepEqual(g.layers[0]!.workload?.epilogue, ['silu']);
});

for (const [label, alpha, fused] of [
  ['1/6 (PyTorch HardSwish)', 1 / 6, true],
  ['0.2 (not HardSwish)', 0.2, false],
] as const) {
  test(`x·HardSigmoid(x) with alpha ${label} after a conv ${fused ? 'fuses as hard_swish' : 'stays a separate gate'}`, () => {
    const m = fixture({
      inputs: { x: S },
      outputs: ['out'],
      constants: { w: tensor([4, 4, 1, 1]) },
      nodes: [
        { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: S },
        { op: 'HardSigmoid', inputs: ['y'], outputs: 'g', shape: S, attrs: { alpha: { float: alpha }, beta: { float: 0.5 } } },
        { op: 'Mul', inputs: ['y', 'g'], outputs: 'out', shape: S },
      ],
    });
    const g = lowerToLayers(m);
    if (fused) {
      assert.equal(g.layers.length, 1);
      assert.deepEqual(g.layers[0]!.workload?.epilogue, ['hard_swish']);
    } else {
      // not HardSwish: the gate and the multiply run as one elementwise chain (x·hardsigmoid(x)) after the conv
      assert.deepEqual(
        g.layers.map((l) => [l.op, l.attrs['fused']]),
        [
          ['conv2d', undefined],
          ['elementwise_chain', 'hardsigmoid+mul'],
        ],
      );
    }
  });
}

test('no fusion across a value that something else reads or that is a graph output', () => {
  const nodes: FixtureNode[] = [
    { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: S },
    { op: 'Relu', inputs: ['y'], outputs: 'r', shape: S },
  ];
  const twoReaders = fixture({
    inputs: { x: S },
    outputs: ['r', 'm'],
    constants: { w: tensor([4, 4, 1, 1]) },
    nodes: [...nodes, { op: 'Mul', inputs: ['y', 'y'], outputs: 'm', shape: S }],
  });
  assert.deepEqual(
    lowerToLayers(twoReaders).layers.map((l) => l.op),
    ['conv2d', 'relu', 'mul'],
  );
  const visible = fixture({ inputs: { x: S }, outputs: ['y', 'r'], constants: { w: tensor([4, 4, 1, 1]) }, nodes });
  const g = lowerToLayers(visible);
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['conv2d', 'relu'],
  );
  assert.deepEqual(g.layers[0]!.epilogue, []);
});
