/**
 * Which thread writes what (space/tile-owner.ts) and the channel gather's assignment built on it
 * (runtime/gather-assign.ts, ops_channel.c check_runs): OpenMP's static schedule against libgomp
 * itself, the owners of three ShuffleNet schedules, the assignment's choices and exact coverage, and
 * the op with an assignment giving the bits it gives without one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Workload, WorkloadShape } from '../src/ir/workload.js';
import type { Tensor } from '../src/onnx/model.js';
import { assignGather, fixedOwner, type GatherRun, type GatherShape } from '../src/runtime/gather-assign.js';
import { gatherPieceTable } from '../src/runtime/lower-movement.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { arenaRef } from '../src/runtime/native-plan.js';
import { OP } from '../src/runtime/ops.js';
import { problemOf } from '../src/space/problem.js';
import { localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { isValid, makeSchedule, type Schedule } from '../src/space/knobs.js';
import { outputOwner, staticOwner, type OutputOwner } from '../src/space/tile-owner.js';
import { translatePlan } from '../src/runtime/translate.js';
import type { Target } from '../src/toolchain/target.js';
import { seeded } from './runtime-harness.js';
import { matchesOrt, model, prepare, t } from './runtime-kernels-fixture.js';

test("staticOwner is the thread libgomp's schedule(static) gives each iteration", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-static-'));
  try {
    const src = join(dir, 'owners.c'),
      bin = join(dir, 'owners');
    writeFileSync(
      src,
      [
        '#include <omp.h>',
        '#include <stdio.h>',
        '#include <stdlib.h>',
        'int main(int argc, char** argv) {',
        '  long n = atol(argv[1]); int t = atoi(argv[2]); int owner[64];',
        '  omp_set_dynamic(0);',
        '  #pragma omp parallel num_threads(t)',
        '  {',
        '    #pragma omp for schedule(static)',
        '    for (long i = 0; i < n; ++i) owner[i] = omp_get_thread_num();',
        '  }',
        '  for (long i = 0; i < n; ++i) printf("%d ", owner[i]);',
        '  return 0;',
        '}',
      ].join('\n'),
    );
    await execa(process.env['CC']?.split(/\s+/)[0] || 'cc', ['-O1', '-fopenmp', src, '-o', bin]);
    for (const threads of [2, 3, 4]) {
      for (const n of [1, 2, 5, 11, 12, 13, 64]) {
        const { stdout } = await execa(bin, [String(n), String(threads)]);
        const want = Array.from({ length: n }, (_, i) => staticOwner(i, n, threads));
        assert.deepEqual(stdout.trim().split(' ').map(Number), want, `${n} iterations on ${threads} threads`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const conv = (cin: number, cout: number, hw: number, k: number, groups = 1): WorkloadShape => ({
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin,
  h: hw,
  w: hw,
  cout,
  kh: k,
  kw: k,
  strideH: 1,
  strideW: 1,
  pads: k === 3 ? [1, 1, 1, 1] : [0, 0, 0, 0],
  dilationH: 1,
  dilationW: 1,
  groups,
  oh: hw,
  ow: hw,
  epilogue: [],
});
const schedule = (s: Partial<Schedule>): Schedule =>
  makeSchedule({
    vec: 16,
    regOc: 1,
    regCols: 1,
    tileIc: 1,
    tileOc: 1,
    tileRows: 1,
    tileCols: 1,
    loopOrder: 'oc_outer',
    parallelAxis: 'spatial',
    unroll: 1,
    threads: 2,
    ...s,
  });
const ownerOf = (w: WorkloadShape, s: Schedule) => outputOwner({ problem: problemOf(w, 16), schedule: s }, 2);

test("owners of ShuffleNet's schedules: column tiles of a flattened 1x1, channel tiles, depthwise rows", () => {
  // 14x14 1x1 conv, flattened to 196 columns in blocks of 9: 22 blocks, tiles of 2 = 11 tiles, 6 to thread 0.
  const flat = ownerOf(
    conv(48, 48, 14, 1),
    schedule({ regOc: 3, regCols: 9, tileIc: 3, tileCols: 2, loopOrder: 'spatial_outer', unroll: 4 }),
  );
  for (const b of [0, 1, 2]) {
    assert.equal(flat(0, b, 107), 0, `block ${b}: pixel 107 is in tile 5`);
    assert.equal(flat(0, b, 108), 1, `block ${b}: pixel 108 starts tile 6`);
  }
  // 7x7 1x1 96 -> 96 split by oc: 2 groups of 3 blocks, all pixels of a group on one thread.
  const oc = ownerOf(conv(96, 96, 7, 1), schedule({ regOc: 3, regCols: 9, tileIc: 6, tileCols: 6, parallelAxis: 'oc', unroll: 4 }));
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5].map((b) => [oc(0, b, 0), oc(0, b, 48)]),
    [
      [0, 0],
      [0, 0],
      [0, 0],
      [1, 1],
      [1, 1],
      [1, 1],
    ],
  );
  // 7x7 depthwise, rows outermost (spatial): 7 row tiles, 4 to thread 0 (pixels 0-27).
  const dw = ownerOf(conv(96, 96, 7, 3, 96), schedule({ regCols: 7, tileOc: 6 }));
  assert.deepEqual(
    [27, 28].map((q) => dw(0, 5, q)),
    [0, 1],
  );
  // batch is the outermost index: with one tile per image, image n is thread n.
  const batched = outputOwner({ problem: problemOf({ ...conv(16, 16, 4, 1), n: 2 }, 16), schedule: schedule({ regCols: 16 }) }, 2);
  assert.deepEqual([batched(0, 0, 15), batched(1, 0, 0)], [0, 1]);
});

/** Every item's runs tile its pixels [0, hw) in order, items in order. */
function assertCovers(runs: readonly GatherRun[], items: number, hw: number): void {
  let item = 0,
    q = 0;
  for (const r of runs) {
    assert.deepEqual([r.item, r.q0], [item, q], `run ${JSON.stringify(r)} continues item ${item} at ${q}`);
    assert.ok(r.q1 > r.q0 && r.q1 <= hw);
    q = r.q1;
    if (q === hw) {
      item++;
      q = 0;
    }
  }
  assert.equal(item, items);
}

/** Output = 16 channels of input 0 (its block 1), then 8 of input 1 and 8 of input 0; the inputs' channels are CIN. */
const CIN = [32, 16];
const shape = (hw: number): GatherShape => ({
  n: 1,
  hw,
  v: 16,
  sources: [
    [
      ...Array.from({ length: 16 }, (_, i): [number, number] => [0, 16 + i]),
      ...Array.from({ length: 8 }, (_, i): [number, number] => [1, i]),
      ...Array.from({ length: 8 }, (_, i): [number, number] => [0, i]),
    ],
  ],
});
const byPixel =
  (cut: number): OutputOwner =>
  (_n, _b, q) =>
    q < cut ? 0 : 1;

test("a gather follows its writers' pixel split, keeps the fixed split on ties, and drops an assignment that idles a thread", () => {
  const g = shape(196);
  const runs = assignGather(g, 2, [byPixel(108), byPixel(108)])!;
  assert.deepEqual(
    runs.map((r) => [r.item, r.q0, r.q1, r.thread]),
    [
      [0, 0, 108, 0],
      [0, 108, 196, 1],
      [1, 0, 108, 0],
      [1, 108, 196, 1],
    ],
  );
  assertCovers(runs, 2, 196);
  assert.equal(assignGather(g, 2, [byPixel(98), byPixel(98)]), undefined, 'the writers split as the fixed split does');
  assert.equal(assignGather(g, 2, [undefined, undefined]), undefined, 'no writer known');
  assert.equal(assignGather(g, 1, [byPixel(108), byPixel(108)]), undefined, 'one thread');
  // Block 1 loads input 0 block 0 (thread 0's) and input 1 (thread 1's): a tie, so the fixed split's pixel halves.
  const split = assignGather(g, 2, [() => 0, () => 1]);
  assert.equal(split, undefined, "block 0 would all go to thread 0: 1.5 of 2 blocks' loads on one thread");
  // On a 7x7 plane the fixed split gives block 0 to thread 0 and block 1 to thread 1; writers the other way round swap them.
  const small: GatherShape = {
    ...shape(49),
    sources: [Array.from({ length: 32 }, (_, i): [number, number] => (i < 16 ? [0, 16 + i] : [1, i - 16]))],
  };
  assert.deepEqual(
    assignGather(small, 2, [() => 1, () => 0])?.map((r) => [r.item, r.q0, r.q1, r.thread]),
    [
      [0, 0, 49, 1],
      [1, 0, 49, 0],
    ],
  );
  assert.deepEqual(
    [0, 1].map((item) => fixedOwner(item, 2, 0, 49, 2)),
    [0, 1],
  );
  // vt_parallel runs no more threads than items: 3 items on 4 threads are items 0, 1, 2 on threads 0, 1, 2
  assert.deepEqual(
    [0, 1, 2].map((item) => fixedOwner(item, 3, 0, 49, 4)),
    [0, 1, 2],
  );
  assert.deepEqual(
    [0, 97, 98, 195].map((q) => fixedOwner(0, 1, q, 196, 2)),
    [0, 0, 1, 1],
    'pixels split on every thread',
  );
});

test('a V = 16 gather with a thread assignment writes what it writes without one; a malformed assignment is an error', async () => {
  const g = shape(196);
  const runs = assignGather(g, 2, [byPixel(108), byPixel(108)])!;
  const ins = CIN.map((c, i) => seeded(Math.ceil(c / 16) * 16 * g.hw, 31 + i));
  const at = [0, ins[0]!.byteLength];
  const outAt = at[1]! + ins[1]!.byteLength,
    outBytes = 2 * 16 * g.hw * 4;
  const table = gatherPieceTable(CIN, g.sources);
  const assignment = (rs: readonly GatherRun[]) => [2, rs.length, ...rs.flatMap((r) => [r.item, r.q0, r.q1, r.thread])];
  const run = async (tail: readonly number[], threads: number) => {
    const exec = await createExecutor(
      {
        arenaBytes: outAt + outBytes,
        inputs: ins.map((x, i) => ({ name: `in${i}`, dtype: 'float32' as const, shape: [], offset: at[i]!, bytes: x.byteLength })),
        outputs: [{ name: 'y', dtype: 'float32' as const, shape: [], offset: outAt, bytes: outBytes }],
        steps: [
          {
            op: OP.CHANNEL_GATHER,
            threads,
            inputs: at.map((o) => arenaRef(o)),
            outputs: [arenaRef(outAt)],
            floats: [],
            label: 'gather',
            ints: [16, 1, g.hw, 2, 1, ...CIN, 32, ...g.sources.flat(2), ...table, ...tail],
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
  const plain = await run([], 2);
  assert.deepEqual(await run(assignment(runs), 2), plain, 'the assignment at the thread count it was made for');
  assert.deepEqual(await run(assignment(runs), 1), plain, 'at another thread count it is not used');
  // A run moved to the wrong pixel leaves a gap; one covering an item twice overlaps; one naming thread 2 of 2 does not exist.
  const bad: GatherRun[][] = [
    runs.map((r, i) => (i === 1 ? { ...r, q0: r.q0 + 1 } : r)),
    [...runs.slice(0, 2), runs[0]!, ...runs.slice(2)],
    runs.map((r, i) => (i === 3 ? { ...r, thread: 2 } : r)),
  ];
  for (const rs of bad) await assert.rejects(async () => run(assignment(rs), 2), /thread assignment leaves a gap or an overlap/);
  await assert.rejects(async () => run(assignment(runs.slice(0, 2)), 2), /thread assignment does not cover every output block/);
  // A run after the last item (it would read past the op's outputs) and an assignment for more threads than a core count.
  const pastTheEnd = assignment([...runs, { item: 2, q0: 0, q1: 1, thread: 0 }]);
  await assert.rejects(async () => run(pastTheEnd, 2), /thread assignment runs past the last output block/);
  const tooMany = [1025, ...assignment(runs).slice(1)];
  await assert.rejects(async () => run(tooMany, 2), /thread assignment has a malformed header/);
});

test('a shuffle of two 1x1 convs split at pixel 108 of 196: the gather follows them, and the model matches ONNX Runtime', async () => {
  const c = 32,
    hw = 14;
  const ints = (values: number[]): Tensor => ({ dtype: 'int64', dims: [values.length], data: new Float64Array(values) });
  const spec = model(
    [1, c, hw, hw],
    [1, 16, hw, hw],
    [
      ['w1', t([c, c, 1, 1], 3)],
      ['w2', t([c, c, 1, 1], 5)],
      ['w3', t([16, 2 * c, 1, 1], 7)],
      ['to5', ints([1, 2, c, hw, hw])],
      ['to4', ints([1, 2 * c, hw, hw])],
    ],
    [
      { op: 'Conv', inputs: ['x', 'w1'], outputs: ['a'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Conv', inputs: ['x', 'w2'], outputs: ['b'], attrs: { kernel_shape: [1, 1] } },
      { op: 'Concat', inputs: ['a', 'b'], outputs: ['cat'], attrs: { axis: 1 } },
      { op: 'Reshape', inputs: ['cat', 'to5'], outputs: ['r5'] },
      { op: 'Transpose', inputs: ['r5'], outputs: ['t5'], attrs: { perm: [0, 2, 1, 3, 4] } },
      { op: 'Reshape', inputs: ['t5', 'to4'], outputs: ['sh'] },
      { op: 'Conv', inputs: ['sh', 'w3'], outputs: ['y'], attrs: { kernel_shape: [1, 1] } },
    ],
  );
  // The first version of each conv: 22 column blocks of 9 pixels in 11 tiles, 6 of them (pixels 0-107) on thread 0.
  const versions = (w: Workload, target: Target): Schedule[] => {
    const vec = target.isa.avx512f ? 16 : 8;
    const split = schedule({ vec, regOc: 2, regCols: 9, tileIc: 2, tileCols: 2 });
    return [
      w.op === 'conv2d' && w.cout === c && isValid(split, w, target) ? split : localityGreedy(w, target, 2),
      parallelHeavy(w, target, 2),
    ];
  };
  const p = await prepare(spec, versions);
  try {
    const gatherInts = (threads: number) =>
      translatePlan(p.plan, p.layers, { threads }).plan.steps.find((s) => s.op === OP.CHANNEL_GATHER)!.ints;
    if (p.vec === 16) {
      const [one, two] = [gatherInts(1), gatherInts(2)];
      // one input block per output block, 4 output blocks: 2 runs each
      assert.deepEqual(two.slice(one.length, one.length + 2), [2, 8], 'at 2 threads the gather carries an assignment');
      assert.deepEqual(two.slice(one.length + 2, one.length + 10), [0, 0, 108, 0, 0, 108, 196, 1]);
    }
    await matchesOrt(p, spec, 11);
  } finally {
    await rm(p.cache, { recursive: true, force: true });
  }
});
