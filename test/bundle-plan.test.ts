/**
 * The graph plan: one blocked layout for conv chains, reorders only where a consumer needs another
 * layout, in-place views, and an arena where no two live values share a byte.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assignArena } from '../src/bundle/arena.js';
import { canonicalLayout, layoutElements } from '../src/bundle/layout.js';
import { buildGraphPlan, type GraphPlan, type LayerChoice } from '../src/bundle/plan.js';
import { lowerToLayers } from '../src/ir/lower.js';
import type { LayerGraph } from '../src/ir/layer.js';
import { loadModel } from '../src/onnx/load.js';
import type { NodeSpec } from '../src/onnx/encode.js';
import { f32, writeModel } from './onnx-test-models.js';

async function graphOf(nodes: NodeSpec[], inits: [string, ReturnType<typeof f32>][], input: number[]): Promise<LayerGraph> {
  const path = writeModel({
    inputs: [{ name: 'input', dtype: 'float32', shape: input }], outputs: [{ name: 'output', dtype: 'float32' }], initializers: inits, nodes,
  });
  return lowerToLayers(await loadModel(path));
}

const choose = (g: LayerGraph, vec = 16): Map<number, LayerChoice> =>
  new Map(g.layers.filter((l) => l.tunable).map((l) => [l.index, { vec, versions: [`v${l.index}`] }]));

/** No two values alive at the same step may share a byte, unless one is an in-place view of the other. */
function assertArenaSound(p: GraphPlan) {
  const alias = new Map<number, number>();
  for (const s of p.steps) if (s.op === 'layer' && s.inPlace) alias.set(s.outputs[0]!, s.inputs[0]!);
  const root = (v: number): number => (alias.has(v) ? root(alias.get(v)!) : v);
  const life = new Map<number, [number, number]>();
  const touch = (v: number, at: number) => { const r = root(v); const l = life.get(r) ?? [at, at]; life.set(r, [Math.min(l[0], at), Math.max(l[1], at)]); };
  p.inputs.forEach((i) => touch(i.value, -1));
  p.steps.forEach((s) => [...s.inputs, ...s.outputs].forEach((v) => touch(v, s.index)));
  p.outputs.forEach((o) => touch(o.value, p.steps.length));
  const roots = p.values.filter((v) => root(v.id) === v.id);
  for (const v of p.values) {
    assert.equal(v.offset % 64, 0);
    assert.ok(v.offset + v.bytes <= p.arenaBytes);
    assert.equal(v.offset, p.values[root(v.id)]!.offset, 'views share their source bytes');
  }
  for (const a of roots) for (const b of roots) {
    if (a.id >= b.id) continue;
    const [la, lb] = [life.get(a.id)!, life.get(b.id)!];
    const together = la[0] <= lb[1] && lb[0] <= la[1];
    const shareBytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
    assert.ok(!(together && shareBytes), `values ${a.id} and ${b.id} are alive together and overlap`);
  }
}

test('conv → relu → flatten → gemm: reorders at the input, before flatten and at the output; flatten in place', async () => {
  const g = await graphOf([
    { op: 'Conv', inputs: ['input', 'w', 'b'], outputs: ['c'], attrs: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } },
    { op: 'Relu', inputs: ['c'], outputs: ['r'] },
    { op: 'Flatten', inputs: ['r'], outputs: ['f'], attrs: { axis: 1 } },
    { op: 'Gemm', inputs: ['f', 'fw', 'fb'], outputs: ['output'], attrs: { transB: 1 } },
  ], [['w', f32([8, 3, 3, 3])], ['b', f32([8])], ['fw', f32([10, 512])], ['fb', f32([10])]], [1, 3, 8, 8]);
  const p = buildGraphPlan(g, choose(g), 16);
  const shape = p.steps.map((s) => (s.op === 'reorder' ? `reorder ${s.from}>${s.to}` : `${g.layers[s.layer]!.op} ${s.layout}${s.inPlace ? ' inplace' : ''}`));
  assert.deepEqual(shape, ['reorder nchw>nchw16c', 'conv2d nchw16c', 'reorder nchw16c>nchw', 'flatten nchw inplace', 'dense rows16', 'reorder rows16>nchw']);
  const convStep = p.steps[1]!;
  assert.equal(p.values[convStep.inputs[0]!]!.bytes, 16 * 8 * 8 * 4, 'input padded to 16 channels');
  assert.deepEqual(p.outputs.map((o) => p.values[o.value]!.layout), ['nchw']);
  assert.equal(p.values[p.outputs[0]!.value]!.bytes, 40);
  assertArenaSound(p);
});

test('a conv chain stays blocked through pooling and a residual add; only graph edges reorder', async () => {
  const g = await graphOf([
    { op: 'Conv', inputs: ['input', 'w1'], outputs: ['a'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
    { op: 'MaxPool', inputs: ['a'], outputs: ['p'], attrs: { kernel_shape: [2, 2], strides: [2, 2] } },
    { op: 'Conv', inputs: ['p', 'w2'], outputs: ['b'], attrs: { kernel_shape: [1, 1] } },
    { op: 'Relu', inputs: ['b'], outputs: ['br'] },
    { op: 'Conv', inputs: ['br', 'w3'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
    { op: 'Add', inputs: ['c', 'p'], outputs: ['s'] },
    { op: 'GlobalAveragePool', inputs: ['s'], outputs: ['output'] },
  ], [['w1', f32([32, 3, 3, 3])], ['w2', f32([32, 32, 1, 1])], ['w3', f32([32, 32, 1, 1])]], [1, 3, 16, 16]);
  const p = buildGraphPlan(g, choose(g), 16);
  const reorders = p.steps.filter((s) => s.op === 'reorder');
  assert.equal(reorders.length, 1, 'only the graph input is reordered (the pooled 32-channel 1x1 output is already natural)');
  const pool = p.steps.find((s) => s.op === 'layer' && g.layers[s.layer]!.op === 'maxpool')!;
  assert.equal(pool.op === 'layer' && pool.layout, 'nchw16c');
  assertArenaSound(p);
});

test('a family without the target width runs at its own width, with reorders around it', async () => {
  const g = await graphOf([
    { op: 'Conv', inputs: ['input', 'w'], outputs: ['output'], attrs: { kernel_shape: [1, 1] } },
  ], [['w', f32([24, 8, 1, 1])]], [1, 8, 4, 4]);
  const p = buildGraphPlan(g, choose(g, 8), 16);
  assert.deepEqual(p.steps.map((s) => (s.op === 'reorder' ? `${s.from}>${s.to}` : s.layout)), ['nchw>nchw8c', 'nchw8c', 'nchw8c>nchw']);
  assertArenaSound(p);
});

test('layouts that put bytes in the same place are one layout', () => {
  assert.equal(canonicalLayout([1, 2048, 1, 1], 'nchw16c'), 'nchw');
  assert.equal(canonicalLayout([1, 24, 1, 1], 'nchw16c'), 'nchw16c');
  assert.equal(canonicalLayout([384, 1024], 'rows16'), 'nchw');
  assert.equal(canonicalLayout([1, 10], 'rows16'), 'rows16');
  assert.equal(layoutElements([1, 10], 'rows16'), 16);
  assert.equal(layoutElements([2, 3, 5, 5], 'nchw8c'), 2 * 8 * 25);
});

test('the arena reuses bytes of dead values and never overlaps live ones', () => {
  const a = assignArena([
    { id: 0, bytes: 100, first: -1, last: 0 },
    { id: 1, bytes: 100, first: 0, last: 1 },
    { id: 2, bytes: 100, first: 1, last: 2 },
  ]);
  assert.equal(a.offsets.get(0), a.offsets.get(2), 'value 2 reuses value 0');
  assert.notEqual(a.offsets.get(0), a.offsets.get(1));
  assert.equal(a.bytes, 256);
});
