/**
 * The database under real processes: two tuners appending at once, a tuner killed with -9
 * mid-append, prune running while a tuner appends, and locks left behind by dead processes.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';
import { pruneDatabase } from '../src/db/operations.js';
import { parseRecordLine, recordId, recordLine } from '../src/db/record.js';
import { scanDatabase } from '../src/db/scan.js';
import { appendRecords } from '../src/db/store.js';
import { acquireLock } from '../src/db/lock.js';
import { sampleRecord } from './db-fixture.js';

const WRITER = resolve('test/fixtures/db-writer.mjs');
const root = mkdtempSync(join(tmpdir(), 'veltair-db-conc-'));
after(() => rmSync(root, { recursive: true, force: true }));

const writer = (dir: string, start: number, count: number | 'forever', repeats = 200) =>
  execa(process.execPath, [WRITER, dir, String(start), String(count), String(repeats)], { reject: false, stdin: 'ignore' });

const lines = (dir: string) => readFileSync(join(dir, 'records.jsonl'), 'utf8').split('\n');
const ids = (from: number, count: number) => Array.from({ length: count }, (_, k) => recordId(sampleRecord(from + k)));

test('two writers appending 200 long records each at once: all 400 lines parse', async () => {
  const dir = join(root, 'two-writers');
  const [a, b] = await Promise.all([writer(dir, 0, 200), writer(dir, 1000, 200)]);
  assert.equal(a.exitCode, 0, a.stderr);
  assert.equal(b.exitCode, 0, b.stderr);
  const text = lines(dir);
  assert.equal(text.pop(), '', 'the file ends with a newline');
  assert.equal(text.length, 400);
  assert.ok(
    text.every((l) => l.length > 4096),
    'lines are longer than PIPE_BUF, so atomicity is not by accident',
  );
  for (const [i, l] of text.entries()) assert.ok('record' in parseRecordLine(l), `line ${i + 1} is corrupt`);
  const scan = await scanDatabase(dir);
  assert.equal(scan.corrupt, 0);
  assert.deepEqual(new Set(scan.records.keys()), new Set([...ids(0, 200), ...ids(1000, 200)]));
  assert.ok(!readdirSync(dir).includes('.lock'), 'no lock left behind');
});

test('kill -9 mid-append loses at most the record in flight; a torn line is skipped and the next append is intact', async () => {
  const dir = join(root, 'killed');
  const child = writer(dir, 0, 'forever', 50);
  await new Promise<void>((ok) => child.stdout!.once('data', () => ok()));
  await new Promise((r) => setTimeout(r, 300));
  child.kill('SIGKILL');
  const result = await child;
  assert.equal(result.signal, 'SIGKILL');
  const text = lines(dir);
  const last = text.pop()!;
  assert.ok(text.length >= 1);
  for (const [i, l] of text.entries()) assert.ok('record' in parseRecordLine(l), `complete line ${i + 1} parses`);
  const written = text.length;
  // The kernel usually finishes a write the process was killed in; make the torn case certain.
  if (last === '') appendFileSync(join(dir, 'records.jsonl'), recordLine(sampleRecord(written)).slice(0, 500));
  // The killed writer may have held the lock: the next append must break it (its pid is gone).
  await appendRecords(dir, [sampleRecord(100_000)], { timeoutMs: 5000 });
  const scan = await scanDatabase(dir);
  assert.equal(scan.corrupt, 1, 'exactly the torn line');
  assert.equal(scan.records.size, written + 1);
  assert.ok(scan.records.has(recordId(sampleRecord(100_000))));
  for (const id of ids(0, written)) assert.ok(scan.records.has(id));
});

test('prune while a writer appends: no appended record is lost and prune never leaves temp files', async () => {
  const dir = join(root, 'prune-during-append');
  // a database big enough that each prune's read–write–rename takes a while
  await appendRecords(dir, [
    sampleRecord(5000, { status: 'crash' }),
    ...Array.from({ length: 200 }, (_, k) => sampleRecord(10_000 + k, { repeats: 20 })),
  ]);
  const child = writer(dir, 0, 400, 20);
  await new Promise<void>((ok) => child.stdout!.once('data', () => ok()));
  let prunes = 0;
  while (child.exitCode === null && prunes < 8) {
    await pruneDatabase(dir, { dropFailed: true });
    prunes++;
    await new Promise((r) => setTimeout(r, 15)); // let the writer in: prune is not meant to run in a loop
  }
  const result = await child;
  assert.equal(result.exitCode, 0, result.stderr);
  assert.ok(prunes >= 3, `prune ran ${prunes} times during the appends`);
  const scan = await scanDatabase(dir);
  assert.equal(scan.corrupt, 0);
  for (const id of ids(0, 400)) assert.ok(scan.records.has(id), 'appended record survived the prunes');
  assert.ok(!scan.records.has(recordId(sampleRecord(5000, { status: 'crash' }))), 'prune did drop the failure');
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.startsWith('.')),
    [],
  );
});

test('a lock left by a dead process is broken; a live holder makes writers wait, then DB_LOCKED', async () => {
  const dir = join(root, 'locks');
  mkdirSync(dir);
  const exited = execa(process.execPath, ['-e', '0']);
  const deadPid = exited.pid!;
  await exited;
  writeFileSync(join(dir, '.lock'), JSON.stringify({ pid: deadPid, host: hostname(), nonce: 'gone', since: new Date().toISOString() }));
  await appendRecords(dir, [sampleRecord(0)], { timeoutMs: 2000 });
  assert.ok(!readdirSync(dir).includes('.lock'));

  const held = await acquireLock(dir);
  const waiting = appendRecords(dir, [sampleRecord(1)], { timeoutMs: 5000 });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal((await scanDatabase(dir)).records.size, 1, 'the append waits for the lock');
  await held.release();
  await waiting;
  assert.equal((await scanDatabase(dir)).records.size, 2);

  const holder = await acquireLock(dir);
  await assert.rejects(
    appendRecords(dir, [sampleRecord(2)], { timeoutMs: 200 }),
    (e: Error & { code?: string }) => e.code === 'DB_LOCKED' && e.message.includes(String(process.pid)),
  );
  await holder.release();
});
