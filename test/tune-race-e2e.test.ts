/**
 * A racing pass with real kernels, made deterministic on any host by a fixture record: a complete
 * record (made-up, far faster than any real kernel) held in the database for the workload, so every
 * candidate of the pass is beyond the race's reference and dropped after round 1.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/db/store.js';
import { isComplete, levelsOf, makeRecord, medianMs, recordId } from '../src/db/record.js';
import { makeCandidate } from '../src/space/candidate.js';
import { localityGreedy } from '../src/space/presets.js';
import { withKey, type Conv2dWorkload } from '../src/ir/workload.js';
import { detectTarget } from '../src/toolchain/target.js';
import { tuneWorkloads } from '../src/tune/tune-model.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-race-e2e-'));
process.env['VELTAIR_CACHE_DIR'] = join(root, 'cache');
after(() => rmSync(root, { recursive: true, force: true }));

const conv = withKey({
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 16,
  h: 8,
  w: 8,
  cout: 16,
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
  epilogue: ['bias'],
} satisfies Conv2dWorkload);

test('racing drops what cannot reach the family, marks it, and an exhaustive pass measures it in full', { timeout: 600_000 }, async () => {
  const target = await detectTarget();
  const dir = join(root, 'db');
  const db = await openDatabase(dir, { target, shipped: false });
  const held = makeCandidate(conv, localityGreedy(conv, target, 1), target);
  await db.append([
    makeRecord({
      workload: conv,
      target,
      schedule: held.schedule,
      features: held.features,
      latencies: { 0: [1e-6], 1: [1e-6] },
      status: 'ok',
    }),
  ]);
  const options = { trials: 5, levels: [0, 1], threads: [1], seed: 2, minTimeMs: 10, target, noisyScreen: Infinity } as const;

  // slack ∞ would keep every one: the screen 1.5 (slack 0.5) against a 1 ns reference drops every ok candidate
  const race = await tuneWorkloads([{ workload: conv, count: 1 }], { ...options, db, noisyScreen: 1.5, search: 'race' });
  const records = db.records(conv.key).filter((r) => r.threads === 1);
  const raced = records.filter((r) => !isComplete(r));
  assert.equal(race.measured, 4, 'the budget less the held record');
  assert.equal(race.raced, raced.length);
  assert.ok(raced.length >= 1, 'some candidate passed its check and was raced');
  for (const r of raced) {
    assert.equal(r.status, 'ok');
    assert.deepEqual(levelsOf(r), [0], 'a raced record holds its level-0 round only');
  }
  const heldId = recordId(db.lookup(conv.key).find((r) => medianMs(r, 0) === 1e-6)!);
  for (const r of records.filter(isComplete)) if (recordId(r) !== heldId) assert.notEqual(r.status, 'ok', 'only failures are complete');
  const ids = new Set(raced.map(recordId));
  assert.ok(
    race.families.get(conv.key)!.versions.every((v) => !ids.has(v.id)),
    'no raced candidate is a version',
  );
  assert.ok(race.phases.searchRace > 0, 'round 1 is a phase of its own');

  const rerun = await tuneWorkloads([{ workload: conv, count: 1 }], {
    ...options,
    db: await openDatabase(dir, { target, shipped: false }),
    noisyScreen: 1.5,
  });
  assert.equal(rerun.measured, 0, 'a racing rerun takes the verdicts from the database');

  const again = await openDatabase(dir, { target, shipped: false });
  const full = await tuneWorkloads([{ workload: conv, count: 1 }], { ...options, db: again, search: 'exhaustive' });
  assert.equal(full.measured, raced.length, 'exhaustive: the raced candidates are measured again, in full');
  assert.equal(full.raced, 0);
  for (const id of ids) {
    const r = again.records(conv.key).find((x) => recordId(x) === id)!;
    assert.ok(isComplete(r), 'the full record supersedes the verdict');
    assert.deepEqual(levelsOf(r), [0, 1]);
  }
});
