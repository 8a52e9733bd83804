/** The database on disk: reading past corrupt lines, dedup, target filtering, the shipped layer (plain and compacted), torn lines. */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CODEGEN_VERSION } from '../src/codegen/kernel.js';
import { recordId, recordIdOf, recordLine } from '../src/db/record.js';
import { defaultTableRefresh } from '../src/space/presets.js';
import { createTaskSearch } from '../src/tune/search.js';
import { compactDatabase } from '../src/db/compact-database.js';
import { scanDatabase } from '../src/db/scan.js';
import { appendRecords, defaultDatabaseDir, openDatabase, shardFileName, shippedDatabaseDir } from '../src/db/store.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { CONV, TARGET_A, TARGET_B, sampleRecord } from './db-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-db-store-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => join(root, `db${n++}`);
const CONV_WORKLOAD = CONV;
const CONV_SEED = { ...defaultTableRefresh(CONV, TARGET_A, 1), tileRows: 2 };

test('corrupt lines are skipped and counted, every good line is kept, and the warning comes once', async () => {
  const dir = freshDir();
  mkdirSync(dir);
  const good = [0, 1, 2, 3].map((i) => sampleRecord(i));
  const badSchema = JSON.stringify({ ...sampleRecord(9), status: 'great' });
  writeFileSync(
    join(dir, 'records.jsonl'),
    [recordLine(good[0]!), 'this is not json\n', recordLine(good[1]!), '\n', badSchema + '\n', recordLine(good[2]!)].join(''),
  );
  writeFileSync(join(dir, 'shard-1-of-2.jsonl'), recordLine(good[3]!) + '{"v":1,"workl'); // torn last line
  writeFileSync(join(dir, 'notes.txt'), 'not a records file\n');
  const warnings: string[] = [];
  const scan = await scanDatabase(dir, { onWarning: (m) => warnings.push(m) });
  assert.equal(scan.records.size, 4);
  assert.deepEqual(new Set(scan.records.keys()), new Set(good.map(recordId)));
  assert.equal(scan.corrupt, 3);
  assert.equal(scan.files.length, 2, 'only *.jsonl files are read');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /skipped 3 corrupt lines/);
  assert.match(warnings[0]!, /records\.jsonl:2 not JSON/);
  assert.deepEqual(
    scan.corruptExamples.map((c) => c.line),
    [2, 5, 2],
  );
});

test('appending after a torn line starts a fresh line, so the new record is intact', async () => {
  const dir = freshDir();
  await appendRecords(dir, [sampleRecord(0)]);
  appendFileSync(join(dir, 'records.jsonl'), recordLine(sampleRecord(1)).slice(0, 120)); // what kill -9 mid-write leaves
  await appendRecords(dir, [sampleRecord(2), sampleRecord(3)]);
  const text = readFileSync(join(dir, 'records.jsonl'), 'utf8');
  assert.ok(text.endsWith('\n'));
  assert.equal(text.split('\n').length - 1, 4);
  const scan = await scanDatabase(dir);
  assert.equal(scan.corrupt, 1);
  assert.deepEqual(new Set(scan.records.keys()), new Set([0, 2, 3].map((i) => recordId(sampleRecord(i)))));
});

test('duplicates collapse to one record, the one with more repeats, in either file order', async () => {
  for (const order of [
    [3, 8],
    [8, 3],
  ]) {
    const dir = freshDir();
    for (const repeats of order) await appendRecords(dir, [sampleRecord(7, { repeats })]);
    const scan = await scanDatabase(dir);
    assert.equal(scan.records.size, 1);
    assert.equal(scan.duplicates, 1);
    assert.equal(scan.records.get(recordId(sampleRecord(7)))!.latencies['0']!.length, 8);
  }
});

test('lookup returns only ok records of the database target; other targets are never applied', async () => {
  const dir = freshDir();
  await appendRecords(dir, [
    sampleRecord(0),
    sampleRecord(1),
    sampleRecord(2, { status: 'crash' }),
    sampleRecord(3, { workload: CONV }),
    sampleRecord(0, { target: TARGET_B }),
    sampleRecord(4, { target: TARGET_B }),
  ]);
  const db = await openDatabase(dir, { target: TARGET_A, shipped: false });
  const dense = sampleRecord(0).workload;
  assert.deepEqual(db.lookup(dense).map(recordId).sort(), [sampleRecord(0), sampleRecord(1)].map(recordId).sort());
  assert.equal(db.records(dense).length, 3, 'failures are remembered');
  assert.ok(db.has(recordId(sampleRecord(2, { status: 'crash' }))), 'a crashed candidate counts as measured');
  assert.ok(!db.has(recordId(sampleRecord(4, { target: TARGET_B }))));
  assert.equal(db.lookup(sampleRecord(3, { workload: CONV }).workload).length, 1);
  assert.deepEqual(db.stats(), {
    records: 4,
    ok: 3,
    workloads: 2,
    shipped: 0,
    otherCodegen: 0,
    otherTargets: 2,
    corrupt: 0,
    duplicates: 0,
  });

  const other = await openDatabase(dir, { target: targetFingerprint(TARGET_B), shipped: false });
  assert.deepEqual(
    other.lookup(dense).map((r) => r.target),
    [targetFingerprint(TARGET_B), targetFingerprint(TARGET_B)],
  );
  await assert.rejects(db.append([sampleRecord(9, { target: TARGET_B })]), /appended to a database opened for/);
});

test('records of another codegen version are never returned as measurements, only as search seeds', async () => {
  const dir = freshDir();
  const old = (i: number, ms: number) => ({
    ...sampleRecord(i, { levelMs: { 0: ms } }),
    tool: { veltair: '0.0.1', codegen: CODEGEN_VERSION - 1 },
  });
  const stale = [old(5, 3), old(6, 2), { ...old(7, 1), status: 'crash' as const, latencies: {}, error: 'crash in test' }];
  await appendRecords(dir, [sampleRecord(0), ...stale]);
  const db = await openDatabase(dir, { target: TARGET_A, shipped: false });
  const dense = sampleRecord(0).workload;
  assert.deepEqual(db.lookup(dense).map(recordId), [recordId(sampleRecord(0))], 'lookup: this codegen version only');
  assert.deepEqual(db.records(dense).map(recordId), [recordId(sampleRecord(0))], 'records: this codegen version only');
  assert.deepEqual(db.seeds(dense).map(recordId), [recordId(stale[1]!), recordId(stale[0]!)], 'seeds: old ok records, fastest first');
  assert.ok(
    !db.has(recordIdOf(dense, db.target, stale[0]!.schedule, stale[0]!.threads)),
    'the same schedule under this codegen is unmeasured',
  );
  assert.equal(db.stats().otherCodegen, 3);
  const search = createTaskSearch({ ...CONV_WORKLOAD, key: 'conv2d-0000000000000001' }, TARGET_A, {
    levels: [0],
    threads: [1],
    levelsFor: () => [0],
    seed: 1,
    seedSchedules: [CONV_SEED],
  });
  assert.deepEqual(search.propose(1), [CONV_SEED], 'a search starts from the carried-over schedules');
});

test('the shipped layer is merged in read-only; appends go to the user directory only', async () => {
  const shipped = freshDir();
  const user = freshDir();
  await appendRecords(shipped, [sampleRecord(0), sampleRecord(1), sampleRecord(2, { target: TARGET_B })]);
  const shippedText = readFileSync(join(shipped, 'records.jsonl'), 'utf8');
  const db = await openDatabase(user, { target: TARGET_A, shipped });
  assert.equal(db.lookup(sampleRecord(0).workload).length, 2);
  assert.equal(db.stats().shipped, 2);
  await db.append([sampleRecord(5)], { file: shardFileName(0, 2) });
  assert.ok(db.has(recordId(sampleRecord(5))));
  assert.equal(readFileSync(join(shipped, 'records.jsonl'), 'utf8'), shippedText);
  const userScan = await scanDatabase(user);
  assert.deepEqual([...userScan.records.keys()], [recordId(sampleRecord(5))]);
  assert.deepEqual(
    userScan.files.map((f) => f.split('/').pop()),
    ['shard-0-of-2.jsonl'],
  );
  const reopened = await openDatabase(user, { target: TARGET_A, shipped });
  assert.equal(reopened.lookup(sampleRecord(0).workload).length, 3);
});

test('a shipped layer of compacted files reads beside plain ones, and remembers the trials compaction dropped', async () => {
  const source = freshDir();
  const shipped = freshDir();
  const records = Array.from({ length: 12 }, (_, i) =>
    sampleRecord(i, { levelMs: { 0: 1 + ((i * 7) % 11) / 10, 2: 1 + ((i * 5) % 13) / 10 } }),
  );
  await appendRecords(source, records);
  await compactDatabase({ sources: [source], outDir: shipped });
  await appendRecords(shipped, [sampleRecord(20, { workload: CONV_WORKLOAD })]); // a plain .jsonl beside them
  const db = await openDatabase(freshDir(), { target: TARGET_A, shipped });
  const dense = records[0]!.workload;
  assert.ok(db.lookup(dense).length > 0 && db.lookup(dense).length < 12, 'the compacted records, not every candidate');
  assert.equal(db.lookup(sampleRecord(20, { workload: CONV_WORKLOAD }).workload).length, 1);
  assert.deepEqual([db.trialsSpent(dense, 1), db.trialsSpent(dense, 2)], [6, 6], 'each thread count ran 6 trials');
  const other = await openDatabase(freshDir(), { target: TARGET_B, shipped });
  assert.equal(other.trialsSpent(dense, 1), 0, "another target's trials are not this one's");
});

test('locations: a missing user database opens empty, a named one must exist, defaults follow XDG', async () => {
  const missing = join(root, 'does-not-exist');
  const db = await openDatabase(missing, { target: TARGET_A, shipped: false });
  assert.equal(db.stats().records, 0);
  await assert.rejects(scanDatabase(missing), (e: Error & { code?: string }) => e.code === 'FILE_NOT_FOUND');
  assert.equal(defaultDatabaseDir({ XDG_CACHE_HOME: '/x/cache' }), '/x/cache/veltair/tuning-db');
  assert.match(defaultDatabaseDir({ HOME: '/home/u' }), /\.cache\/veltair\/tuning-db$/);
  assert.ok(shippedDatabaseDir().endsWith('/tuning-db'));
  assert.ok(!shippedDatabaseDir().includes('/dist/'), 'resolved from the package root, not the build folder');
});
