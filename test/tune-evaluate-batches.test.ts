/**
 * Several workloads' batches evaluated as one (one build, one harness child per thread count):
 * each batch gets back what it would alone — its own trials, in its order, each one's record in
 * the database under its own workload — and a second evaluation reads them all back.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeRecord, recordIdOf } from '../src/db/record.js';
import { jobTimeoutMs } from '../src/measure/run-candidate.js';
import { makeCandidate } from '../src/space/candidate.js';
import { openDatabase } from '../src/db/store.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { withKey, type Conv2dWorkload } from '../src/ir/workload.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { detectTarget } from '../src/toolchain/target.js';
import { evaluateBatches, type EvaluateContext } from '../src/tune/evaluate.js';
import type { TrialResult } from '../src/tune/search.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-evaluate-batches-'));
after(() => rmSync(root, { recursive: true, force: true }));

const shape: Conv2dWorkload = {
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 16,
  h: 8,
  w: 8,
  cout: 32,
  kh: 3,
  kw: 3,
  strideH: 1,
  strideW: 1,
  pads: [1, 1, 1, 1],
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 8,
  ow: 8,
  epilogue: ['bias', 'relu'],
};

test(
  'batches of two workloads in one evaluation: each gets its own trials and records; a second evaluation measures nothing',
  { timeout: 600_000 },
  async () => {
    const target = await detectTarget();
    const fingerprint = targetFingerprint(target);
    const db = await openDatabase(join(root, 'db'), { target, shipped: false });
    const a = withKey(shape),
      b = withKey({ ...shape, cout: 48, epilogue: ['bias'] });
    const distinct = (w: typeof a) => [
      ...new Map(
        [defaultTableRefresh(w, target, 1), localityGreedy(w, target, 1), parallelHeavy(w, target, 1)].map((s) => [JSON.stringify(s), s]),
      ).values(),
    ];
    const sa = distinct(a),
      sb = distinct(b).slice(0, 1);
    const ctx: EvaluateContext = {
      target,
      fingerprint,
      db,
      levels: [0],
      levelsFor: () => [0],
      bank: async () => undefined,
      cacheDir: join(root, 'cache'),
      minTimeMs: 5,
    };
    const seen: [string, TrialResult][] = [];
    const hook = (name: string) => (r: TrialResult) => {
      seen.push([name, r]);
    };
    const batches = [
      { workload: a, schedules: sa, onTrial: hook('a') },
      { workload: b, schedules: sb, onTrial: hook('b') },
    ];
    const first = await evaluateBatches(batches, ctx);

    assert.equal(first.length, 2);
    [
      [a, sa, first[0]!],
      [b, sb, first[1]!],
    ].forEach(([w, schedules, results]) => {
      const ids = (schedules as typeof sa).map((s) => recordIdOf((w as typeof a).key, fingerprint, s, s.threads));
      assert.deepEqual(
        (results as TrialResult[]).map((r) => r.id),
        ids,
        "one trial per schedule, in its batch's order",
      );
      assert.ok(
        (results as TrialResult[]).every((r) => r.status === 'ok' && !r.fromDb && r.medianMs['0']! > 0),
        'checked and timed here',
      );
      const keys = (xs: readonly unknown[]) => xs.map((x) => JSON.stringify(x)).sort();
      assert.deepEqual(
        keys(db.records((w as typeof a).key).map((r) => r.schedule)),
        keys(schedules as typeof sa),
        'each record is filed under its own workload',
      );
    });
    assert.deepEqual(
      seen
        .filter(([n]) => n === 'a')
        .map(([, r]) => r.id)
        .sort(),
      first[0]!.map((r) => r.id).sort(),
      "a batch's hook sees its trials",
    );
    assert.deepEqual(
      seen.filter(([n]) => n === 'b').map(([, r]) => r.id),
      first[1]!.map((r) => r.id),
      'and only its own',
    );

    seen.length = 0;
    const again = await evaluateBatches(batches, ctx);
    assert.ok(
      again.flat().every((r) => r.fromDb),
      'every trial is a database hit now',
    );
    assert.deepEqual(
      again.map((rs) => rs.map((r) => r.medianMs['0'])),
      first.map((rs) => rs.map((r) => r.medianMs['0'])),
      'read back as measured',
    );
    assert.equal(seen.length, sa.length + sb.length, 'hits are reported too');
  },
);

test('a recorded timeout is measured again, and the new record is the one kept', { timeout: 600_000 }, async () => {
  const target = await detectTarget();
  const fingerprint = targetFingerprint(target);
  const db = await openDatabase(join(root, 'db-timeout'), { target, shipped: false });
  const w = withKey({ ...shape, cout: 16 });
  const s = defaultTableRefresh(w, target, 1);
  const cand = makeCandidate(w, s, target);
  await db.append([
    makeRecord({
      workload: w,
      target,
      schedule: s,
      features: cand.features,
      latencies: {},
      status: 'timeout',
      error: 'level 0: no result within 60000 ms',
    }),
  ]);
  const ctx: EvaluateContext = {
    target,
    fingerprint,
    db,
    levels: [0],
    levelsFor: () => [0],
    bank: async () => undefined,
    cacheDir: join(root, 'cache'),
    minTimeMs: 5,
  };
  const [[r]] = await evaluateBatches([{ workload: w, schedules: [s] }], ctx);
  assert.equal(r!.fromDb, false, 'measured, not read back');
  assert.equal(r!.status, 'ok');
  assert.deepEqual(
    db.records(w.key).map((x) => x.status),
    ['ok'],
    'the ok record replaces the timeout',
  );
});

test('the default per-job limit: 60 s, more for a layer whose reference and first calls need it', () => {
  assert.equal(jobTimeoutMs(undefined), 60_000);
  assert.equal(jobTimeoutMs(2e9), 60_000, 'a ResNet-sized layer');
  const fcnHead = 2 * 2048 * 512 * 9 * 65 * 65;
  assert.ok(jobTimeoutMs(fcnHead) > (fcnHead / 0.5e9) * 1000, "FCN's 80 GFLOP head: longer than its reference at 0.5 GFLOP/s");
  assert.ok(jobTimeoutMs(2 * fcnHead) > jobTimeoutMs(fcnHead));
});
