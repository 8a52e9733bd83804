/**
 * One parallel region for consecutive steps (executor.c run_team): kernels and team-safe ops at the
 * same thread count share a team, separated by barriers instead of a fork and a join each. What a
 * user relies on: the results are those of one region per step, bit for bit (every thread gets the
 * same share), and a step that fails inside a team fails the run with its message, as it would
 * alone, instead of hanging the team or running on.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { arenaRef, type NativePlan, type NativeStep } from '../src/runtime/native-plan.js';
import { gatherPieceTable } from '../src/runtime/lower-movement.js';
import { LAYOUT_KIND, OP, POOL_KIND } from '../src/runtime/ops.js';

const V = 16,
  C = 24,
  HW = 200,
  BLOCKS = Math.ceil(C / V);
const TENSOR = BLOCKS * HW * V * 4;

/** CHANNEL_GATHER ints for one input and one output of C channels: output channel i = input channel perm[i]. */
function gatherInts(perm: readonly number[]): number[] {
  return [V, 1, HW, 1, 1, C, C, ...perm.flatMap((c) => [0, c])];
}

/** x → gather(reverse) → gather(shuffle of 2 groups) → global average pool, every step at `threads` threads. */
function plan(threads: number, secondGather: number[]): NativePlan {
  const reverse = Array.from({ length: C }, (_, i) => C - 1 - i);
  const pooled = BLOCKS * V * 4;
  const step = (s: Omit<NativeStep, 'threads' | 'floats'>): NativeStep => ({ ...s, threads, floats: [] });
  return {
    arenaBytes: 3 * TENSOR + pooled,
    inputs: [{ name: 'x', dtype: 'float32', shape: [1, C, HW], offset: 0, bytes: TENSOR }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [BLOCKS * V], offset: 3 * TENSOR, bytes: pooled }],
    symbols: [],
    params: [],
    steps: [
      step({
        op: OP.CHANNEL_GATHER,
        label: 'reverse',
        inputs: [arenaRef(0)],
        outputs: [arenaRef(TENSOR)],
        inputBytes: [TENSOR],
        outputBytes: [TENSOR],
        ints: gatherInts(reverse),
      }),
      step({
        op: OP.CHANNEL_GATHER,
        label: 'shuffle',
        inputs: [arenaRef(TENSOR)],
        outputs: [arenaRef(2 * TENSOR)],
        inputBytes: [TENSOR],
        outputBytes: [TENSOR],
        ints: secondGather,
      }),
      step({
        op: OP.GLOBAL_POOL,
        label: 'pool',
        inputs: [arenaRef(2 * TENSOR)],
        outputs: [arenaRef(3 * TENSOR)],
        inputBytes: [TENSOR],
        outputBytes: [pooled],
        ints: [POOL_KIND['average']!, 1, C, HW, V],
      }),
    ],
  };
}

/** NCHW16c input: channel c, pixel q holds c * 1000 + q; padded lanes zero. */
function input(): Float32Array {
  const x = new Float32Array(TENSOR / 4);
  for (let c = 0; c < C; c++) for (let q = 0; q < HW; q++) x[(Math.floor(c / V) * HW + q) * V + (c % V)] = c * 1000 + q;
  return x;
}

const shuffle = Array.from({ length: C }, (_, i) => (i % 2) * (C / 2) + Math.floor(i / 2));

/** The shuffle with the lowering's piece table and a thread assignment for 2 threads (gather-assign.ts's runs, threads swapped). */
const assigned = [
  ...gatherInts(shuffle),
  ...gatherPieceTable([C], [shuffle.map((c): [number, number] => [0, c])]),
  2,
  3,
  0,
  0,
  120,
  1,
  0,
  120,
  HW,
  0,
  1,
  0,
  HW,
  1,
];

for (const [threads, second, what] of [
  [2, gatherInts(shuffle), ''],
  [3, gatherInts(shuffle), ' (3 threads on this team barrier)'],
  [2, assigned, ' (a gather following its thread assignment)'],
] as const) {
  test(`steps sharing one team give the results of one region per step, bit for bit, and the right ones${what}`, async () => {
    const exec = await createExecutor(plan(threads, [...second]), null);
    try {
      const run = (teams: boolean) => {
        exec.setTeams(teams);
        return Array.from(exec.run([input()])[0] as Float32Array);
      };
      const together = run(true),
        apart = run(false),
        again = run(true);
      assert.deepEqual(together, apart, 'one team and one region per step agree bit for bit');
      assert.deepEqual(again, together, 'and the team gives the same result every run');
      // output channel i = reversed channel shuffle[i] = C - 1 - shuffle[i]; its mean over the pixels
      const meanOfPixels = (HW - 1) / 2;
      for (let i = 0; i < C; i++) assert.equal(together[i], (C - 1 - shuffle[i]!) * 1000 + meanOfPixels, `channel ${i}`);
      for (let i = C; i < BLOCKS * V; i++) assert.equal(together[i], 0, `padded lane ${i} stays zero`);
    } finally {
      exec.close();
    }
  });
}

test('a step that fails inside a team fails the run with its own message, and the executor stays usable', async () => {
  const malformed = gatherInts(shuffle).slice(0, -2); // one output channel short of its source
  const exec = await createExecutor(plan(2, malformed), null);
  try {
    for (const teams of [true, true, false]) {
      exec.setTeams(teams);
      assert.throws(() => exec.run([input()]), /channel gather: \d+ ints for 24 output channels/, `teams ${teams}`);
    }
  } finally {
    exec.close();
  }
});

test('reorders in a team, the element-by-element one too, match one region per step and the natural order', async () => {
  const natural = C * HW * 4,
    rows = C * Math.ceil(HW / 8) * 8 * 4;
  const reorder = (to: 'natural' | 'rows', v: number) => [LAYOUT_KIND.blocked, V, LAYOUT_KIND[to], v, 1, C, HW, C, HW];
  const step = (s: Omit<NativeStep, 'threads' | 'floats'>): NativeStep => ({ ...s, threads: 2, floats: [] });
  const exec = await createExecutor(
    {
      arenaBytes: 2 * TENSOR + rows + natural,
      inputs: [{ name: 'x', dtype: 'float32', shape: [1, C, HW], offset: 0, bytes: TENSOR }],
      outputs: [
        { name: 'rows', dtype: 'float32', shape: [rows / 4], offset: 2 * TENSOR, bytes: rows },
        { name: 'y', dtype: 'float32', shape: [C * HW], offset: 2 * TENSOR + rows, bytes: natural },
      ],
      symbols: [],
      params: [],
      steps: [
        step({
          op: OP.CHANNEL_GATHER,
          label: 'shuffle',
          inputs: [arenaRef(0)],
          outputs: [arenaRef(TENSOR)],
          inputBytes: [TENSOR],
          outputBytes: [TENSOR],
          ints: gatherInts(shuffle),
        }),
        // blocked → rows has no fast path: the fallback, one thread inside the team
        step({
          op: OP.REORDER,
          label: 'to rows',
          inputs: [arenaRef(TENSOR)],
          outputs: [arenaRef(2 * TENSOR)],
          inputBytes: [TENSOR],
          outputBytes: [rows],
          ints: reorder('rows', 8),
        }),
        step({
          op: OP.REORDER,
          label: 'to natural',
          inputs: [arenaRef(TENSOR)],
          outputs: [arenaRef(2 * TENSOR + rows)],
          inputBytes: [TENSOR],
          outputBytes: [natural],
          ints: reorder('natural', 1),
        }),
      ],
    },
    null,
  );
  try {
    const run = (teams: boolean) => {
      exec.setTeams(teams);
      return exec.run([input()]).map((o) => Array.from(o as Float32Array));
    };
    const together = run(true),
      apart = run(false);
    assert.deepEqual(together, apart, 'one team and one region per step agree bit for bit');
    for (let i = 0; i < C; i++) {
      for (const q of [0, 1, HW - 1]) {
        const expected = shuffle[i]! * 1000 + q;
        assert.equal(together[1]![i * HW + q], expected, `natural channel ${i}, pixel ${q}`);
        assert.equal(together[0]![i * Math.ceil(HW / 8) * 8 + q], expected, `rows channel ${i}, pixel ${q}`);
      }
    }
  } finally {
    exec.close();
  }
});

test('a long chain in one team, each step reading what the other thread wrote in the step before, matches one region per step on every run', async () => {
  // 32 channels on a 64-pixel plane: the gather splits output blocks between the two threads, and
  // each output block draws from both input blocks, so every step needs both threads' writes of the
  // one before it (vt_parallel's team barrier orders them: ops_common.c).
  const c = 32,
    hw = 64,
    bytes = 2 * hw * V * 4,
    steps = 48;
  const mix = Array.from({ length: c }, (_, i) => (i * 17 + 5) % c);
  const exec = await createExecutor(
    {
      arenaBytes: 2 * bytes,
      inputs: [{ name: 'x', dtype: 'float32', shape: [1, c, hw], offset: 0, bytes }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [1, c, hw], offset: (steps % 2) * bytes, bytes }],
      symbols: [],
      params: [],
      steps: Array.from({ length: steps }, (_, s): NativeStep => ({
        op: OP.CHANNEL_GATHER,
        label: `mix ${s}`,
        threads: 2,
        floats: [],
        inputs: [arenaRef((s % 2) * bytes)],
        outputs: [arenaRef(((s + 1) % 2) * bytes)],
        inputBytes: [bytes],
        outputBytes: [bytes],
        ints: [V, 1, hw, 1, 1, c, c, ...mix.flatMap((ch) => [0, ch])],
      })),
    },
    null,
  );
  try {
    const x = new Float32Array(bytes / 4).map((_, i) => i);
    exec.setTeams(false);
    const apart = Array.from(exec.run([x])[0] as Float32Array);
    exec.setTeams(true);
    for (let r = 0; r < 30; r++) assert.deepEqual(Array.from(exec.run([x])[0] as Float32Array), apart, `run ${r}`);
  } finally {
    exec.close();
  }
});
