/**
 * Channel gathers write their outputs in source order where every reader absorbs it (src/ir/gather-order.ts):
 * two ShuffleNet units and a downsampling unit (a groups=1 conv, a depthwise conv passing the order
 * on to its 1x1 conv), compiled and run at 1 and 2 threads against ONNX Runtime; and the model's
 * order kept where a reader cannot absorb it (an elementwise op, a graph output); a gather with two
 * outputs reordered at an offset, through generated kernels at 1 and 2 threads.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { Tensor } from '../src/onnx/model.js';
import { encodeModel, type ModelSpec, type NodeSpec } from '../src/onnx/encode.js';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { lowerToLayers } from '../src/ir/lower.js';
import { sourceOrder } from '../src/ir/gather-order.js';
import type { LayerGraph } from '../src/ir/layer.js';
import { loadBundle } from '../src/runtime/session.js';
import { compileFixture } from './compile-fixture.js';
import { assertClose, runAgainstOrt, seeded } from './runtime-harness.js';
import { matchesOrt, model as oneInputModel, prepare } from './runtime-kernels-fixture.js';

const C = 20;
const HW = 6;
const ints = (values: number[]): Tensor => ({ dtype: 'int64', dims: [values.length], data: new Float64Array(values) });
const weights = (dims: number[], seed: number): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    -0.5,
    0.5,
  ),
});

/** concat(a, b) → channel shuffle (groups 2); `lo`/`hi` take the two halves when given, else the shuffle is `y`. */
function shuffleTail(a: string, b: string, tag: string, out: { lo: string; hi: string } | { y: string }): NodeSpec[] {
  const y = 'y' in out ? out.y : `sh${tag}`;
  return [
    { op: 'Concat', inputs: [a, b], outputs: [`cat${tag}`], attrs: { axis: 1 } },
    { op: 'Reshape', inputs: [`cat${tag}`, 'to5'], outputs: [`r5${tag}`] },
    { op: 'Transpose', inputs: [`r5${tag}`], outputs: [`t5${tag}`], attrs: { perm: [0, 2, 1, 3, 4] } },
    { op: 'Reshape', inputs: [`t5${tag}`, 'to4'], outputs: [y] },
    ...('lo' in out
      ? [
          { op: 'Slice', inputs: [y, 's0', 'e0', 'ax'], outputs: [out.lo] },
          { op: 'Slice', inputs: [y, 'e0', 'e1', 'ax'], outputs: [out.hi] },
        ]
      : []),
  ];
}

const conv1x1 = (x: string, w: string, y: string): NodeSpec[] => [
  { op: 'Conv', inputs: [x, w, `${w}_b`], outputs: [`${y}_c`], attrs: { kernel_shape: [1, 1] } },
  { op: 'Relu', inputs: [`${y}_c`], outputs: [y] },
];

const shapeInits: [string, Tensor][] = [
  ['to5', ints([1, 2, C, HW, HW])],
  ['to4', ints([1, 2 * C, HW, HW])],
  ['s0', ints([0])],
  ['e0', ints([C])],
  ['e1', ints([2 * C])],
  ['ax', ints([1])],
];

/** Two stride-1 ShuffleNet units, then a downsampling unit whose input feeds a depthwise conv and a 1x1 conv. */
function shuffleNetSpec(): ModelSpec {
  const w = (name: string, dims: number[], seed: number): [string, Tensor][] => [
    [name, weights(dims, seed)],
    [`${name}_b`, weights([dims[0]!], seed + 1)],
  ];
  return {
    inputs: [{ name: 'input', dtype: 'float32', shape: [1, 2 * C, HW, HW] }],
    outputs: [{ name: 'output', dtype: 'float32' }],
    initializers: [
      ...shapeInits,
      ...w('w1', [C, C, 1, 1], 3),
      ...w('w2', [C, C, 1, 1], 5),
      ...w('wd', [2 * C, 1, 3, 3], 7),
      ...w('wp', [24, 2 * C, 1, 1], 9),
      ...w('wq', [24, 2 * C, 1, 1], 11),
    ],
    nodes: [
      { op: 'Slice', inputs: ['input', 's0', 'e0', 'ax'], outputs: ['a1'] },
      { op: 'Slice', inputs: ['input', 'e0', 'e1', 'ax'], outputs: ['b1'] },
      ...conv1x1('b1', 'w1', 'r1'),
      ...shuffleTail('a1', 'r1', '1', { lo: 'a2', hi: 'b2' }),
      ...conv1x1('b2', 'w2', 'r2'),
      ...shuffleTail('a2', 'r2', '2', { y: 'y2' }),
      {
        op: 'Conv',
        inputs: ['y2', 'wd', 'wd_b'],
        outputs: ['d'],
        attrs: { kernel_shape: [3, 3], group: 2 * C, strides: [2, 2], pads: [1, 1, 1, 1] },
      },
      ...conv1x1('d', 'wp', 'p'),
      { op: 'Conv', inputs: ['y2', 'wq', 'wq_b'], outputs: ['q_c'], attrs: { kernel_shape: [1, 1], strides: [2, 2] } },
      { op: 'Relu', inputs: ['q_c'], outputs: ['q'] },
      { op: 'Concat', inputs: ['p', 'q'], outputs: ['output'], attrs: { axis: 1 } },
    ],
  };
}

const lower = (spec: ModelSpec): LayerGraph => lowerToLayers(inferModel(decodeModel(encodeModel(spec), 'gather-order.onnx')));
const gathers = (g: LayerGraph) => g.layers.filter((l) => l.op === 'channelgather');

/** Each output's [input, channel] pairs, in output order. */
function outputPairs(g: LayerGraph, gather: LayerGraph['layers'][number]): number[][] {
  const sources = gather.attrs['sources'] as readonly number[];
  let at = 0;
  return gather.outputs.map((o) => {
    const c = g.shapes.get(o)![1]!;
    const pairs = sources.slice(2 * at, 2 * (at + c));
    at += c;
    return [...pairs];
  });
}

const inSourceOrder = (pairs: readonly number[]) => sourceOrder(pairs).every((p, j) => p === j);

/** Distinct (input, 16-channel source block) pairs per output block of 16: the gather's whole-line loads per pixel. */
function sourceBlocks(pairs: readonly number[]): number {
  let count = 0;
  for (let b = 0; 32 * b < pairs.length; b++) {
    const blocks = new Set<string>();
    for (let k = 32 * b; k < Math.min(pairs.length, 32 * b + 32); k += 2) blocks.add(`${pairs[k]}/${pairs[k + 1]! >> 4}`);
    count += blocks.size;
  }
  return count;
}

const run = (input: number, from: number, to: number) => Array.from({ length: to - from }, (_, i) => [input, from + i]).flat();

test("every gather output read by convs is in source order, and reads fewer source blocks than in the model's order", () => {
  const g = lower(shuffleNetSpec());
  const [first, second] = gathers(g);
  assert.equal(gathers(g).length, 2, 'one gather per unit tail');
  assert.deepEqual(first!.inputs, ['a1', 'r1']);
  // The pass-through half is composed into the second gather; the branch half is what the first one writes.
  const branch = outputPairs(g, first!);
  assert.deepEqual(branch, [[...run(0, C / 2, C), ...run(1, C / 2, C)]]);
  // The model's order: the shuffle interleaves a1[10..20) with r1[10..20).
  const interleaved = Array.from({ length: C }, (_, c) => [c % 2, C / 2 + Math.floor(c / 2)]).flat();
  assert.deepEqual([sourceBlocks(branch[0]!), sourceBlocks(interleaved)], [4, 6]);
  assert.deepEqual(second!.inputs, ['r2', 'a1', 'r1']);
  assert.deepEqual(outputPairs(g, second!), [[...run(0, 0, C), ...run(1, 0, C / 2), ...run(2, 0, C / 2)]]);
  for (const gather of gathers(g)) for (const pairs of outputPairs(g, gather)) assert.ok(inSourceOrder(pairs));
});

test("a gather keeps the model's order when a reader cannot absorb it (an elementwise op, a graph output), and its convs keep their weights", () => {
  const spec = (tail: NodeSpec[]): ModelSpec => ({
    inputs: [
      { name: 'a', dtype: 'float32', shape: [1, C, HW, HW] },
      { name: 'b', dtype: 'float32', shape: [1, C, HW, HW] },
    ],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: [...shapeInits, ['w', weights([2 * C, 2 * C, 1, 1], 1)], ['wd', weights([2 * C, 1, 3, 3], 2)]],
    nodes: tail,
  });
  const interleaved = Array.from({ length: 2 * C }, (_, c) => [c % 2, Math.floor(c / 2)]).flat();
  for (const [what, tail] of [
    ['graph output', shuffleTail('a', 'b', '', { y: 'y' })],
    [
      'a Relu and a conv',
      [
        ...shuffleTail('a', 'b', '', { y: 's' }),
        { op: 'Relu', inputs: ['s'], outputs: ['r'] },
        { op: 'Conv', inputs: ['s', 'w'], outputs: ['c'], attrs: { kernel_shape: [1, 1] } },
        { op: 'Add', inputs: ['r', 'c'], outputs: ['y'] },
      ],
    ],
  ] as const) {
    const g = lower(spec([...tail]));
    assert.deepEqual(outputPairs(g, gathers(g)[0]!)[0], interleaved, what);
  }
  // The 1x1 conv and the depthwise conv are met first and take the order; the depthwise conv's output is a graph
  // output, which refuses it, so the attempt is dropped and both weights are left as they were.
  const refused: ModelSpec = {
    ...spec([
      ...shuffleTail('a', 'b', '', { y: 's' }),
      { op: 'Conv', inputs: ['s', 'w'], outputs: ['y'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Conv', inputs: ['s', 'wd'], outputs: ['d'], attrs: { kernel_shape: [3, 3], group: 2 * C, pads: [1, 1, 1, 1] } },
    ]),
    outputs: [
      { name: 'y', dtype: 'float32' },
      { name: 'd', dtype: 'float32' },
    ],
  };
  const g = lower(refused);
  assert.deepEqual(outputPairs(g, gathers(g)[0]!)[0], interleaved, 'a depthwise reader whose output is a graph output');
  const convs = g.layers.filter((l) => l.op === 'conv2d');
  assert.deepEqual(
    convs.map((l) => l.params['weight']!.data),
    [weights([2 * C, 2 * C, 1, 1], 1).data, weights([2 * C, 1, 3, 3], 2).data],
    "neither conv's weight is permuted",
  );
});

const root = mkdtempSync(join(tmpdir(), 'veltair-gather-order-'));
const model = join(root, 'units.onnx');
const bundle = join(root, 'units.bundle');
const input = seeded(2 * C * HW * HW, 13, -1, 1);
let reference: Float32Array;
after(() => rmSync(root, { recursive: true, force: true }));

before(async () => {
  const bytes = encodeModel(shuffleNetSpec());
  writeFileSync(model, bytes);
  await compileFixture(model, { output: bundle, trials: 1, levels: [0], threads: [1] }, join(root, 'cache'));
  const s = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  reference = (await s.run({ input: new ort.Tensor('float32', input, [1, 2 * C, HW, HW]) }))['output']!.data as Float32Array;
});

for (const threads of [1, 2]) {
  test(`at ${threads} thread(s) the compiled units, gathers reordered and weights permuted, match ONNX Runtime`, async () => {
    const s = await loadBundle(bundle, { threads });
    try {
      assert.deepEqual(
        s.manifest.layers.filter((l) => l.op === 'channelgather').map((l) => l.attrs['sources']),
        gathers(lower(shuffleNetSpec())).map((l) => l.attrs['sources']),
        'the bundle ships the reordered gathers',
      );
      const out = await s.run({ input });
      assertClose(out['output']!.data as Float32Array, reference, `output at ${threads} threads`, 1e-4, 1e-5);
    } finally {
      s.close();
    }
  });
}

test('a reordered gather read by two other gathers: both rename what they read, and the values match ONNX Runtime', async () => {
  const shuffle = (a: string, b: string, y: string): NodeSpec[] => [
    { op: 'Concat', inputs: [a, b], outputs: [`${y}_cat`], attrs: { axis: 1 } },
    { op: 'Reshape', inputs: [`${y}_cat`, 'to5'], outputs: [`${y}_r5`] },
    { op: 'Transpose', inputs: [`${y}_r5`], outputs: [`${y}_t5`], attrs: { perm: [0, 2, 1, 3, 4] } },
    { op: 'Reshape', inputs: [`${y}_t5`, 'to4'], outputs: [y] },
  ];
  const half = (v: string, from: string, to: string, y: string): NodeSpec => ({ op: 'Slice', inputs: [v, from, to, 'ax'], outputs: [y] });
  const feeds = ['a', 'b', 'c'].map((n, i) => ({
    name: n,
    dtype: 'float32' as const,
    dims: [1, C, HW, HW],
    data: seeded(C * HW * HW, 21 + i),
  }));
  const spec: ModelSpec = {
    inputs: feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.dims] })),
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: shapeInits,
    // lo (half of shuffle(a, b)) has two readers, so it is not composed away: the two gathers reading it absorb its order.
    nodes: [
      ...shuffle('a', 'b', 's'),
      half('s', 's0', 'e0', 'lo'),
      half('s', 'e0', 'e1', 'hi'),
      ...shuffle('lo', 'c', 'y1'),
      ...shuffle('lo', 'hi', 'y2'),
      { op: 'Mul', inputs: ['y1', 'y2'], outputs: ['y'] },
    ],
  };
  const g = lower(spec);
  assert.equal(gathers(g).length, 3);
  const [first] = gathers(g);
  for (const pairs of outputPairs(g, first!)) assert.ok(inSourceOrder(pairs), `the first gather is reordered: ${pairs.join(',')}`);
  const { compared } = { compared: await runAgainstOrt(spec, feeds) };
  assertClose(compared.ours[0]!, compared.reference[0]!, 'y');
});

test('a gather with two outputs, each read by a 1x1 conv: the second, at channel offset C, is reordered too, and the model matches ONNX Runtime', async () => {
  const spec = oneInputModel(
    [1, 2 * C, HW, HW],
    [1, C, HW, HW],
    [...shapeInits, ['w0', weights([2 * C, 2 * C, 1, 1], 31)], ['w1', weights([C, C, 1, 1], 33)], ['w2', weights([C, C, 1, 1], 35)]],
    [
      { op: 'Conv', inputs: ['x', 'w0'], outputs: ['z'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Reshape', inputs: ['z', 'to5'], outputs: ['z5'] },
      { op: 'Transpose', inputs: ['z5'], outputs: ['t5'], attrs: { perm: [0, 2, 1, 3, 4] } },
      { op: 'Reshape', inputs: ['t5', 'to4'], outputs: ['sh'] },
      { op: 'Slice', inputs: ['sh', 's0', 'e0', 'ax'], outputs: ['lo'] },
      { op: 'Slice', inputs: ['sh', 'e0', 'e1', 'ax'], outputs: ['hi'] },
      { op: 'Conv', inputs: ['lo', 'w1'], outputs: ['p'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Conv', inputs: ['hi', 'w2'], outputs: ['q'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Add', inputs: ['p', 'q'], outputs: ['y'] },
    ],
  );
  const g = lower(spec);
  const [gather] = gathers(g);
  assert.equal(gathers(g).length, 1);
  assert.equal(gather!.outputs.length, 2, 'the shuffle and both slices are one gather');
  const [lo, hi] = outputPairs(g, gather!);
  assert.ok(inSourceOrder(lo!) && inSourceOrder(hi!), `both outputs in source order: ${lo!.join(',')} | ${hi!.join(',')}`);
  // In the model's order hi is z's channels 10, 30, 11, 31, …: its source order starts at z's channel 10.
  assert.deepEqual(hi!.slice(0, 4), [0, C / 2, 0, C / 2 + 1]);
  const p = await prepare(spec);
  try {
    await matchesOrt(p, spec, 41);
  } finally {
    await rm(p.cache, { recursive: true, force: true });
  }
});
