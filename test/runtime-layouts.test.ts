/**
 * The blocked forms the layout planner relies on, op by op against ONNX Runtime at V = 8 and 16
 * (both widths run on any host: the ops are plain C over the SIMD layer), channel counts off the
 * V grid included: the channel gather (concat, split, slice, shuffle), elementwise chains, binaries
 * against gates and constants (either operand order), blocked→natural transposes and global
 * pools; and every reorder pair round-tripping exactly with zeroed padding (8c ↔ 16c, rows8 ↔ rows16).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../src/onnx/model.js';
import { LAYOUT_KIND, OP } from '../src/runtime/ops.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { arenaRef } from '../src/runtime/native-plan.js';
import { gatherPieceTable } from '../src/runtime/lower-movement.js';
import type { NodeSpec } from '../src/onnx/encode.js';
import { check, f32, graphOf, named, seeded, X, type Case } from './runtime-harness.js';

const ints = (dims: number[], values: number[]): Tensor => ({ dtype: 'int64', dims, data: new Float64Array(values) });
const consts = (dims: number[], seed: number, lo = -1, hi = 1): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    lo,
    hi,
  ),
});

/** Concat → channel shuffle (groups 2) → two Slices: ShuffleNet's unit tail, 2 × C channels. */
function shuffleUnit(c: number): Pick<Case, 'nodes' | 'inits'> {
  return {
    nodes: [
      { op: 'Concat', inputs: ['x', 'b'], outputs: ['cat'], attrs: { axis: 1 } },
      { op: 'Reshape', inputs: ['cat', 'to5'], outputs: ['r5'] },
      { op: 'Transpose', inputs: ['r5'], outputs: ['t5'], attrs: { perm: [0, 2, 1, 3, 4] } },
      { op: 'Reshape', inputs: ['t5', 'to4'], outputs: ['sh'] },
      { op: 'Slice', inputs: ['sh', 's0', 'e0', 'ax'], outputs: ['lo'] },
      { op: 'Slice', inputs: ['sh', 'e0', 'e1', 'ax'], outputs: ['hi'] },
      { op: 'Sub', inputs: ['lo', 'hi'], outputs: ['y'] },
    ],
    inits: [
      ['to5', ints([5], [1, 2, c, 3, 4])],
      ['to4', ints([4], [1, 2 * c, 3, 4])],
      ['s0', ints([1], [0])],
      ['e0', ints([1], [c])],
      ['e1', ints([1], [2 * c])],
      ['ax', ints([1], [1])],
    ],
  };
}

/**
 * Two ShuffleNet unit tails in a row: the first unit's pass-through half (`lo1`) is read only by the
 * second unit's concat, so the second gather takes those channels from `x` and `b` directly and
 * `lo1` is never written (composeChannelGathers).
 */
function twoShuffleUnits(c: number): Pick<Case, 'nodes' | 'inits'> {
  const tail = (a: string, b: string, lo: string, hi: string, tag: string): NodeSpec[] => [
    { op: 'Concat', inputs: [a, b], outputs: [`cat${tag}`], attrs: { axis: 1 } },
    { op: 'Reshape', inputs: [`cat${tag}`, 'to5'], outputs: [`r5${tag}`] },
    { op: 'Transpose', inputs: [`r5${tag}`], outputs: [`t5${tag}`], attrs: { perm: [0, 2, 1, 3, 4] } },
    { op: 'Reshape', inputs: [`t5${tag}`, 'to4'], outputs: [`sh${tag}`] },
    { op: 'Slice', inputs: [`sh${tag}`, 's0', 'e0', 'ax'], outputs: [lo] },
    { op: 'Slice', inputs: [`sh${tag}`, 'e0', 'e1', 'ax'], outputs: [hi] },
  ];
  return {
    nodes: [
      ...tail('x', 'b', 'lo1', 'hi1', '1'),
      { op: 'Relu', inputs: ['hi1'], outputs: ['b2'] },
      ...tail('lo1', 'b2', 'lo2', 'hi2', '2'),
      { op: 'Sub', inputs: ['lo2', 'hi2'], outputs: ['y'] },
    ],
    inits: shuffleUnit(c).inits,
  };
}

/** Concat of `cs` → channel shuffle with `groups` groups, the shuffled value the output. */
function shuffleOf(cs: number[], groups: number, hw: [number, number]): Pick<Case, 'nodes' | 'inits' | 'feeds' | 'out'> {
  const names = cs.map((_, i) => (i === 0 ? 'x' : `in${i}`));
  const total = cs.reduce((a, b) => a + b, 0);
  return {
    nodes: [
      { op: 'Concat', inputs: names, outputs: ['cat'], attrs: { axis: 1 } },
      { op: 'Reshape', inputs: ['cat', 'to5'], outputs: ['r5'] },
      { op: 'Transpose', inputs: ['r5'], outputs: ['t5'], attrs: { perm: [0, 2, 1, 3, 4] } },
      { op: 'Reshape', inputs: ['t5', 'to4'], outputs: ['y'] },
    ],
    inits: [
      ['to5', ints([5], [1, groups, total / groups, ...hw])],
      ['to4', ints([4], [1, total, ...hw])],
    ],
    feeds: cs.map((c, i) => named(names[i]!, f32([1, c, ...hw], 10 + i))),
    out: [1, total, ...hw],
  };
}

const CASES: Case[] = [
  {
    name: 'channel shuffle with its concat and slices (12 + 12 channels)',
    ...shuffleUnit(12),
    feeds: [X([1, 12, 3, 4]), named('b', f32([1, 12, 3, 4], 4))],
    out: [1, 12, 3, 4],
  },
  {
    name: 'channel shuffle off the grid (29 + 29 channels)',
    ...shuffleUnit(29),
    feeds: [X([1, 29, 3, 4]), named('b', f32([1, 29, 3, 4], 4))],
    out: [1, 29, 3, 4],
  },
  {
    name: 'two channel shuffles in a row, the first pass-through never written (24 + 24 channels)',
    ...twoShuffleUnits(24),
    feeds: [X([1, 24, 3, 4]), named('b', f32([1, 24, 3, 4], 4))],
    out: [1, 24, 3, 4],
  },
  {
    name: 'two channel shuffles in a row off the grid (29 + 29 channels)',
    ...twoShuffleUnits(29),
    feeds: [X([1, 29, 3, 4]), named('b', f32([1, 29, 3, 4], 4))],
    out: [1, 29, 3, 4],
  },
  // Groups 4 over five inputs: an 8-lane output block draws from up to five sources, and the last block is partial.
  { name: 'channel shuffle, groups 4, of five inputs (1 + 4 + 5 + 5 + 5 channels)', ...shuffleOf([1, 4, 5, 5, 5], 4, [3, 2]) },
  {
    name: 'concat off the grid (12 + 20 + 3 channels)',
    node: { op: 'Concat', inputs: ['x', 'b', 'c'], attrs: { axis: 1 } },
    feeds: [X([2, 12, 3, 3]), named('b', f32([2, 20, 3, 3], 5)), named('c', f32([2, 3, 3, 3], 6))],
    out: [2, 35, 3, 3],
  },
  {
    name: 'split off the grid (5 + 11 channels)',
    nodes: [
      { op: 'Split', inputs: ['x', 'sp'], outputs: ['p', 'q'], attrs: { axis: 1 } },
      { op: 'Concat', inputs: ['q', 'p'], outputs: ['y'], attrs: { axis: 1 } },
    ],
    feeds: [X([1, 16, 2, 5])],
    out: [1, 16, 2, 5],
    inits: [['sp', ints([2], [5, 11])]],
  },
  {
    name: 'channel slice 3..14',
    node: { op: 'Slice', inputs: ['x', 's', 'e', 'a'] },
    feeds: [X([1, 20, 3, 3])],
    out: [1, 11, 3, 3],
    inits: [
      ['s', ints([1], [3])],
      ['e', ints([1], [14])],
      ['a', ints([1], [1])],
    ],
  },
  {
    name: 'chain: batch norm, relu, a gate, a scalar, a reversed per-channel sub, x·tanh(x)',
    nodes: [
      { op: 'BatchNormalization', inputs: ['x', 'g', 'bb', 'm', 'v'], outputs: ['bn'] },
      { op: 'Relu', inputs: ['bn'], outputs: ['r'] },
      { op: 'Mul', inputs: ['r', 'gate'], outputs: ['gm'] },
      { op: 'Add', inputs: ['gm', 'half'], outputs: ['a'] },
      { op: 'Sub', inputs: ['k', 'a'], outputs: ['s'] },
      { op: 'Tanh', inputs: ['s'], outputs: ['t'] },
      { op: 'Mul', inputs: ['s', 't'], outputs: ['y'] },
    ],
    feeds: [X([2, 13, 3, 5]), named('gate', f32([2, 13, 1, 1], 9, 0, 1))],
    out: [2, 13, 3, 5],
    inits: [
      ['g', consts([13], 1, 0.5, 1.5)],
      ['bb', consts([13], 2)],
      ['m', consts([13], 3)],
      ['v', consts([13], 4, 0.5, 2)],
      ['half', { dtype: 'float32', dims: [], data: new Float32Array([0.5]) }],
      ['k', consts([1, 13, 1, 1], 5)],
    ],
  },
  {
    name: 'chain: batch norm then relu (the pre-activation pass), a batch of two off the grid',
    nodes: [
      { op: 'BatchNormalization', inputs: ['x', 'g', 'bb', 'm', 'v'], outputs: ['bn'] },
      { op: 'Relu', inputs: ['bn'], outputs: ['y'] },
    ],
    feeds: [X([2, 21, 3, 5])],
    out: [2, 21, 3, 5],
    inits: [
      ['g', consts([21], 11, 0.5, 1.5)],
      ['bb', consts([21], 12)],
      ['m', consts([21], 13)],
      ['v', consts([21], 14, 0.5, 2)],
    ],
  },
  {
    name: 'gate minus value and constant over value (reversed channel binaries)',
    nodes: [
      { op: 'Sub', inputs: ['gate', 'x'], outputs: ['d'] },
      { op: 'Div', inputs: ['k', 'd'], outputs: ['y'] },
    ],
    feeds: [X([1, 20, 2, 3], 1, 1, 2), named('gate', f32([1, 20, 1, 1], 3, 3, 4))],
    out: [1, 20, 2, 3],
    inits: [['k', consts([20, 1, 1], 7)]],
  },
  {
    name: 'transpose of a blocked value to NHWC (12 channels)',
    node: { op: 'Transpose', attrs: { perm: [0, 2, 3, 1] } },
    feeds: [X([2, 12, 3, 5])],
    out: [2, 3, 5, 12],
  },
  {
    name: 'transpose of a blocked value, channels to the end of the spatial axes',
    node: { op: 'Transpose', attrs: { perm: [0, 3, 1, 2] } },
    feeds: [X([1, 19, 4, 2])],
    out: [1, 2, 19, 4],
  },
  {
    name: 'global average pool (a blocked input writing [N][C])',
    node: { op: 'GlobalAveragePool' },
    feeds: [X([2, 21, 5, 5])],
    out: [2, 21, 1, 1],
  },
  {
    name: 'ReduceMean over H, W is a global pool',
    node: { op: 'ReduceMean', attrs: { axes: [2, 3], keepdims: 0 } },
    feeds: [X([1, 24, 3, 7])],
    out: [1, 24],
    opset: 13,
  },
  { name: 'global max pool', node: { op: 'GlobalMaxPool' }, feeds: [X([1, 9, 4, 4])], out: [1, 9, 1, 1] },
];

for (const c of CASES) {
  for (const vec of [undefined, 8, 16]) {
    test(`${c.name}, ${vec ? `nchw${vec}c` : 'natural'}, matches ONNX Runtime`, async () => {
      await check({ ...c, ...(vec ? { vec } : {}) });
    });
  }
}

test('the chain and shuffle cases lower to one fused layer each', () => {
  const chain = CASES.find((c) => c.name.startsWith('chain'))!;
  const { graph } = graphOf({
    inputs: chain.feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.dims] })),
    outputs: [{ name: 'y', dtype: 'float32', shape: [2, 13, 3, 5] }],
    initializers: chain.inits ?? [],
    nodes: chain.nodes!,
  });
  // s = k − (relu(bn(x))·gate + ½) has two readers (tanh and the last mul): the first chain ends there.
  assert.deepEqual(
    graph.layers.map((l) => [l.op, l.attrs['program']]),
    [
      ['elementwise_chain', 'affine(p0,p1);relu;mul(in1);add(p2);sub_rev(p3)'],
      ['elementwise_chain', 'tanh;mul_rev(in0)'], // x·tanh(x): the operand is the chain's own input
    ],
  );
  const shuffle = CASES[0]!;
  const s = graphOf({
    inputs: shuffle.feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.dims] })),
    outputs: [{ name: 'y', dtype: 'float32', shape: [1, 12, 3, 4] }],
    initializers: shuffle.inits ?? [],
    nodes: shuffle.nodes!,
  });
  assert.deepEqual(
    s.graph.layers.map((l) => l.op),
    ['channelgather', 'sub'],
  );
  assert.equal(s.graph.layers[0]!.outputs.length, 2);
  const groups4 = CASES.find((c) => c.name.includes('groups 4'))!;
  const g = graphOf({
    inputs: groups4.feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.dims] })),
    outputs: [{ name: 'y', dtype: 'float32', shape: [...groups4.out] }],
    initializers: groups4.inits ?? [],
    nodes: groups4.nodes!,
  });
  assert.deepEqual(
    g.graph.layers.map((l) => l.op),
    ['channelgather'],
  );
  const two = CASES.find((c) => c.name.startsWith('two channel shuffles'))!;
  const t = graphOf({
    inputs: two.feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.dims] })),
    outputs: [{ name: 'y', dtype: 'float32', shape: [...two.out] }],
    initializers: two.inits ?? [],
    nodes: two.nodes!,
  });
  assert.deepEqual(
    t.graph.layers.map((l) => l.op),
    ['channelgather', 'relu', 'channelgather', 'sub'],
  );
  // The first gather writes only the half the relu reads; the second reads x, b and the relu's output.
  assert.deepEqual(
    t.graph.layers.map((l) => l.outputs.length),
    [1, 1, 2, 1],
  );
  assert.equal(t.graph.layers[2]!.inputs.length, 3);
});

/** One REORDER step from value a (at 0) to value b. */
function reorderPlan(
  from: [number, number],
  to: [number, number],
  d: { n: number; c: number; hw: number; rows: number; cols: number },
  inBytes: number,
  outBytes: number,
) {
  const outAt = Math.ceil(inBytes / 64) * 64;
  return {
    arenaBytes: outAt + outBytes,
    inputs: [{ name: 'a', dtype: 'float32' as const, shape: [], offset: 0, bytes: inBytes }],
    outputs: [{ name: 'b', dtype: 'float32' as const, shape: [], offset: outAt, bytes: outBytes }],
    steps: [
      {
        op: OP.REORDER,
        threads: 2,
        inputs: [arenaRef(0)],
        outputs: [arenaRef(outAt)],
        floats: [],
        label: 'reorder',
        ints: [...from, ...to, d.n, d.c, d.hw, d.rows, d.cols],
      },
    ],
    symbols: [],
    params: [],
  };
}

test('NCHW[8]c ↔ NCHW[16]c reorders keep every channel and zero the padding', async () => {
  for (const [n, c, hw] of [
    [2, 20, 7],
    [1, 8, 3],
    [1, 33, 5],
    [3, 16, 1],
  ] as const) {
    const dims = { n, c, hw, rows: 0, cols: 0 };
    const bytes = (v: number) => n * Math.ceil(c / v) * v * hw * 4;
    const nat = seeded(n * c * hw, c);
    const steps = [
      reorderPlan([LAYOUT_KIND.natural, 1], [LAYOUT_KIND.blocked, 8], dims, nat.byteLength, bytes(8)),
      reorderPlan([LAYOUT_KIND.blocked, 8], [LAYOUT_KIND.blocked, 16], dims, bytes(8), bytes(16)),
      reorderPlan([LAYOUT_KIND.blocked, 16], [LAYOUT_KIND.blocked, 8], dims, bytes(16), bytes(8)),
      reorderPlan([LAYOUT_KIND.blocked, 8], [LAYOUT_KIND.natural, 1], dims, bytes(8), nat.byteLength),
    ];
    const execs = await Promise.all(steps.map((p) => createExecutor(p, null)));
    const b8 = execs[0]!.run([nat])[0] as Float32Array;
    const b16 = execs[1]!.run([b8])[0] as Float32Array;
    const cb = Math.ceil(c / 16);
    for (let i = 0; i < n; i++)
      for (let ch = 0; ch < cb * 16; ch++)
        for (let p = 0; p < hw; p++) {
          assert.equal(
            b16[((i * cb + Math.floor(ch / 16)) * hw + p) * 16 + (ch % 16)],
            ch < c ? nat[(i * c + ch) * hw + p] : 0,
            `n=${i} c=${ch} p=${p}`,
          );
        }
    const back8 = execs[2]!.run([b16])[0] as Float32Array;
    assert.deepEqual(back8, b8);
    assert.deepEqual(execs[3]!.run([back8])[0], nat);
    for (const e of execs) e.close();
  }
});

test("a CHANNEL_GATHER on NCHW[V]c zeroes the output padding and never reads the inputs' padding lanes", async () => {
  // The planned cases compare natural outputs, which drop the padded lanes this test reads.
  const [n, hw, cin] = [2, 3, [5, 7]];
  const map = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? [0, (i / 2 + 1) % 5] : [1, (3 * i) % 7]));
  for (const v of [8, 16]) {
    const cb = (c: number) => Math.ceil(c / v);
    const blocked = (c: number, seed: number) => {
      const x = new Float32Array(n * cb(c) * v * hw).fill(NaN);
      const vals = seeded(n * c * hw, seed);
      for (let i = 0; i < n; i++)
        for (let ch = 0; ch < c; ch++)
          for (let p = 0; p < hw; p++) {
            x[((i * cb(c) + Math.floor(ch / v)) * hw + p) * v + (ch % v)] = vals[(i * c + ch) * hw + p]!;
          }
      return x;
    };
    const ins = cin.map((c, i) => blocked(c, 3 + i));
    const outBytes = n * cb(12) * v * hw * 4;
    const at = [0, Math.ceil(ins[0]!.byteLength / 64) * 64];
    const outAt = at[1]! + Math.ceil(ins[1]!.byteLength / 64) * 64;
    // At V = 16 also with the lowering's piece table (the ints' tail), which the op then reads instead of the map.
    const tails = v === 16 ? [[], gatherPieceTable(cin, [map as [number, number][]])] : [[]];
    for (const tail of tails) {
      const exec = await createExecutor(
        {
          arenaBytes: outAt + outBytes,
          inputs: ins.map((x, i) => ({ name: `in${i}`, dtype: 'float32' as const, shape: [], offset: at[i]!, bytes: x.byteLength })),
          outputs: [{ name: 'y', dtype: 'float32' as const, shape: [], offset: outAt, bytes: outBytes }],
          steps: [
            {
              op: OP.CHANNEL_GATHER,
              threads: 2,
              inputs: at.map((o) => arenaRef(o)),
              outputs: [arenaRef(outAt)],
              floats: [],
              label: 'gather',
              ints: [v, n, hw, 2, 1, ...cin, 12, ...map.flat(), ...tail],
            },
          ],
          symbols: [],
          params: [],
        },
        null,
      );
      const y = exec.run(ins)[0] as Float32Array;
      exec.close();
      for (let i = 0; i < n; i++)
        for (let ch = 0; ch < cb(12) * v; ch++)
          for (let p = 0; p < hw; p++) {
            const [s, sc] = map[ch] ?? [0, 0];
            const want = ch < 12 ? ins[s!]![((i * cb(cin[s!]!) + Math.floor(sc! / v)) * hw + p) * v + (sc! % v)] : 0;
            assert.equal(
              y[((i * cb(12) + Math.floor(ch / v)) * hw + p) * v + (ch % v)],
              want,
              `V=${v} table ${tail.length > 0} n=${i} c=${ch} p=${p}`,
            );
          }
    }
  }
});

for (const batch of [1, 2]) {
  test(`a V = 16 CHANNEL_GATHER piece table at batch ${batch}: whole blocks copied, pieces permuted, the same as the map; a bad entry fails`, async () => {
    // 40 channels of `a` and 20 of `b`; output 0 = a's 16..31 (a whole block), output 1 = b's 19 then a's 0..18 (pieces from 3 blocks).
    const [hw, v] = [130, 16];
    const cin = [40, 20];
    const sources: [number, number][][] = [
      Array.from({ length: 16 }, (_, i) => [0, 16 + i]),
      [[1, 19], ...Array.from({ length: 19 }, (_, i): [number, number] => [0, i])],
    ];
    const table = gatherPieceTable(cin, sources);
    assert.deepEqual(table.slice(0, 4), [3, 4, 7, 7 + 2 + 5 * 2], 'three output blocks: a copy, then two permutes');
    assert.deepEqual(table.slice(4, 7), [0, 0, 16], 'output 0 is block 1 of a');
    const blockOf = (c: number) => Math.ceil(c / v);
    const ins = cin.map((c, i) => seeded(batch * blockOf(c) * v * hw, 11 + i));
    const at = [0, ins[0]!.byteLength];
    const outAt = [at[1]! + ins[1]!.byteLength, at[1]! + ins[1]!.byteLength + batch * v * hw * 4];
    const outBytes = [batch * v * hw * 4, batch * 2 * v * hw * 4];
    const run = async (tail: readonly number[], threads: number) => {
      const exec = await createExecutor(
        {
          arenaBytes: outAt[1]! + outBytes[1]!,
          inputs: ins.map((x, i) => ({ name: `in${i}`, dtype: 'float32' as const, shape: [], offset: at[i]!, bytes: x.byteLength })),
          outputs: outAt.map((o, i) => ({ name: `y${i}`, dtype: 'float32' as const, shape: [], offset: o, bytes: outBytes[i]! })),
          steps: [
            {
              op: OP.CHANNEL_GATHER,
              threads,
              inputs: at.map((o) => arenaRef(o)),
              outputs: outAt.map((o) => arenaRef(o)),
              floats: [],
              label: 'gather',
              ints: [v, batch, hw, 2, 2, ...cin, 16, 20, ...sources.flat(2), ...tail],
            },
          ],
          symbols: [],
          params: [],
        },
        null,
      );
      try {
        return exec.run(ins) as Float32Array[];
      } finally {
        exec.close();
      }
    };
    for (const threads of [1, 2]) assert.deepEqual(await run(table, threads), await run([], threads), `${threads} thread(s)`);
    const bad = [...table];
    bad[table[2]! + 2 + 1] = 48; // the first piece of output 1 reads channel 48 of b (20 channels: no such block)
    await assert.rejects(async () => run(bad, 1), /piece table's entry for output block 1 reads a block its source does not have/);
  });
}

test('rows8 ↔ rows16 reorders keep every column and zero the padding', async () => {
  const [m, k] = [5, 19];
  const d = { n: 1, c: k, hw: 1, rows: m, cols: k };
  const x = seeded(m * k, 2);
  const pad = (v: number) => Math.ceil(k / v) * v;
  const to8 = await createExecutor(reorderPlan([LAYOUT_KIND.natural, 1], [LAYOUT_KIND.rows, 8], d, x.byteLength, m * pad(8) * 4), null);
  const to16 = await createExecutor(reorderPlan([LAYOUT_KIND.rows, 8], [LAYOUT_KIND.rows, 16], d, m * pad(8) * 4, m * pad(16) * 4), null);
  const back = await createExecutor(reorderPlan([LAYOUT_KIND.rows, 16], [LAYOUT_KIND.natural, 1], d, m * pad(16) * 4, x.byteLength), null);
  const r16 = to16.run([to8.run([x])[0]!])[0] as Float32Array;
  for (let r = 0; r < m; r++) for (let j = 0; j < pad(16); j++) assert.equal(r16[r * pad(16) + j], j < k ? x[r * k + j] : 0);
  assert.deepEqual(back.run([r16])[0], x);
  for (const e of [to8, to16, back]) e.close();
});

test('a POOL whose threads take bands of rows (its writer split rows) writes what one taking channel planes does', async () => {
  // runtime-ops checks the channel-plane order against ONNX Runtime; this one holds the rows order to it.
  const [n, c, h, w] = [2, 37, 11, 9];
  for (const [kind, v] of [
    [0, 16],
    [1, 8],
    [0, 8],
  ] as const) {
    const cb = Math.ceil(c / v),
      [oh, ow] = [6, 5];
    const x = seeded(n * cb * v * h * w, 4 + v);
    const outAt = Math.ceil(x.byteLength / 64) * 64,
      outBytes = n * cb * v * oh * ow * 4;
    const run = async (threads: number, rowsOuter: number) => {
      const exec = await createExecutor(
        {
          arenaBytes: outAt + outBytes,
          inputs: [{ name: 'x', dtype: 'float32' as const, shape: [], offset: 0, bytes: x.byteLength }],
          outputs: [{ name: 'y', dtype: 'float32' as const, shape: [], offset: outAt, bytes: outBytes }],
          steps: [
            {
              op: OP.POOL,
              threads,
              inputs: [arenaRef(0)],
              outputs: [arenaRef(outAt)],
              floats: [],
              label: 'pool',
              ints: [kind, n, c, h, w, oh, ow, v, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, rowsOuter],
            },
          ],
          symbols: [],
          params: [],
        },
        null,
      );
      try {
        return exec.run([x])[0] as Float32Array;
      } finally {
        exec.close();
      }
    };
    const planes = await run(1, 0);
    assert.deepEqual(await run(2, 1), planes, `kind ${kind} V=${v}`);
    assert.deepEqual(await run(2, 0), planes, `kind ${kind} V=${v}`);
  }
});

test('a blocked 3x3 max POOL skips NaN taps on every path (edges, fixed rows, the stride-2 shared column), as its scalar loop does', async () => {
  // The reference is the generic loop's rule, `tap > max ? tap : max` from -FLT_MAX: a NaN tap drops
  // out and an all-NaN window gives -FLT_MAX. Every output is held exactly.
  const [c, h, w] = [16, 9, 11];
  for (const [v, sh] of [
    [16, 2],
    [16, 1],
    [8, 2],
    [16, 3],
  ] as const) {
    const oh = Math.floor((h + 2 - 3) / sh) + 1,
      ow = Math.floor((w + 2 - 3) / sh) + 1;
    const cb = Math.ceil(c / v);
    const x = seeded(cb * v * h * w, 21 + v + sh);
    for (let i = 0; i < x.length; i += 7) x[i] = NaN;
    for (let l = 0; l < v; l++)
      for (const [yy, xx] of [
        [0, 0],
        [0, 1],
        [1, 0],
        [1, 1],
      ])
        x[(yy * w + xx) * v + l] = NaN; // an all-NaN corner window
    const outAt = Math.ceil(x.byteLength / 64) * 64,
      outBytes = cb * v * oh * ow * 4;
    const exec = await createExecutor(
      {
        arenaBytes: outAt + outBytes,
        inputs: [{ name: 'x', dtype: 'float32' as const, shape: [], offset: 0, bytes: x.byteLength }],
        outputs: [{ name: 'y', dtype: 'float32' as const, shape: [], offset: outAt, bytes: outBytes }],
        steps: [
          {
            op: OP.POOL,
            threads: 1,
            inputs: [arenaRef(0)],
            outputs: [arenaRef(outAt)],
            floats: [],
            label: 'pool',
            ints: [0, 1, c, h, w, oh, ow, v, 3, 3, sh, sh, 1, 1, 1, 1, 1, 1, 0, 0],
          },
        ],
        symbols: [],
        params: [],
      },
      null,
    );
    const y = exec.run([x])[0] as Float32Array;
    exec.close();
    for (let b = 0; b < cb; b++)
      for (let oy = 0; oy < oh; oy++)
        for (let ox = 0; ox < ow; ox++)
          for (let l = 0; l < v; l++) {
            let want = -3.4028234663852886e38;
            for (let ky = 0; ky < 3; ky++)
              for (let kx = 0; kx < 3; kx++) {
                const iy = oy * sh - 1 + ky,
                  ix = ox * sh - 1 + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const t = x[((b * h + iy) * w + ix) * v + l]!;
                if (t > want) want = t;
              }
            assert.equal(y[((b * oh + oy) * ow + ox) * v + l], want, `V=${v} stride ${sh} block ${b} (${oy}, ${ox}) lane ${l}`);
          }
  }
});
