/**
 * Tuning transfer across targets: how near another target is (ISA first, then caches, cores),
 * which of its records seed a workload (the frontier of the nearest target, never this target's
 * own, at most the cap), and end to end: a target with no record of its own measures the nearest
 * target's kept candidates first, spends at most the transfer budget per workload (on a rerun too),
 * never uses a foreign record as a measurement, and reports how its workloads started.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { medianMs, type TuningRecord } from '../src/db/record.js';
import { openDatabase, type TuningDatabase } from '../src/db/store.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { targetDistance, transferSeeds } from '../src/db/transfer.js';
import { withKey, type Conv2dWorkload } from '../src/ir/workload.js';
import { scheduleKey } from '../src/tune/search.js';
import { tuneWorkloads, type TuneOptions } from '../src/tune/tune-model.js';
import { detectTarget, type Target } from '../src/toolchain/target.js';
import { repair } from '../src/space/knobs.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-transfer-'));
after(() => rmSync(root, { recursive: true, force: true }));

const base: Target = {
  cpuModel: 'AMD EPYC',
  isa: { avx512f: true, avx2: true, fma: true },
  cores: 2,
  caches: { l1d: 48 * 1024, l2: 1024 * 1024, l3: 32 * 1024 * 1024 },
  cc: 'cc (Debian 12.2.0-14) 12.2.0',
  cflags: ['-O3', '-march=native'],
};

test('nearness: the same type is 0, another ISA level is far, nearer caches and cores are nearer', () => {
  assert.equal(targetDistance(base, base), 0);
  const smallerL1 = { ...base, caches: { ...base.caches, l1d: 32 * 1024 } };
  const avx2 = { ...base, isa: { avx512f: false, avx2: true, fma: true } };
  const moreCores = { ...base, cores: 64 };
  assert.ok(targetDistance(base, smallerL1) > 0);
  assert.ok(targetDistance(base, smallerL1) < targetDistance(base, moreCores));
  assert.ok(targetDistance(base, moreCores) < targetDistance(base, avx2), 'ISA level weighs most');
  assert.ok(Math.abs(targetDistance(base, smallerL1) - targetDistance(smallerL1, base)) < 1e-12, 'symmetric');
});

const convShape: Conv2dWorkload = {
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
const conv = withKey(convShape);

/** One tuning pass over the conv at one thread count and level 0, as every pass of the end-to-end test runs it. */
const tuneConv = (db: TuningDatabase, target: Target, extra: Partial<TuneOptions> = {}) =>
  tuneWorkloads([{ workload: conv, count: 1 }], { trials: 6, levels: [0], threads: [1], seed: 5, db, minTimeMs: 10, target, ...extra });

test(
  "end to end: no record of its own → the nearest target's kept candidates are measured first, within the transfer budget",
  { timeout: 300_000 },
  async () => {
    const here = await detectTarget();
    const source = await openDatabase(join(root, 'db'), { target: here, shipped: false });
    // Exhaustive, so all six candidates are complete records: a race would drop some on this host's timing.
    const tuned = await tuneWorkloads([{ workload: conv, count: 1 }], {
      trials: 6,
      levels: [0],
      threads: [1],
      seed: 5,
      search: 'exhaustive',
      db: source,
      minTimeMs: 10,
      target: here,
    });
    assert.equal(tuned.transfer.freshWorkloads, 1);
    // A machine of another type (another L1d): same database directory, no record for it.
    const other: Target = { ...here, cpuModel: `${here.cpuModel} (other stepping)`, caches: { ...here.caches, l1d: here.caches.l1d * 2 } };
    const db = await openDatabase(join(root, 'db'), { target: other, shipped: false });
    assert.equal(db.lookup(conv.key).length, 0, 'the other target has no record of its own');
    const foreign = db.foreign(conv.key);
    assert.ok(foreign.length >= 3);
    const seeds = transferSeeds(foreign, other, targetFingerprint(other), 2);
    assert.equal(seeds.length, 2);
    assert.ok(seeds.every((s) => s.record.target === targetFingerprint(here)));
    const quiet = (r: TuningRecord) => medianMs(r, 0)!;
    assert.equal(quiet(seeds[0]!.record), Math.min(...foreign.map(quiet)), "the source's best candidate comes first");
    const r = await tuneConv(db, other);
    assert.deepEqual(r.transfer, {
      exactWorkloads: 0,
      transferredWorkloads: 1,
      transferredSeeds: 2,
      freshWorkloads: 0,
      medianDistance: r.transfer.medianDistance,
    });
    assert.ok(r.transfer.medianDistance! > 0);
    assert.equal(r.dbHits, 0, 'a foreign record is never a measurement here');
    assert.equal(r.measured, 2, 'max(2, ⌈6 / 3⌉) trials: confirm and refine');
    const mine = db.records(conv.key);
    assert.ok(mine.every((x) => x.target === targetFingerprint(other)));
    const measuredKeys = new Set(mine.map((x) => scheduleKey(x.schedule)));
    for (const s of seeds) assert.ok(measuredKeys.has(scheduleKey(repair(s.record.schedule, conv, other))), 'each seed was measured here');
    // Exact records win: a rerun for the other target measures nothing and transfers nothing.
    const again = await tuneConv(db, other);
    assert.equal(again.transfer.exactWorkloads, 1);
    assert.equal(again.transfer.transferredWorkloads, 0);
    assert.equal(again.measured, 0, 'the transfer cap holds on the rerun: nothing is topped up');
    assert.equal(again.dbHits, 2);
    // transferTrials 0 on the same target: the full budget, topping up what the transfer pass left.
    const topped = await tuneConv(db, other, { transferTrials: 0 });
    assert.equal(topped.dbHits, 2, "the transfer pass's two trials count toward the budget");
    assert.ok(topped.measured >= 1 && topped.measured <= 4, `measured ${topped.measured}: the rest of the six`);
    // transferTrials 0 (compile --transfer-trials 0): a third target searches from scratch at the full budget.
    const third: Target = { ...other, caches: { ...other.caches, l2: other.caches.l2 * 2 } };
    const off = await tuneConv(await openDatabase(join(root, 'db'), { target: third, shipped: false }), third, {
      trials: 3,
      transferTrials: 0,
    });
    assert.deepEqual([off.transfer.transferredWorkloads, off.transfer.freshWorkloads, off.measured], [0, 1, 3]);
    // A transfer cut short (here: a cap of 1) resumes where it would have gone: the next foreign seed, not a preset.
    const fourth: Target = { ...other, caches: { ...other.caches, l3: other.caches.l3 * 2 } };
    const fourthDb = await openDatabase(join(root, 'db'), { target: fourth, shipped: false });
    const pass = (transferTrials: number) => tuneConv(fourthDb, fourth, { transferTrials });
    assert.equal((await pass(1)).measured, 1);
    const resumed = await pass(2);
    assert.deepEqual([resumed.dbHits, resumed.measured], [1, 1]);
    const planned = transferSeeds(fourthDb.foreign(conv.key), fourth, targetFingerprint(fourth), 2);
    assert.deepEqual(
      new Set(fourthDb.records(conv.key).map((x) => scheduleKey(x.schedule))),
      new Set(planned.map((p) => scheduleKey(repair(p.record.schedule, conv, fourth)))),
      'the two passes measured the two seeds a pass capped at 2 would have',
    );
  },
);
