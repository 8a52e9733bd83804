import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { compactRecords } from '../src/db/compact.js';
import { isComplete, makeRecord, preferRecord, recordId, recordLine, type TuningRecord } from '../src/db/record.js';
import { appendRecords, openDatabase } from '../src/db/store.js';
import { resolveCompileOptions } from '../src/compile/options.js';
import { VeltairError } from '../src/errors.js';
import { scheduleFeatures } from '../src/space/features.js';
import { winogradDefault } from '../src/space/presets.js';
import { makeSchedule, type Schedule } from '../src/space/knobs.js';
import { seededRng } from '../src/random.js';
import { withKey, type Conv2dWorkload } from '../src/ir/workload.js';
import { createTaskSearch } from '../src/tune/search.js';
import { slackExposure } from '../src/bench/race-slack.js';
import { selectFamily, type FamilyCandidate } from '../src/space/family.js';
import { quietBounds, raceReference, raceVerdicts, raceWindowMs, survives } from '../src/tune/race.js';
import { fitRankModel, MIN_RANK_RECORDS, rankingRecords } from '../src/tune/rank-model.js';
import { evaluateRanking, kendallTau, runScores } from '../src/tune/rank-eval.js';
import { CONV, DENSE, sampleRecord, TARGET_A, TARGET_B } from './db-fixture.js';

const rule = { slack: 0.5, k: 1 };
const BIN = resolve('bin/veltair');

test('quiet bounds: the fastest repeat below, the 75th-percentile repeat above', () => {
  assert.deepEqual(quietBounds([4, 1, 3, 2]), { lower: 1, upper: 3 });
  assert.deepEqual(quietBounds([5]), { lower: 5, upper: 5 });
  assert.deepEqual(quietBounds([2, 2, 2, 100]), { lower: 2, upper: 2 }, 'one descheduled repeat does not lift the upper bound');
  assert.equal(quietBounds([]), undefined);
  assert.equal(raceWindowMs(100), 20);
});

test('racing: dropped only when the fastest repeat is beyond (1 + slack) × the k-th best upper bound', () => {
  const round = [
    { lower: 1, upper: 1.1 }, // the best
    { lower: 1.6, upper: 1.7 }, // within 1.5 × 1.1 = 1.65: survives
    { lower: 1.7, upper: 1.8 }, // beyond: dropped
    { lower: 9, upper: 9 }, // far beyond: dropped
  ];
  assert.deepEqual(raceVerdicts(round, [], rule), [true, true, false, false]);
  // A complete record already held sets a tighter reference: the second one is dropped too.
  assert.deepEqual(raceVerdicts(round, [{ lower: 0.9, upper: 1 }], rule), [true, false, false, false]);
  // k = 2: the reference is the second-best upper bound (1.7 → 2.55), so the third survives.
  assert.deepEqual(raceVerdicts(round, [], { slack: 0.5, k: 2 }), [true, true, true, false]);
  // fewer contenders than k: no reference, every one survives
  assert.equal(raceReference([{ lower: 1, upper: 2 }], 2), undefined);
  assert.equal(survives({ lower: 100, upper: 100 }, undefined, rule), true);
  // slack ∞ (noisyScreen Infinity): nothing is ever dropped
  assert.deepEqual(raceVerdicts(round, [], { slack: Infinity, k: 1 }), [true, true, true, true]);
  assert.throws(() => raceVerdicts(round, [], { slack: -1, k: 1 }), RangeError);
  assert.throws(() => raceVerdicts(round, [], { slack: 0.5, k: 0 }), RangeError);
});

test('racing: each of the k best always survives, whatever the slack', () => {
  const rng = seededRng(11);
  for (let trial = 0; trial < 200; trial++) {
    const round = Array.from({ length: 2 + Math.floor(rng.next() * 10) }, () => {
      const lower = 0.1 + rng.next() * 10;
      return { lower, upper: lower * (1 + rng.next()) };
    });
    const k = 1 + Math.floor(rng.next() * 3);
    const verdicts = raceVerdicts(round, [], { slack: 0, k });
    const topK = [...round].sort((a, b) => a.upper - b.upper).slice(0, k);
    for (const c of topK) assert.equal(verdicts[round.indexOf(c)], true);
  }
});

/** A deterministic candidate: the same latency every repeat, noisy levels a factor in [1, 1.45) above quiet. */
function fixtureCandidates(seed: number): { id: string; latencyMs: Record<string, number> }[] {
  const rng = seededRng(seed);
  return Array.from({ length: 4 + Math.floor(rng.next() * 12) }, (_, i) => {
    const quiet = 1 + rng.next() * rng.next() * 4;
    return {
      id: `c${String(i).padStart(2, '0')}`,
      latencyMs: { 0: quiet, 1: quiet * (1 + rng.next() * 0.45), 2: quiet * (1 + rng.next() * 0.45), 3: quiet * (1 + rng.next() * 0.45) },
    };
  });
}

const features = scheduleFeatures(
  DENSE,
  makeSchedule({
    vec: 16,
    regOc: 2,
    regCols: 4,
    tileIc: 4,
    tileOc: 1,
    tileRows: 1,
    tileCols: 2,
    loopOrder: 'oc_outer',
    parallelAxis: 'oc',
    unroll: 4,
    threads: 1,
  }),
);
const asFamily = (c: { id: string; latencyMs: Record<string, number> }): FamilyCandidate => ({
  id: c.id,
  schedule: {} as Schedule,
  features: { ...features, footprintBytes: { ...features.footprintBytes, l2: Number(c.id.slice(1)) } },
  symbol: c.id,
  latencyMs: c.latencyMs,
});

test('racing keeps the frontier: on deterministic fixtures the family equals the exhaustive search’s', () => {
  let dropped = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const cands = fixtureCandidates(seed);
    const full = selectFamily(cands.map(asFamily), { maxVersions: 5, tolerance: 0.03 });
    const verdicts = raceVerdicts(
      cands.map((c) => quietBounds([c.latencyMs[0]!, c.latencyMs[0]!, c.latencyMs[0]!])!),
      [],
      rule,
    );
    // survivors measured at every level; the dropped ones hold their level-0 round only
    const raced = cands.map((c, i) => (verdicts[i] ? c : { id: c.id, latencyMs: { 0: c.latencyMs[0]! } }));
    dropped += verdicts.filter((v) => !v).length;
    const race = selectFamily(raced.map(asFamily), { maxVersions: 5, tolerance: 0.03 });
    assert.deepEqual(
      race.versions.map((v) => v.id),
      full.versions.map((v) => v.id),
      `fixture ${seed}`,
    );
    assert.deepEqual(race.regretPercent, full.regretPercent, `fixture ${seed}`);
  }
  assert.ok(dropped > 100, `the fixtures exercise the rule (${dropped} dropped)`);
});

function racedRecord(i: number): TuningRecord {
  const r = sampleRecord(i, { levelMs: { 0: 9 } });
  return makeRecord({
    workload: r.workloadSpec,
    target: TARGET_A,
    schedule: r.schedule,
    features: r.features,
    latencies: { 0: [9, 9.1, 9.2] },
    status: 'ok',
    stage: 'race',
  });
}

test('a raced record: valid, never complete, never a version, a best or a seed; a full measurement supersedes it', async () => {
  const raced = racedRecord(3);
  assert.doesNotThrow(() => recordLine(raced));
  assert.equal(isComplete(raced), false);
  assert.equal(isComplete(sampleRecord(3)), true);
  const full = sampleRecord(3, { repeats: 1 });
  assert.equal(recordId(full), recordId(raced));
  assert.equal(preferRecord(raced, full), full, 'complete beats raced even with fewer repeats');
  assert.equal(preferRecord(full, raced), full);
  const bad = JSON.parse(recordLine(raced)) as Record<string, unknown>;
  assert.throws(() => recordLine({ ...bad, stage: 'half' } as unknown as TuningRecord), /schema/);

  const kept = compactRecords([sampleRecord(1), sampleRecord(2), racedRecord(4)]);
  assert.ok(kept.every(isComplete), 'compaction keeps no raced record');

  const dir = mkdtempSync(join(tmpdir(), 'veltair-race-db-'));
  try {
    await appendRecords(dir, [
      sampleRecord(1),
      racedRecord(4),
      sampleRecord(6, { target: TARGET_B }),
      { ...racedRecord(8), target: sampleRecord(8, { target: TARGET_B }).target, targetSpec: TARGET_B },
    ]);
    const db = await openDatabase(dir, { target: TARGET_A, shipped: false });
    const id = recordId(racedRecord(4));
    assert.equal(db.has(id), true, 'a rerun does not race it again');
    assert.ok(
      db.records(sampleRecord(1).workload).some((r) => recordId(r) === id),
      'records() lists it (trials spent)',
    );
    assert.ok(!db.lookup(sampleRecord(1).workload).some((r) => recordId(r) === id), 'lookup() (what families read) does not');
    assert.ok(db.corpus().every(isComplete), 'the ranking corpus holds complete records only');
    assert.ok(db.foreign(sampleRecord(1).workload).every(isComplete), 'nor is one a seed for another target');
    assert.equal(db.corpus().length, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the switch: race by default, exhaustive on request, anything else a typed error', () => {
  assert.equal(resolveCompileOptions({ output: 'b' }).search, 'race');
  assert.equal(resolveCompileOptions({ output: 'b', search: 'exhaustive' }).search, 'exhaustive');
  assert.throws(
    () => resolveCompileOptions({ output: 'b', search: 'greedy' as 'race' }),
    (e: unknown) => e instanceof VeltairError && e.code === 'BAD_ARGUMENT' && /--search/.test(e.message),
  );
});

test('kendall τ-b and one run’s scores', () => {
  assert.equal(kendallTau([1, 2, 3, 4], [10, 20, 30, 40]), 1);
  assert.equal(kendallTau([1, 2, 3, 4], [40, 30, 20, 10]), -1);
  assert.equal(kendallTau([1, 1, 1], [1, 2, 3]), 0);
  const s = runScores([0.1, 0.2, 0.3, 0.4], [Math.log(1), Math.log(2), Math.log(3), Math.log(4)], 2);
  assert.equal(s.kendallTau, 1);
  assert.equal(s.top1, 1);
  assert.equal(s.topKRecall, 1);
  assert.equal(s.meanRegretPercent, 0);
  assert.equal(s.random.topKRecall, 0.5);
  const wrong = runScores([0.4, 0.3, 0.2, 0.1], [Math.log(1), Math.log(2), Math.log(3), Math.log(4)], 1);
  assert.equal(wrong.top1, 0);
  assert.ok(Math.abs(wrong.meanRegretPercent - 300) < 1e-9, 'the predicted best is 4× the best');
});

/**
 * Fixture records whose latency follows a known rule of the schedule: each L2 tile over the cache
 * doubles the time per unit of overshoot, the rest is a small deterministic wobble. Made-up data,
 * never measurements.
 */
function ruledRecords(workload: typeof CONV, target = TARGET_A): TuningRecord[] {
  const rng = seededRng(workload === CONV ? 5 : 7);
  const out: TuningRecord[] = [];
  for (let i = 0; i < 24; i++) {
    const schedule = makeSchedule({
      vec: 16,
      regOc: 1 + (i % 4),
      regCols: 2 + (i % 3),
      tileIc: 1 + (i % 5),
      tileOc: 1 + (i % 6),
      tileRows: 1 + ((i * 7) % 8),
      tileCols: 1 + ((i * 5) % 4),
      loopOrder: i % 2 ? 'oc_outer' : 'spatial_outer',
      parallelAxis: 'oc',
      unroll: 4,
      threads: 1,
    });
    const f = scheduleFeatures(workload, schedule);
    const over = Math.max(0, Math.log2(f.footprintBytes.l2 / target.caches.l2));
    const ms = 2 * 2 ** over * (1 + rng.next() * 0.02);
    out.push(makeRecord({ workload, target, schedule, features: f, latencies: { 0: [ms, ms, ms] }, status: 'ok' }));
  }
  return out;
}

test('the ranking model: fitted on other workloads, it orders a new one by the rule the records follow', () => {
  const small = { ...TARGET_A, caches: { l1d: 32 * 1024, l2: 64 * 1024, l3: 1 << 20 } };
  const train = [...ruledRecords(CONV, small), ...ruledRecords(DENSE, small)];
  const model = fitRankModel(rankingRecords(train.filter((r) => r.workload !== train[0]!.workload)));
  assert.ok(model, 'enough records to fit');
  const held = rankingRecords(train.filter((r) => r.workload === train[0]!.workload));
  const tau = kendallTau(
    held.map((r) => model.scoreRow(r.row)),
    held.map((r) => r.logMs),
  );
  assert.ok(tau > 0.5, `held-out τ ${tau}`);
  assert.equal(fitRankModel(rankingRecords(train.slice(0, MIN_RANK_RECORDS - 1))), undefined, 'too few records: no model');
  assert.equal(rankingRecords([train[0]!]).length, 0, 'a run of one ranks nothing');
  assert.equal(rankingRecords([...train.slice(0, 3), racedRecord(2)]).length, 3, 'raced records teach nothing');
});

test('veltair db rank-eval: the leave-one-workload-out figures, as JSON and as a table', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-rank-eval-'));
  try {
    const small = { ...TARGET_A, caches: { l1d: 32 * 1024, l2: 64 * 1024, l3: 1 << 20 } };
    const records = [...ruledRecords(CONV, small), ...ruledRecords(DENSE, small)];
    await appendRecords(dir, records);
    const json = JSON.parse(execFileSync('node', [BIN, 'db', 'rank-eval', '--db', dir, '--json'], { encoding: 'utf8' })) as Record<
      string,
      unknown
    >;
    for (const key of ['db', 'features', 'records', 'targets', 'heldOutWorkloads', 'runs', 'meanRunSize', 'k', 'model', 'random'])
      assert.ok(key in json, key);
    assert.equal(json['records'], 48);
    assert.equal(json['heldOutWorkloads'], 2);
    const model = json['model'] as Record<string, number>;
    for (const key of ['kendallTau', 'top1', 'topKRecall', 'meanRegretPercent']) assert.equal(typeof model[key], 'number', key);
    const { db: _db, features: _f, ...figures } = json;
    assert.deepEqual(
      figures,
      JSON.parse(JSON.stringify(evaluateRanking(records))),
      'the command prints the evaluation of the records it read',
    );
    const text = execFileSync('node', [BIN, 'db', 'rank-eval', '--db', dir, '--k', '2'], { encoding: 'utf8' });
    assert.match(text, /leave one workload out/);
    assert.match(text, /Kendall τ +top-1 +top-2 recall/);
    assert.match(text, /^model /m);
    assert.match(text, /^random /m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with a ranking model the random seeds are the best-ranked of a larger draw, and the first mutations follow it', () => {
  const w = withKey(CONV as Conv2dWorkload);
  const base = { levels: [0], threads: [1], levelsFor: () => [0], seed: 4 };
  // any deterministic score will do: here, prefer small cache tiles
  const rank = (s: Schedule) => scheduleFeatures(w, s).footprintBytes.l2;
  // the three presets, and the Winograd default where the conv may take that form, then 4 random seeds
  const presets = 3 + (winogradDefault(w, TARGET_A, 1) ? 1 : 0);
  const plain = createTaskSearch(w, TARGET_A, base).propose(presets + 4);
  const ranked = createTaskSearch(w, TARGET_A, { ...base, rank }).propose(presets + 4);
  assert.deepEqual(ranked.slice(0, presets), plain.slice(0, presets), 'the presets come first either way');
  const randomOf = (xs: Schedule[]) => xs.slice(presets).map(rank);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  assert.ok(mean(randomOf(ranked)) < mean(randomOf(plain)), 'the ranked seeds are better ranked');
  const scores = randomOf(ranked);
  assert.deepEqual(
    scores,
    [...scores].sort((a, b) => a - b),
    'best-ranked first',
  );
});

test('race-slack: candidates beyond each factor of their run’s best, and the family members among them', () => {
  // one run: quiet 1, 1.25, 2, 4 ms (made-up); the 2 ms one wins level 2, so the family keeps it
  const recs = [
    sampleRecord(0, { levelMs: { 0: 1, 2: 3 } }),
    sampleRecord(2, { levelMs: { 0: 1.25, 2: 3.5 } }),
    sampleRecord(4, { levelMs: { 0: 2, 2: 2 } }),
    sampleRecord(6, { levelMs: { 0: 4, 2: 8 } }),
    racedRecord(8),
  ];
  const r = slackExposure(recs, [1.5, 1.1]);
  assert.equal(r.runs, 1);
  assert.equal(r.records, 4, 'the raced record is not a candidate of the run');
  assert.deepEqual(r.exposures, [
    { factor: 1.5, beyond: 2, familyBeyond: 1 },
    { factor: 1.1, beyond: 3, familyBeyond: 1 },
  ]);
});
