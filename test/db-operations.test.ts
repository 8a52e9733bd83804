/** Merge (concatenate + dedup, order-independent, atomic), prune (best N per workload and level), export, stats. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { exportRecords } from '../src/db/export.js';
import { databaseStats, mergeDatabases, pruneDatabase } from '../src/db/operations.js';
import { recordId, recordLine } from '../src/db/record.js';
import { scanDatabase } from '../src/db/scan.js';
import { appendRecords, shardFileName } from '../src/db/store.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { CONV, TARGET_A, TARGET_B, sampleRecord } from './db-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-db-ops-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => join(root, `db${n++}`);

test('merge concatenates shards, drops duplicates, gives the same file in any source order, and is idempotent', async () => {
  const shards = freshDir();
  await appendRecords(
    shards,
    [0, 1, 2, 3].map((i) => sampleRecord(i)),
    { file: shardFileName(0, 2) },
  );
  await appendRecords(
    shards,
    [2, 3, 4].map((i) => sampleRecord(i, { repeats: 9 })),
    { file: shardFileName(1, 2) },
  );
  const other = join(root, 'single.jsonl');
  writeFileSync(other, recordLine(sampleRecord(5, { target: TARGET_B })) + 'garbage\n');
  const a = freshDir(),
    b = freshDir();
  const warnings: string[] = [];
  const ra = await mergeDatabases([shards, other], a, { onWarning: (m) => warnings.push(m) });
  await mergeDatabases([other, join(shards, shardFileName(1, 2)), join(shards, shardFileName(0, 2))], b);
  assert.deepEqual(
    { records: ra.records, duplicates: ra.duplicates, corrupt: ra.corrupt, filesRead: ra.filesRead },
    { records: 6, duplicates: 2, corrupt: 1, filesRead: 3 },
  );
  assert.equal(warnings.length, 1);
  const merged = readFileSync(join(a, 'records.jsonl'), 'utf8');
  assert.equal(readFileSync(join(b, 'records.jsonl'), 'utf8'), merged, 'order of sources does not matter');
  const scan = await scanDatabase(a);
  assert.equal(scan.records.get(recordId(sampleRecord(2)))!.latencies['0']!.length, 9, 'the duplicate with more repeats is kept');
  assert.equal(
    scan.records.get(recordId(sampleRecord(5, { target: TARGET_B })))!.target,
    targetFingerprint(TARGET_B),
    'merge keeps every target',
  );
  await mergeDatabases([shards], a);
  assert.equal(readFileSync(join(a, 'records.jsonl'), 'utf8'), merged, 'merging the same records again changes nothing');
  assert.deepEqual(readdirSync(a), ['records.jsonl'], 'no temp or lock files left');
});

test('merging shards into their own directory folds them into records.jsonl', async () => {
  const dir = freshDir();
  await appendRecords(dir, [sampleRecord(0)], { file: shardFileName(0, 2) });
  await appendRecords(dir, [sampleRecord(1)], { file: shardFileName(1, 2) });
  await mergeDatabases([join(dir, shardFileName(0, 2)), join(dir, shardFileName(1, 2))], dir);
  assert.deepEqual(readdirSync(dir), ['records.jsonl']);
  assert.equal((await scanDatabase(dir)).records.size, 2);
  await assert.rejects(mergeDatabases([join(root, 'nope')], freshDir()), (e: Error & { code?: string }) => e.code === 'FILE_NOT_FOUND');
});

test('prune keeps the best N per workload and thread count at every level, keeps failures unless asked, and rewrites atomically', async () => {
  const dir = freshDir();
  // level 0 favours low i, level 3 favours high i; even i run at 1 thread, odd at 2 (db-fixture), each count its own family:
  // keep 2 keeps {0, 2} ∪ {6, 8} at 1 thread and {1, 3} ∪ {7, 9} at 2; the 3 conv records are at most 2 per count
  const dense = Array.from({ length: 10 }, (_, i) => sampleRecord(i, { levelMs: { 0: 1 + i, 3: 20 - i } }));
  const conv = Array.from({ length: 3 }, (_, i) => sampleRecord(i, { workload: CONV, levelMs: { 0: 5 + i } }));
  const failed = sampleRecord(20, { status: 'compile_error' });
  const foreign = sampleRecord(21, { target: TARGET_B });
  await appendRecords(dir, [...dense, ...conv, failed, foreign, dense[4]!]);
  writeFileSync(join(dir, 'records.jsonl'), 'torn{"v"\n', { flag: 'a' });
  const inodeBefore = statSync(join(dir, 'records.jsonl')).ino;

  const r = await pruneDatabase(dir, { keepPerWorkload: 2 });
  assert.deepEqual(r.dropped, { corrupt: 1, duplicates: 1, failed: 0, otherTargets: 0, beyondKeep: 2 });
  const kept = new Set((await scanDatabase(dir)).records.keys());
  const expected = [...[0, 1, 2, 3, 6, 7, 8, 9].map((i) => dense[i]!), ...conv, failed, foreign].map(recordId);
  assert.deepEqual(kept, new Set(expected));
  assert.equal(r.kept, expected.length);
  assert.notEqual(statSync(join(dir, 'records.jsonl')).ino, inodeBefore, 'a new file was renamed into place');
  assert.deepEqual(readdirSync(dir), ['records.jsonl']);

  const r2 = await pruneDatabase(dir, { dropFailed: true, dropOtherTargets: true, target: targetFingerprint(TARGET_A) });
  assert.equal(r2.dropped.failed, 1);
  assert.equal(r2.dropped.otherTargets, 1);
  const left = [...(await scanDatabase(dir)).records.values()];
  assert.ok(left.every((x) => x.status === 'ok' && x.target === targetFingerprint(TARGET_A)));
  assert.equal(left.length, 11);
  await assert.rejects(pruneDatabase(join(root, 'missing')), (e: Error & { code?: string }) => e.code === 'FILE_NOT_FOUND');
});

test('export writes filtered JSON Lines or a CSV with every repeat', async () => {
  const dir = freshDir();
  await appendRecords(dir, [
    sampleRecord(0, { repeats: 3 }),
    sampleRecord(1, { workload: CONV }),
    sampleRecord(2, { status: 'crash', error: 'died, "badly"' }),
    sampleRecord(3, { target: TARGET_B }),
  ]);
  const jsonl = await exportRecords(dir, { format: 'jsonl', target: targetFingerprint(TARGET_A) });
  assert.equal(jsonl.records, 3);
  assert.equal(jsonl.text.trimEnd().split('\n').length, 3);
  const onlyConv = await exportRecords(dir, { format: 'jsonl', workload: sampleRecord(1, { workload: CONV }).workload });
  assert.equal(onlyConv.records, 1);

  const csv = await exportRecords(dir, { format: 'csv' });
  const rows = csv.text.trimEnd().split('\n');
  assert.equal(rows.length, 5);
  const header = rows[0]!.split(',');
  for (const col of [
    'id',
    'workload',
    'target',
    'status',
    'threads',
    'tileOc',
    'footprint_l2',
    'l0_median_ms',
    'l0_repeats',
    'l0_all_ms',
    'l2_median_ms',
    'error',
  ]) {
    assert.ok(header.includes(col), `column ${col}`);
  }
  const r0 = sampleRecord(0, { repeats: 3 });
  const row0 = rows.find((row) => row.startsWith(recordId(r0)))!.split(',');
  assert.equal(row0[header.indexOf('l0_repeats')], '3');
  assert.equal(row0[header.indexOf('l0_all_ms')], r0.latencies['0']!.join(' '));
  assert.ok(csv.text.includes('"died, ""badly"""'), 'CSV quoting');
});

test('stats count files, records, duplicates, corrupt lines, workloads, targets and statuses', async () => {
  const dir = freshDir();
  await appendRecords(dir, [
    sampleRecord(0),
    sampleRecord(1),
    sampleRecord(1),
    sampleRecord(2, { status: 'timeout' }),
    sampleRecord(3, { workload: CONV, target: TARGET_B }),
  ]);
  await appendRecords(dir, [sampleRecord(4)], { file: shardFileName(0, 3) });
  writeFileSync(join(dir, shardFileName(0, 3)), '{broken\n', { flag: 'a' });
  const s = await databaseStats(dir);
  assert.equal(s.files, 2);
  assert.equal(s.records, 5);
  assert.equal(s.duplicates, 1);
  assert.equal(s.corrupt, 1);
  assert.equal(s.workloads, 2);
  assert.deepEqual(s.targets, { [targetFingerprint(TARGET_A)]: 4, [targetFingerprint(TARGET_B)]: 1 });
  assert.deepEqual(s.byStatus, { ok: 4, timeout: 1 });
  assert.equal(s.targetDetails[0]!.target, targetFingerprint(TARGET_A));
});
