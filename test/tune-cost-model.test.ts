import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fitLatencyModel, fitRidge, solveSpd, type Observation } from '../src/tune/cost-model.js';
import { scheduleFeatures } from '../src/space/features.js';
import { seededRng } from '../src/random.js';
import { sampleSchedules } from '../src/space/knobs.js';
import { syntheticTarget } from '../src/toolchain/target.js';
import type { WorkloadShape } from '../src/ir/workload.js';

test('the Cholesky solver solves a small SPD system', () => {
  const x = solveSpd(
    [
      [4, 1],
      [1, 3],
    ],
    [1, 2],
  );
  assert.ok(Math.abs(4 * x[0]! + x[1]! - 1) < 1e-12 && Math.abs(x[0]! + 3 * x[1]! - 2) < 1e-12);
  assert.throws(
    () =>
      solveSpd(
        [
          [0, 0],
          [0, 1],
        ],
        [1, 1],
      ),
    RangeError,
  );
});

test('ridge recovers a synthetic linear relation, constant columns included', () => {
  const rng = seededRng(7);
  const rows = Array.from({ length: 60 }, () => [rng.next() * 10, rng.next() * 5 - 2, rng.next(), 3]);
  const y = rows.map((r) => 1.5 + 2 * r[0]! - 3 * r[1]! + 0.5 * r[2]!);
  const m = fitRidge(rows, y, 1e-8);
  assert.ok(Math.abs(m.weights[0]! - 2) < 1e-4);
  assert.ok(Math.abs(m.weights[1]! + 3) < 1e-4);
  assert.ok(Math.abs(m.weights[2]! - 0.5) < 1e-3);
  assert.ok(Math.abs(m.weights[3]!) < 1e-9, 'a constant column carries no weight');
  assert.ok(Math.abs(m.predict([1, 1, 1, 3]) - 1) < 1e-3);
  // a heavy penalty shrinks the slopes toward zero
  const shrunk = fitRidge(rows, y, 1e6);
  assert.ok(Math.abs(shrunk.weights[0]!) < 0.1);
});

test('the latency model learns a level-dependent locality penalty and ranks held-out schedules', () => {
  const w: WorkloadShape = {
    op: 'conv2d',
    dtype: 'float32',
    n: 1,
    cin: 64,
    h: 28,
    w: 28,
    cout: 64,
    kh: 3,
    kw: 3,
    strideH: 1,
    strideW: 1,
    pads: [1, 1, 1, 1],
    dilationH: 1,
    dilationW: 1,
    groups: 1,
    oh: 28,
    ow: 28,
    epilogue: [],
  };
  const t = syntheticTarget({ avx512f: true, avx2: true, fma: true }, 4);
  const schedules = sampleSchedules(w, t, 80, seededRng(3));
  // made-up latency law: threads help, big L2 tiles hurt only under interference (level 1)
  const law = (s: (typeof schedules)[number], level: number) => {
    const f = scheduleFeatures(w, s);
    return (4 / f.threads) * (level === 1 ? 1 + f.footprintBytes.l2 / 2 ** 18 : 1);
  };
  const train = schedules.slice(0, 60),
    held = schedules.slice(60);
  const obs: Observation[] = train.flatMap((s) =>
    [0, 1].map((level) => ({ features: scheduleFeatures(w, s), schedule: s, level, medianMs: law(s, level) })),
  );
  const model = fitLatencyModel(obs, [0, 1], 0.1)!;
  assert.ok(model);
  const rank = (xs: number[]) => {
    const order = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
    const r = new Array<number>(xs.length);
    order.forEach(([, i], k) => {
      r[i] = k;
    });
    return r;
  };
  for (const level of [0, 1]) {
    const truth = rank(held.map((s) => law(s, level)));
    const pred = rank(held.map((s) => model.predictMs(scheduleFeatures(w, s), s, level)));
    const n = held.length;
    const d2 = truth.reduce((sum, r, i) => sum + (r - pred[i]!) ** 2, 0);
    const spearman = 1 - (6 * d2) / (n * (n * n - 1));
    assert.ok(spearman > 0.8, `level ${level}: rank correlation ${spearman.toFixed(2)}`);
  }
  assert.equal(fitLatencyModel(obs.slice(0, 3), [0, 1]), undefined, 'too few observations: no model');
});
