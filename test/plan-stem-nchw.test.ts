/**
 * The graph plan feeds a small-cin conv (an RGB stem: at most 4 input channels, see
 * space/problem.ts smallCinInput) a value that exists in the natural layout as it is — in practice
 * the graph input — so no NCHW → NCHW[V]c reorder runs for it (its kernel's `_run_nchw` reads
 * plain NCHW). A reorder stays only for a reader that needs the blocked form, once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildGraphPlan, type GraphPlan, type LayerChoice } from '../src/bundle/plan.js';
import { lowerToLayers } from '../src/ir/lower.js';
import type { LayerGraph } from '../src/ir/layer.js';
import { loadModel } from '../src/onnx/load.js';
import type { NodeSpec } from '../src/onnx/encode.js';
import { f32, writeModel } from './onnx-test-models.js';

async function graphOf(nodes: NodeSpec[], inits: [string, ReturnType<typeof f32>][], input: number[]): Promise<LayerGraph> {
  const path = writeModel({
    inputs: [{ name: 'input', dtype: 'float32', shape: input }],
    outputs: [{ name: 'output', dtype: 'float32' }],
    initializers: inits,
    nodes,
  });
  return lowerToLayers(await loadModel(path));
}

const choose = (g: LayerGraph, vec: number): Map<number, LayerChoice> =>
  new Map(g.layers.filter((l) => l.tunable).map((l) => [l.index, { vec, versions: [`v${l.index}`] }]));

/** Each step as `op layout<-input layouts`, reorders as `reorder from>to`. */
const describe = (g: LayerGraph, p: GraphPlan) =>
  p.steps.map((s) =>
    s.op === 'reorder'
      ? `reorder ${s.from}>${s.to}`
      : `${g.layers[s.layer]!.op} ${s.layout}<-${s.inputs.map((i) => p.values[i]!.layout).join(',')}`,
  );

const conv = (
  input: string,
  w: string,
  output: string,
  attrs: NodeSpec['attrs'] = { kernel_shape: [3, 3], pads: [1, 1, 1, 1] },
): NodeSpec => ({ op: 'Conv', inputs: [input, w], outputs: [output], attrs });

for (const vec of [16, 8]) {
  test(`V=${vec}: a 3-channel stem reads the graph input itself; no input reorder`, async () => {
    const g = await graphOf(
      [conv('input', 'w', 'c'), { op: 'MaxPool', inputs: ['c'], outputs: ['output'], attrs: { kernel_shape: [2, 2] } }],
      [['w', f32([24, 3, 3, 3])]],
      [2, 3, 9, 7],
    );
    const p = buildGraphPlan(g, choose(g, vec), vec);
    assert.deepEqual(describe(g, p), [`conv2d nchw${vec}c<-nchw`, `maxpool nchw${vec}c<-nchw${vec}c`, `reorder nchw${vec}c>nchw`]);
    assert.equal(p.steps[0]!.inputs[0], p.inputs[0]!.value, 'the stem reads the graph input value');
    assert.equal(p.values[p.inputs[0]!.value]!.bytes, 2 * 3 * 9 * 7 * 4);
  });
}

test('a second reader that needs the input blocked keeps exactly one reorder, for that reader only', async () => {
  const g = await graphOf(
    [
      conv('input', 'w', 'a'),
      { op: 'Conv', inputs: ['input', 'dw'], outputs: ['d'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], group: 3 } },
      conv('input', 'w2', 'b'),
      conv('d', 'pw', 'e', { kernel_shape: [1, 1] }),
      { op: 'Add', inputs: ['a', 'e'], outputs: ['s'] },
      { op: 'Add', inputs: ['s', 'b'], outputs: ['output'] },
    ],
    [
      ['w', f32([16, 3, 3, 3])],
      ['dw', f32([3, 1, 3, 3])],
      ['w2', f32([16, 3, 3, 3])],
      ['pw', f32([16, 3, 1, 1])],
    ],
    [1, 3, 8, 8],
  );
  const p = buildGraphPlan(g, choose(g, 16), 16);
  const steps = describe(g, p);
  assert.deepEqual(
    steps.filter((s) => s.startsWith('reorder')),
    ['reorder nchw>nchw16c', 'reorder nchw16c>nchw'],
    steps.join('; '),
  );
  const reorder = p.steps.find((s) => s.op === 'reorder' && s.from === 'nchw')!;
  const readers = p.steps.filter((s) => s.inputs.includes(reorder.outputs[0]));
  assert.deepEqual(
    readers.map((s) => s.op === 'layer' && g.layers[s.layer]!.op),
    ['conv2d'],
    'only the depthwise conv reads the blocked copy',
  );
  const depthwise = readers[0]!.op === 'layer' ? g.layers[readers[0]!.layer]!.workload : undefined;
  assert.equal(depthwise?.op === 'conv2d' && depthwise.groups, 3);
  const stems = p.steps.filter((s) => s.op === 'layer' && s.inputs[0] === p.inputs[0]!.value);
  assert.equal(stems.length, 2, 'both 3-channel convs of the input read it as it is');
  // The 1x1 conv over the depthwise output is small-cin too, but its input exists only blocked: it gathers it itself.
  const pointwise = p.steps.find((s) => s.op === 'layer' && p.values[s.outputs[0]!]!.name === 'e')!;
  assert.equal(p.values[pointwise.inputs[0]!]!.layout, 'nchw16c');
});

test('a conv with more than 4 input channels still reads nchw{V}c through a reorder', async () => {
  const g = await graphOf([conv('input', 'w', 'output')], [['w', f32([16, 5, 3, 3])]], [1, 5, 6, 6]);
  assert.deepEqual(describe(g, buildGraphPlan(g, choose(g, 16), 16)), [
    'reorder nchw>nchw16c',
    'conv2d nchw16c<-nchw16c',
    'reorder nchw16c>nchw',
  ]);
});

test('a natural value that is not the graph input is read as it is too (a 4-channel transpose output)', async () => {
  const g = await graphOf(
    [
      { op: 'Transpose', inputs: ['input'], outputs: ['t'], attrs: { perm: [0, 3, 1, 2] } },
      conv('t', 'w', 'output', { kernel_shape: [1, 1] }),
    ],
    [['w', f32([16, 4, 1, 1])]],
    [1, 6, 5, 4],
  );
  assert.deepEqual(describe(g, buildGraphPlan(g, choose(g, 16), 16)), [
    'transpose nchw<-nchw',
    'conv2d nchw16c<-nchw',
    'reorder nchw16c>nchw',
  ]);
});
