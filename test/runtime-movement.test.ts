/**
 * Data-movement ops (transpose, slice, split, concat plain and NCHW[V]c, expand, pad, gather with
 * int64/int32 indices and a constant table, cast) against ONNX Runtime, and the layout reorders
 * round-tripping exactly with zeroed padding.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../src/onnx/model.js';
import { OP, LAYOUT_KIND } from '../src/runtime/ops.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { arenaRef } from '../src/runtime/native-plan.js';
import { check, f32, graphOf, named, seeded, X, type Case } from './runtime-harness.js';
import { buildGraphPlan } from '../src/bundle/plan.js';
import { translatePlan } from '../src/runtime/translate.js';
import { fromIrLayer } from '../src/runtime/runtime-layer.js';
import { VeltairError } from '../src/errors.js';

const ints = (dims: number[], values: number[]): Tensor => ({ dtype: 'int64', dims, data: new Float64Array(values) });

const CASES: Case[] = [
  { name: 'Transpose 3-D', node: { op: 'Transpose', attrs: { perm: [2, 0, 1] } }, feeds: [X([3, 4, 5])], out: [5, 3, 4] },
  {
    name: 'Transpose 4-D (attention heads)',
    node: { op: 'Transpose', attrs: { perm: [0, 2, 1, 3] } },
    feeds: [X([2, 5, 3, 7])],
    out: [2, 3, 5, 7],
  },
  // The source's contiguous axis becomes an outer one: register-transposed tiles (full ones, then tiles cut by both edges).
  {
    name: 'Transpose 4-D (attention keys, whole tiles)',
    node: { op: 'Transpose', attrs: { perm: [0, 2, 3, 1] } },
    feeds: [X([1, 32, 4, 16])],
    out: [1, 4, 16, 32],
  },
  {
    name: 'Transpose 4-D (attention keys, edge tiles)',
    node: { op: 'Transpose', attrs: { perm: [0, 2, 3, 1] } },
    feeds: [X([2, 37, 3, 19])],
    out: [2, 3, 19, 37],
  },
  {
    name: 'Transpose 2-D (tiles, both edges cut)',
    node: { op: 'Transpose', attrs: { perm: [1, 0] } },
    feeds: [X([35, 50])],
    out: [50, 35],
  },
  {
    name: 'Transpose 3-D (tile axis in the middle)',
    node: { op: 'Transpose', attrs: { perm: [2, 1, 0] } },
    feeds: [X([17, 3, 40])],
    out: [40, 3, 17],
  },
  {
    name: 'Slice with steps',
    node: { op: 'Slice', inputs: ['x', 's', 'e', 'a', 'st'] },
    feeds: [X([5, 9])],
    out: [2, 3],
    inits: [
      ['s', ints([2], [1, 1])],
      ['e', ints([2], [5, 8])],
      ['a', ints([2], [0, 1])],
      ['st', ints([2], [2, 3])],
    ],
  },
  {
    name: 'Slice negative step',
    node: { op: 'Slice', inputs: ['x', 's', 'e', 'a', 'st'] },
    feeds: [X([4, 7])],
    out: [4, 3],
    inits: [
      ['s', ints([1], [-1])],
      ['e', ints([1], [-8])],
      ['a', ints([1], [1])],
      ['st', ints([1], [-3])],
    ],
  },
  {
    name: 'Split uneven',
    nodes: [
      { op: 'Split', inputs: ['x', 'sp'], outputs: ['p', 'q'], attrs: { axis: 1 } },
      { op: 'Sub', inputs: ['q', 'p2'], outputs: ['y'] },
      { op: 'Slice', inputs: ['p', 's', 'e', 'a'], outputs: ['p2'] },
    ],
    feeds: [X([2, 7, 3])],
    out: [2, 4, 3],
    inits: [
      ['sp', ints([2], [3, 4])],
      ['s', ints([1], [0])],
      ['e', ints([1], [1])],
      ['a', ints([1], [1])],
    ],
  },
  {
    name: 'Concat axis 1 with a constant',
    node: { op: 'Concat', inputs: ['x', 'k', 'b'], attrs: { axis: 1 } },
    feeds: [X([2, 3, 4]), named('b', f32([2, 1, 4], 5))],
    out: [2, 6, 4],
    inits: [['k', { dtype: 'float32', dims: [2, 2, 4], data: seeded(16, 8) }]],
  },
  { name: 'Concat last axis', node: { op: 'Concat', attrs: { axis: -1 } }, feeds: [X([3, 2]), named('b', f32([3, 5], 5))], out: [3, 7] },
  {
    name: 'Concat blocked channels',
    node: { op: 'Concat', attrs: { axis: 1 } },
    feeds: [X([2, 16, 3, 3]), named('b', f32([2, 32, 3, 3], 5))],
    out: [2, 48, 3, 3],
    vec: 16,
  },
  {
    name: 'Concat blocked V=8',
    node: { op: 'Concat', attrs: { axis: 1 } },
    feeds: [X([1, 8, 2, 5]), named('b', f32([1, 16, 2, 5], 5))],
    out: [1, 24, 2, 5],
    vec: 8,
  },
  {
    name: 'Expand',
    node: { op: 'Expand', inputs: ['x', 'sh'] },
    feeds: [X([3, 1, 4])],
    out: [2, 3, 5, 4],
    inits: [['sh', ints([4], [2, 3, 5, 4])]],
  },
  {
    name: 'Pad constant',
    node: { op: 'Pad', inputs: ['x', 'p', 'v'] },
    feeds: [X([2, 3, 4])],
    out: [3, 3, 7],
    inits: [
      ['p', ints([6], [1, 0, 2, 0, 0, 1])],
      ['v', { dtype: 'float32', dims: [], data: new Float32Array([0.75]) }],
    ],
  },
  {
    name: 'Gather embedding (int64 ids, constant table)',
    node: { op: 'Gather', inputs: ['table', 'ids'] },
    feeds: [named('ids', { dtype: 'int64', dims: [2, 3], data: BigInt64Array.from([0n, 4n, 2n, -1n, 3n, 3n]) })],
    out: [2, 3, 6],
    inits: [['table', { dtype: 'float32', dims: [5, 6], data: seeded(30, 3) }]],
  },
  {
    name: 'Gather axis 1 int32',
    node: { op: 'Gather', inputs: ['x', 'ids'], attrs: { axis: 1 } },
    feeds: [X([3, 5, 2]), named('ids', { dtype: 'int32', dims: [4], data: Int32Array.from([4, 0, 0, 2]) })],
    out: [3, 4, 2],
  },
];

for (const c of CASES) {
  test(`native ${c.name} matches ONNX Runtime`, async () => {
    await check(c);
  });
}

/** One REORDER step from value a to value b. */
function reorder(
  from: [number, number],
  to: [number, number],
  dims: { n: number; c: number; hw: number; rows: number; cols: number },
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
        ints: [...from, ...to, dims.n, dims.c, dims.hw, dims.rows, dims.cols],
      },
    ],
    symbols: [],
    params: [],
  };
}

test('NCHW ↔ NCHW[V]c reorders round-trip exactly and zero the padded channels', async () => {
  // V = 8: a 3-channel image split into pixel runs (PART_PX = 2048 in ops_reorder.c) with a tail of 7, and full and partial blocks
  for (const [n, c, hw, v] of [
    [2, 19, 35, 16],
    [1, 3, 50, 8],
    [3, 32, 7, 16],
    [1, 5, 1, 16],
    [1, 3, 4103, 8],
    [2, 19, 35, 8],
    [1, 8, 8, 8],
  ] as const) {
    const x = seeded(n * c * hw, 7 + c);
    const cb = Math.ceil(c / v);
    const blockedBytes = n * cb * v * hw * 4;
    const dims = { n, c, hw, rows: 0, cols: 0 };
    const to = await createExecutor(reorder([LAYOUT_KIND.natural, 1], [LAYOUT_KIND.blocked, v], dims, x.byteLength, blockedBytes), null);
    const back = await createExecutor(reorder([LAYOUT_KIND.blocked, v], [LAYOUT_KIND.natural, 1], dims, blockedBytes, x.byteLength), null);
    const blocked = to.run([x])[0] as Float32Array;
    for (let i = 0; i < n; i++)
      for (let ch = 0; ch < cb * v; ch++)
        for (let p = 0; p < hw; p++) {
          const got = blocked[((i * cb + Math.floor(ch / v)) * hw + p) * v + (ch % v)]!;
          assert.equal(got, ch < c ? x[(i * c + ch) * hw + p] : 0, `n=${i} c=${ch} p=${p}`);
        }
    assert.deepEqual(back.run([blocked])[0], x);
    to.close();
    back.close();
  }
});

test('[M][K] ↔ [M][Kpad] and blocked → rows reorders round-trip exactly', async () => {
  const [m, k, v] = [7, 21, 16];
  const x = seeded(m * k, 3);
  const padded = Math.ceil(k / v) * v;
  const dims = { n: 1, c: k, hw: 1, rows: m, cols: k };
  const pad = await createExecutor(reorder([LAYOUT_KIND.natural, 1], [LAYOUT_KIND.rows, v], dims, x.byteLength, m * padded * 4), null);
  const unpad = await createExecutor(reorder([LAYOUT_KIND.rows, v], [LAYOUT_KIND.natural, 1], dims, m * padded * 4, x.byteLength), null);
  const rows = pad.run([x])[0] as Float32Array;
  for (let r = 0; r < m; r++) for (let j = 0; j < padded; j++) assert.equal(rows[r * padded + j], j < k ? x[r * k + j] : 0);
  assert.deepEqual(unpad.run([rows])[0], x);
  // generic path: [N=2][C=5][HW=3] blocked (V=8) → rows of [6][5]... via the element-wise route
  const nat = seeded(2 * 5 * 3, 4);
  const toBlocked = await createExecutor(
    reorder([LAYOUT_KIND.natural, 1], [LAYOUT_KIND.blocked, 8], { n: 2, c: 5, hw: 3, rows: 10, cols: 3 }, nat.byteLength, 2 * 8 * 3 * 4),
    null,
  );
  const blockedToRows = await createExecutor(
    reorder([LAYOUT_KIND.blocked, 8], [LAYOUT_KIND.rows, 8], { n: 2, c: 5, hw: 3, rows: 10, cols: 3 }, 2 * 8 * 3 * 4, 10 * 8 * 4),
    null,
  );
  const r2 = blockedToRows.run([toBlocked.run([nat])[0]!])[0] as Float32Array;
  for (let r = 0; r < 10; r++) for (let j = 0; j < 8; j++) assert.equal(r2[r * 8 + j], j < 3 ? nat[r * 3 + j] : 0);
  for (const e of [pad, unpad, toBlocked, blockedToRows]) e.close();
});

test('a gather index outside the table is a BAD_INPUT error naming the index, and the executor stays usable', async () => {
  const { graph } = graphOf({
    inputs: [{ name: 'ids', dtype: 'int64', shape: [3] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [3, 4] }],
    initializers: [['table', { dtype: 'float32', dims: [5, 4], data: seeded(20, 1) }]],
    nodes: [{ op: 'Gather', inputs: ['table', 'ids'], outputs: ['y'] }],
  });
  const exec = await createExecutor(
    translatePlan(
      buildGraphPlan(graph, new Map(), 16),
      graph.layers.map((l) => fromIrLayer(l)),
    ).plan,
    null,
  );
  assert.throws(
    () => exec.run([BigInt64Array.from([1n, 7n, 0n])]),
    (e: unknown) =>
      e instanceof VeltairError && e.code === 'BAD_INPUT' && /index 7 \(position 1\) is out of range for an axis of 5/.test(e.message),
  );
  const y = exec.run([BigInt64Array.from([4n, -5n, 2n])])[0] as Float32Array;
  assert.equal(y[0], seeded(20, 1)[16]);
  exec.close();
});
