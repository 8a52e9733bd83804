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
import { f32, i64, writeModel } from './onnx-test-models.js';

async function graphOf(nodes: NodeSpec[], inits: [string, ReturnType<typeof f32>][], input: number[]): Promise<LayerGraph> {
  const path = writeModel({
    inputs: [{ name: 'input', dtype: 'float32', shape: input }],
    outputs: [{ name: 'output', dtype: 'float32' }],
    initializers: inits,
    nodes,
  });
  return lowerToLayers(await loadModel(path));
}

const choose = (g: LayerGraph, vec = 16): Map<number, LayerChoice> =>
  new Map(g.layers.filter((l) => l.tunable).map((l) => [l.index, { vec, versions: [`v${l.index}`] }]));

/** No two values alive at the same step may share a byte, unless one is a view inside the other. */
function assertArenaSound(p: GraphPlan) {
  const root = (v: number): { id: number; at: number } => {
    const view = p.values[v]!.viewOf;
    if (!view) return { id: v, at: 0 };
    const r = root(view.value);
    return { id: r.id, at: r.at + view.byteOffset };
  };
  const life = new Map<number, [number, number]>();
  const touch = (v: number, at: number) => {
    const r = root(v).id;
    const l = life.get(r) ?? [at, at];
    life.set(r, [Math.min(l[0], at), Math.max(l[1], at)]);
  };
  p.inputs.forEach((i) => touch(i.value, -1));
  p.steps.forEach((s) => [...s.inputs, ...s.outputs].forEach((v) => touch(v, s.index)));
  p.outputs.forEach((o) => touch(o.value, p.steps.length));
  const roots = p.values.filter((v) => v.viewOf === undefined);
  for (const v of p.values) {
    const r = root(v.id);
    assert.ok(v.offset + v.bytes <= p.arenaBytes);
    assert.equal(v.offset, p.values[r.id]!.offset + r.at, 'a view sits at its root plus its offset');
    assert.ok(r.at + v.bytes <= p.values[r.id]!.bytes, 'a view lies inside its root');
    if (v.viewOf === undefined) assert.equal(v.offset % 64, 0);
  }
  for (const a of roots)
    for (const b of roots) {
      if (a.id >= b.id) continue;
      const [la, lb] = [life.get(a.id)!, life.get(b.id)!];
      const together = la[0] <= lb[1] && lb[0] <= la[1];
      const shareBytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      assert.ok(!(together && shareBytes), `values ${a.id} and ${b.id} are alive together and overlap`);
    }
}

const describe = (g: LayerGraph, p: GraphPlan) =>
  p.steps.map((s) =>
    s.op === 'reorder' ? `reorder ${s.from}>${s.to}` : `${g.layers[s.layer]!.op} ${s.layout}${s.inPlace ? ' inplace' : ''}`,
  );

test('conv → relu → flatten → gemm: the RGB stem reads the graph input as it is; reorders before flatten and at the output; flatten in place', async () => {
  const g = await graphOf(
    [
      { op: 'Conv', inputs: ['input', 'w', 'b'], outputs: ['c'], attrs: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } },
      { op: 'Relu', inputs: ['c'], outputs: ['r'] },
      { op: 'Flatten', inputs: ['r'], outputs: ['f'], attrs: { axis: 1 } },
      { op: 'Gemm', inputs: ['f', 'fw', 'fb'], outputs: ['output'], attrs: { transB: 1 } },
    ],
    [
      ['w', f32([8, 3, 3, 3])],
      ['b', f32([8])],
      ['fw', f32([10, 512])],
      ['fb', f32([10])],
    ],
    [1, 3, 8, 8],
  );
  const p = buildGraphPlan(g, choose(g), 16);
  const shape = p.steps.map((s) =>
    s.op === 'reorder' ? `reorder ${s.from}>${s.to}` : `${g.layers[s.layer]!.op} ${s.layout}${s.inPlace ? ' inplace' : ''}`,
  );
  assert.deepEqual(shape, ['conv2d nchw16c', 'reorder nchw16c>nchw', 'flatten nchw inplace', 'dense rows16', 'reorder rows16>nchw']);
  const convStep = p.steps[0]!;
  assert.equal(convStep.inputs[0], p.inputs[0]!.value, 'the stem reads the graph input value itself');
  assert.equal(p.values[convStep.inputs[0]!]!.bytes, 3 * 8 * 8 * 4, 'unpadded: 3 channels');
  assert.deepEqual(
    p.outputs.map((o) => p.values[o.value]!.layout),
    ['nchw'],
  );
  assert.equal(p.values[p.outputs[0]!.value]!.bytes, 40);
  assertArenaSound(p);
});

test('a conv chain stays blocked through pooling and a residual add; nothing reorders', async () => {
  const g = await graphOf(
    [
      { op: 'Conv', inputs: ['input', 'w1'], outputs: ['a'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
      { op: 'MaxPool', inputs: ['a'], outputs: ['p'], attrs: { kernel_shape: [2, 2], strides: [2, 2] } },
      { op: 'Conv', inputs: ['p', 'w2'], outputs: ['b'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Relu', inputs: ['b'], outputs: ['br'] },
      { op: 'Conv', inputs: ['br', 'w3'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Add', inputs: ['c', 'p'], outputs: ['s'] },
      { op: 'GlobalAveragePool', inputs: ['s'], outputs: ['output'] },
    ],
    [
      ['w1', f32([32, 3, 3, 3])],
      ['w2', f32([32, 32, 1, 1])],
      ['w3', f32([32, 32, 1, 1])],
    ],
    [1, 3, 16, 16],
  );
  const p = buildGraphPlan(g, choose(g), 16);
  const reorders = p.steps.filter((s) => s.op === 'reorder');
  assert.equal(reorders.length, 0, 'the RGB stem reads the graph input as it is and the pooled 32-channel 1x1 output is already natural');
  const pool = p.steps.find((s) => s.op === 'layer' && g.layers[s.layer]!.op === 'maxpool')!;
  assert.equal(pool.op === 'layer' && pool.layout, 'nchw16c');
  assertArenaSound(p);
});

test('pooled features off the vector grid: blocked into the Gemm through a rows view, natural when they are the output', async () => {
  const head = (tail: NodeSpec[], fw: [string, ReturnType<typeof f32>][]) =>
    graphOf(
      [
        { op: 'Conv', inputs: ['input', 'w'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
        { op: 'GlobalAveragePool', inputs: ['c'], outputs: ['g'] },
        ...tail,
      ],
      [['w', f32([40, 3, 1, 1])], ...fw],
      [1, 3, 4, 4],
    );
  const gemm = await head(
    [
      { op: 'Flatten', inputs: ['g'], outputs: ['f'], attrs: { axis: 1 } },
      { op: 'Gemm', inputs: ['f', 'fw', 'fb'], outputs: ['output'], attrs: { transB: 1 } },
    ],
    [
      ['fw', f32([10, 40])],
      ['fb', f32([10])],
    ],
  );
  const p = buildGraphPlan(gemm, choose(gemm), 16);
  assert.deepEqual(describe(gemm, p), [
    'conv2d nchw16c',
    'globalaveragepool nchw16c',
    'flatten rows16 inplace',
    'dense rows16',
    'reorder rows16>nchw',
  ]);
  const flat = p.values[p.steps[2]!.outputs[0]!]!;
  assert.deepEqual(
    [flat.layout, flat.bytes, flat.viewOf?.byteOffset],
    ['rows16', 48 * 4, 0],
    '[1][48]: channel c at c, padded channels zero',
  );
  assertArenaSound(p);
  // At V=8 the 40 channels are on the grid: both layouts are natural, nothing changes.
  const p8 = buildGraphPlan(gemm, choose(gemm, 8), 8);
  assert.deepEqual(describe(gemm, p8), [
    'conv2d nchw8c',
    'globalaveragepool nchw8c',
    'flatten nchw inplace',
    'dense rows8',
    'reorder rows8>nchw',
  ]);
  // A ReduceMean over H, W without keepdims (torchvision's MNASNet) is a global pool to [N, C]: it writes rows16 itself.
  const mean = await graphOf(
    [
      { op: 'Conv', inputs: ['input', 'w'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
      { op: 'ReduceMean', inputs: ['c'], outputs: ['g'], attrs: { axes: [2, 3], keepdims: 0 } },
      { op: 'Gemm', inputs: ['g', 'fw', 'fb'], outputs: ['output'], attrs: { transB: 1 } },
    ],
    [
      ['w', f32([40, 3, 1, 1])],
      ['fw', f32([10, 40])],
      ['fb', f32([10])],
    ],
    [1, 3, 4, 4],
  );
  const pm = buildGraphPlan(mean, choose(mean), 16);
  assert.deepEqual(describe(mean, pm), ['conv2d nchw16c', 'globalaveragepool nchw16c', 'dense rows16', 'reorder rows16>nchw']);
  assert.equal(pm.values[pm.steps[1]!.outputs[0]!]!.layout, 'rows16');
  assertArenaSound(pm);
  const out = await head([{ op: 'Flatten', inputs: ['g'], outputs: ['output'], attrs: { axis: 1 } }], []);
  assert.deepEqual(
    describe(out, buildGraphPlan(out, choose(out), 16)),
    ['conv2d nchw16c', 'globalaveragepool nchw16c', 'flatten nchw inplace'],
    'a natural reader: the pool writes [N][C]',
  );
});

test('the pooled-rows view: a batch of two, Reshape and Squeeze alike; a squeeze-excite conv reads the pooled value with no reorder', async () => {
  const pooled = (view: NodeSpec[], extra: [string, ReturnType<typeof f32> | ReturnType<typeof i64>][] = []) =>
    graphOf(
      [
        { op: 'Conv', inputs: ['input', 'w'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
        { op: 'GlobalAveragePool', inputs: ['c'], outputs: ['g'] },
        ...view,
        { op: 'Gemm', inputs: ['f', 'fw', 'fb'], outputs: ['output'], attrs: { transB: 1 } },
      ],
      [['w', f32([40, 3, 1, 1])], ['fw', f32([10, 40])], ['fb', f32([10])], ...extra],
      [2, 3, 4, 4],
    );
  const cases: [string, Promise<LayerGraph>][] = [
    ['flatten', pooled([{ op: 'Flatten', inputs: ['g'], outputs: ['f'], attrs: { axis: 1 } }])],
    ['reshape', pooled([{ op: 'Reshape', inputs: ['g', 'to'], outputs: ['f'] }], [['to', i64([2, 40])]])],
    ['squeeze', pooled([{ op: 'Squeeze', inputs: ['g', 'axes'], outputs: ['f'] }], [['axes', i64([2, 3])]])],
  ];
  for (const [op, graph] of cases) {
    const g = await graph;
    const p = buildGraphPlan(g, choose(g), 16);
    assert.deepEqual(
      describe(g, p),
      ['conv2d nchw16c', 'globalaveragepool nchw16c', `${op} rows16 inplace`, 'dense rows16', 'reorder rows16>nchw'],
      op,
    );
    const view = p.values[p.steps[2]!.outputs[0]!]!;
    assert.deepEqual([view.shape, view.bytes], [[2, 40], 2 * 48 * 4], `${op}: [2][48], each row padded to 48`);
    assertArenaSound(p);
  }
  const se = await graphOf(
    [
      { op: 'Conv', inputs: ['input', 'w'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
      { op: 'GlobalAveragePool', inputs: ['c'], outputs: ['g'] },
      { op: 'Conv', inputs: ['g', 'w2'], outputs: ['s'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Sigmoid', inputs: ['s'], outputs: ['gate'] },
      { op: 'Mul', inputs: ['c', 'gate'], outputs: ['output'] },
    ],
    [
      ['w', f32([40, 3, 1, 1])],
      ['w2', f32([40, 40, 1, 1])],
    ],
    [1, 3, 4, 4],
  );
  const ps = buildGraphPlan(se, choose(se), 16);
  assert.deepEqual(
    describe(se, ps).filter((s) => s.startsWith('reorder')),
    ['reorder nchw16c>nchw'],
    'the 40-channel pooled value goes to the gate conv blocked: only the graph output reorders',
  );
});

test('a family without the target width runs at its own width, with reorders around it', async () => {
  const g = await graphOf(
    [{ op: 'Conv', inputs: ['input', 'w'], outputs: ['output'], attrs: { kernel_shape: [1, 1] } }],
    [['w', f32([24, 8, 1, 1])]],
    [1, 8, 4, 4],
  );
  const p = buildGraphPlan(g, choose(g, 8), 16);
  assert.deepEqual(
    p.steps.map((s) => (s.op === 'reorder' ? `${s.from}>${s.to}` : s.layout)),
    ['nchw>nchw8c', 'nchw8c', 'nchw8c>nchw'],
  );
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

test('a DenseNet block: every concat is a view of the next (prefixes), BN-ReLU chains stay blocked, no copy and no reorder inside', async () => {
  const nodes: NodeSpec[] = [{ op: 'Conv', inputs: ['input', 'w0'], outputs: ['f0'], attrs: { kernel_shape: [1, 1] } }];
  const inits: [string, ReturnType<typeof f32>][] = [['w0', f32([16, 3, 1, 1])]];
  let features = ['f0'];
  for (let i = 1; i <= 3; i++) {
    const cin = 16 * i;
    nodes.push(
      { op: 'Concat', inputs: [...features], outputs: [`c${i}`], attrs: { axis: 1 } },
      { op: 'BatchNormalization', inputs: [`c${i}`, `g${i}`, `b${i}`, `m${i}`, `v${i}`], outputs: [`n${i}`] },
      { op: 'Relu', inputs: [`n${i}`], outputs: [`r${i}`] },
      { op: 'Conv', inputs: [`r${i}`, `w${i}`], outputs: [`f${i}`], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
    );
    inits.push([`g${i}`, f32([cin])], [`b${i}`, f32([cin])], [`m${i}`, f32([cin])], [`v${i}`, f32([cin])], [`w${i}`, f32([16, cin, 3, 3])]);
    features = [...features, `f${i}`];
  }
  nodes.push({ op: 'Concat', inputs: features, outputs: ['output'], attrs: { axis: 1 } });
  const g = await graphOf(nodes, inits, [1, 3, 8, 8]);
  const p = buildGraphPlan(g, choose(g), 16);
  const shape = describe(g, p);
  assert.deepEqual(
    shape.filter((s) => s.startsWith('reorder')),
    ['reorder nchw16c>nchw'],
  );
  assert.deepEqual(
    shape.filter((s) => s.startsWith('concat')),
    Array(4).fill('concat nchw16c inplace'),
  );
  assert.deepEqual(
    shape.filter((s) => s.startsWith('elementwise_chain')),
    Array(3).fill('elementwise_chain nchw16c'),
  );
  const last = p.values.find((v) => v.name === 'output' && v.layout === 'nchw16c')!;
  for (const name of ['f0', 'f1', 'f2', 'f3', 'c1', 'c2', 'c3']) {
    const v = p.values.find((x) => x.name === name)!;
    assert.ok(v.viewOf, `${name} lives inside the block's last concat`);
    assert.ok(v.offset >= last.offset && v.offset + v.bytes <= last.offset + last.bytes);
  }
  assertArenaSound(p);
});

test('a concat input off the V grid is copied; the aligned ones still go straight into their slice', async () => {
  const g = await graphOf(
    [
      { op: 'Conv', inputs: ['input', 'wa'], outputs: ['a'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Conv', inputs: ['input', 'wb'], outputs: ['b'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Conv', inputs: ['input', 'wc'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Concat', inputs: ['a', 'b', 'c'], outputs: ['cat'], attrs: { axis: 1 } },
      { op: 'Relu', inputs: ['cat'], outputs: ['output'] },
    ],
    [
      ['wa', f32([16, 4, 1, 1])],
      ['wb', f32([12, 4, 1, 1])],
      ['wc', f32([8, 4, 1, 1])],
    ],
    [1, 4, 5, 5],
  );
  const p = buildGraphPlan(g, choose(g), 16);
  assert.deepEqual(
    describe(g, p).filter((s) => s.startsWith('concat')),
    ['concat nchw16c'],
    'one input needs copying: the step stays',
  );
  const view = (name: string) => p.values.find((v) => v.name === name && v.layout === 'nchw16c')!.viewOf;
  assert.ok(view('a'), 'channels 0..15: in place');
  assert.equal(view('b'), undefined, 'channels 16..27 end off the grid: copied');
  assert.equal(view('c'), undefined, 'channels 28..35 start off the grid: copied');
  assertArenaSound(p);
});

test('a batch of two keeps concat copies (a slice of a batched value is not contiguous) and channel splits stay blocked', async () => {
  const g = await graphOf(
    [
      { op: 'Conv', inputs: ['input', 'w'], outputs: ['a'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Split', inputs: ['a', 'sp'], outputs: ['p', 'q'], attrs: { axis: 1 } },
      { op: 'Concat', inputs: ['q', 'p'], outputs: ['output'], attrs: { axis: 1 } },
    ],
    [
      ['w', f32([32, 3, 1, 1])],
      ['sp', { dtype: 'int64', dims: [2], data: new Float64Array([16, 16]) }],
    ],
    [2, 3, 4, 4],
  );
  const p = buildGraphPlan(g, choose(g), 16);
  assert.deepEqual(describe(g, p), ['conv2d nchw16c', 'split nchw16c', 'concat nchw16c', 'reorder nchw16c>nchw']);
  assert.ok(p.values.every((v) => v.viewOf === undefined));
  assertArenaSound(p);
});

test('a batch-1 channel split is two views of its input', async () => {
  const g = await graphOf(
    [
      { op: 'Conv', inputs: ['input', 'w'], outputs: ['a'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Split', inputs: ['a', 'sp'], outputs: ['p', 'q'], attrs: { axis: 1 } },
      { op: 'Sub', inputs: ['p', 'q'], outputs: ['output'] },
    ],
    [
      ['w', f32([32, 3, 1, 1])],
      ['sp', { dtype: 'int64', dims: [2], data: new Float64Array([16, 16]) }],
    ],
    [1, 3, 4, 4],
  );
  const p = buildGraphPlan(g, choose(g), 16);
  assert.deepEqual(describe(g, p), ['conv2d nchw16c', 'split nchw16c inplace', 'sub nchw16c', 'reorder nchw16c>nchw']);
  const a = p.values.find((v) => v.name === 'a')!;
  assert.deepEqual(
    ['p', 'q'].map((n) => p.values.find((v) => v.name === n)!.viewOf),
    [
      { value: a.id, byteOffset: 0 },
      { value: a.id, byteOffset: 16 * 16 * 4 },
    ],
  );
  assertArenaSound(p);
});
