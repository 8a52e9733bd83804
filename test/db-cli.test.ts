/** `veltair db …` as a user runs it: the real binary, JSON on stdout only, warnings and errors on stderr. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';
import { recordLine } from '../src/db/record.js';
import { appendRecords } from '../src/db/store.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { TARGET_A, TARGET_B, sampleRecord } from './db-fixture.js';

const BIN = resolve('bin/veltair');
const root = mkdtempSync(join(tmpdir(), 'veltair-db-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));

const veltair = (...args: string[]) => execa(process.execPath, [BIN, ...args], { reject: false, stdin: 'ignore' });

function assertOneClearError(r: { exitCode?: number; stdout: string; stderr: string }, code: string, mentions: string) {
  assert.equal(r.exitCode, 1, r.stderr);
  assert.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 2, r.stderr);
  assert.match(lines[0]!, new RegExp(`^error\\[${code}\\]: .*${mentions.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
  assert.match(lines[1]!, /^ {2}hint: \S/);
}

test('db stats --json prints only the stats; corrupt lines give one warning line and exit 0', async () => {
  const db = join(root, 'stats');
  await appendRecords(db, [sampleRecord(0), sampleRecord(1), sampleRecord(2, { status: 'crash' }), sampleRecord(3, { target: TARGET_B })]);
  writeFileSync(join(db, 'records.jsonl'), 'oops\n{"half":', { flag: 'a' });
  const r = await veltair('db', 'stats', '--db', db, '--json');
  assert.equal(r.exitCode, 0, r.stderr);
  const stats = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(stats), [
    'path',
    'files',
    'records',
    'corrupt',
    'duplicates',
    'workloads',
    'targets',
    'targetDetails',
    'byStatus',
    'currentTarget',
  ]);
  assert.equal(stats.records, 4);
  assert.equal(stats.corrupt, 2);
  assert.deepEqual(stats.byStatus, { ok: 3, crash: 1 });
  assert.equal(stats.targets[targetFingerprint(TARGET_A)], 3);
  const warnings = r.stderr.trimEnd().split('\n');
  assert.equal(warnings.length, 1, r.stderr);
  assert.match(warnings[0]!, /^warning: .*skipped 2 corrupt lines/);

  const human = await veltair('db', 'stats', '--db', db);
  assert.equal(human.exitCode, 0);
  assert.match(human.stdout, /records\s+4 unique/);
  assert.ok(human.stdout.includes(targetFingerprint(TARGET_B)));
});

test('db merge, export and prune work end to end', async () => {
  const a = join(root, 'shard-a'),
    b = join(root, 'shard-b'),
    dest = join(root, 'merged');
  await appendRecords(
    a,
    [0, 1, 2].map((i) => sampleRecord(i)),
  );
  await appendRecords(b, [sampleRecord(2), sampleRecord(3, { levelMs: { 0: 9, 2: 0.5 } }), sampleRecord(4, { status: 'timeout' })]);
  const merged = await veltair('db', 'merge', a, b, '-o', dest, '--json');
  assert.equal(merged.exitCode, 0, merged.stderr);
  assert.equal(JSON.parse(merged.stdout).records, 5);
  assert.equal(JSON.parse(merged.stdout).duplicates, 1);

  const csv = await veltair('db', 'export', '--db', dest, '--format', 'csv');
  assert.equal(csv.exitCode, 0, csv.stderr);
  assert.equal(csv.stdout.trimEnd().split('\n').length, 6);

  // A cell a spreadsheet would evaluate (here an error message) is written as text: OWASP's leading quote.
  const formulas = join(root, 'formulas');
  await appendRecords(formulas, [sampleRecord(7, { status: 'crash', error: '=1+2' })]);
  const guarded = await veltair('db', 'export', '--db', formulas, '--format', 'csv');
  assert.equal(guarded.exitCode, 0, guarded.stderr);
  const cells = guarded.stdout.trimEnd().split('\n')[1]!.split(',');
  assert.ok(cells.includes("'=1+2"), guarded.stdout);
  assert.ok(!cells.some((c) => /^[=+@]/.test(c)), 'no cell starts a formula');
  const out = join(root, 'export.jsonl');
  const exported = await veltair('db', 'export', '--db', dest, '-o', out, '--json');
  assert.equal(JSON.parse(exported.stdout).records, 5);
  assert.equal(readFileSync(out, 'utf8').trimEnd().split('\n').length, 5);

  const pruned = await veltair('db', 'prune', '--db', dest, '--keep', '1', '--drop-failed', '--json');
  assert.equal(pruned.exitCode, 0, pruned.stderr);
  const p = JSON.parse(pruned.stdout);
  assert.equal(p.dropped.failed, 1);
  // Per thread count (db-fixture: even i at 1 thread, odd at 2): record 0 is fastest at both levels at 1 thread;
  // at 2 threads record 1 is fastest at level 0 and record 3 at level 2.
  assert.equal(p.kept, 3, 'the fastest at level 0 and the fastest at level 2, per thread count');
});

test('bad input: missing database, unwritable destination, bad flags', async () => {
  assertOneClearError(await veltair('db', 'stats', '--db', join(root, 'nope')), 'FILE_NOT_FOUND', join(root, 'nope'));
  const file = join(root, 'a-file');
  writeFileSync(file, recordLine(sampleRecord(0)));
  assertOneClearError(await veltair('db', 'merge', file, '-o', join(file, 'sub')), 'FILE_UNWRITABLE', join(file, 'sub'));
  assertOneClearError(await veltair('db', 'merge', join(root, 'nope'), '-o', join(root, 'dest')), 'FILE_NOT_FOUND', 'nope');
  assertOneClearError(await veltair('db', 'prune', '--db', file, '--keep', 'lots'), 'BAD_ARGUMENT', '--keep');
  assertOneClearError(await veltair('db', 'export', '--db', file, '--format', 'xml'), 'BAD_ARGUMENT', '--format');
  assertOneClearError(await veltair('db', 'export', '--db', file, '--target', 'x86'), 'BAD_ARGUMENT', '--target');
  assertOneClearError(await veltair('db', 'export', '--db', file, '-o', join(file, 'out.csv')), 'FILE_UNWRITABLE', 'out.csv');
});

test('db compact --json writes one file per target and an index; a bad compacted file is one clear error, exit 1', async () => {
  const db = join(root, 'compact-src');
  await appendRecords(db, [sampleRecord(0), sampleRecord(1), sampleRecord(2, { target: TARGET_B }), sampleRecord(3, { status: 'crash' })]);
  const out = join(root, 'compact-out');
  const r = await veltair('db', 'compact', '--db', db, '-o', out, '--json');
  assert.equal(r.exitCode, 0, r.stderr);
  const result = JSON.parse(r.stdout);
  assert.deepEqual(result.targets.map((t: { target: string }) => t.target).sort(), [TARGET_A, TARGET_B].map(targetFingerprint).sort());
  assert.deepEqual(Object.keys(result.index.targets).sort(), [TARGET_A, TARGET_B].map(targetFingerprint).sort());
  assert.deepEqual(
    readdirSync(out).sort(),
    [`${targetFingerprint(TARGET_A)}.jsonl.gz`, `${targetFingerprint(TARGET_B)}.jsonl.gz`, 'index.json'].sort(),
  );
  const again = await veltair('db', 'compact', '--db', db, '-o', out);
  assert.equal(again.exitCode, 0, again.stderr);
  assert.match(again.stdout, /0 files rewritten/);
  const bad = join(root, 'compact-bad');
  mkdirSync(bad);
  writeFileSync(join(bad, `${targetFingerprint(TARGET_A)}.jsonl.gz`), 'not gzip');
  assertOneClearError(await veltair('db', 'compact', '--db', bad, '-o', out), 'BAD_INPUT', `${targetFingerprint(TARGET_A)}.jsonl.gz`);
  assertOneClearError(await veltair('db', 'compact', '--db', db), 'BAD_ARGUMENT', '-o DIR');
});
