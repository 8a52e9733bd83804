/**
 * Compacted record sets (`veltair db compact`, tuning-db/): what compaction keeps (every family
 * member, the best per workload, thread count and level), that the files are the same bytes for
 * the same records and compacting again changes nothing, that a write failing midway leaves the
 * old file, that bad files give typed errors naming the file and line or field, and that a tuning
 * run reads a compacted set as exact records on its own target (measuring nothing) and as
 * transfer seeds on another. Fixture targets only: nothing here depends on the host's records.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { after, test } from 'node:test';
import { writeFileAtomic } from '../src/atomic-file.js';
import { bestPerLevelIds, compactRecords, familyIds } from '../src/db/compact.js';
import { compactDatabase, INDEX_FILE } from '../src/db/compact-database.js';
import { compactedFileName, contentHash } from '../src/db/compacted-file.js';
import { mergeDatabases, pruneDatabase } from '../src/db/operations.js';
import { recordId, recordLine, type TuningRecord } from '../src/db/record.js';
import { scanDatabase } from '../src/db/scan.js';
import { appendRecords, openDatabase } from '../src/db/store.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { withKey, type Conv2dWorkload } from '../src/ir/workload.js';
import { detectTarget, type Target } from '../src/toolchain/target.js';
import { tuneWorkloads } from '../src/tune/tune-model.js';
import { CONV, DENSE, TARGET_A, TARGET_B, sampleRecord } from './db-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-db-compact-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Records whose latencies cross between levels, so families have several members and some are dominated. */
function crossingRecords(target: Target = TARGET_A): TuningRecord[] {
  return Array.from({ length: 28 }, (_, i) =>
    sampleRecord(i, {
      target,
      workload: i % 4 < 2 ? DENSE : CONV,
      levelMs: i % 5 === 0 ? { 0: 2 + i / 50 } : { 0: 1 + ((i * 7) % 11) / 10, 1: 1 + ((i * 5) % 13) / 10, 3: 1 + ((i * 3) % 17) / 10 },
    }),
  );
}

const runOf = (r: TuningRecord) => `${r.target} ${r.workload} ${r.threads} ${r.tool.codegen}`;
function groups(records: readonly TuningRecord[]): Map<string, TuningRecord[]> {
  const out = new Map<string, TuningRecord[]>();
  for (const r of records) out.set(runOf(r), [...(out.get(runOf(r)) ?? []), r]);
  return out;
}

test('compaction keeps every family member and the best per (workload, threads, level), and drops the rest', () => {
  const all = [...crossingRecords(), sampleRecord(40, { status: 'crash' })];
  const kept = new Set(compactRecords(all).map(recordId));
  assert.ok(kept.size < all.length - 1, 'dominated candidates go');
  assert.ok(!kept.has(recordId(all.at(-1)!)), 'failures go (their trials are remembered in the header)');
  const full = groups(all.filter((r) => r.status === 'ok'));
  const compacted = groups(all.filter((r) => kept.has(recordId(r))));
  assert.ok(full.size >= 4);
  for (const [run, group] of full) {
    for (const id of familyIds(group)) assert.ok(kept.has(id), `family member of ${run}`);
    for (const id of bestPerLevelIds(group)) assert.ok(kept.has(id), `best of a level of ${run}`);
    assert.deepEqual(familyIds(compacted.get(run)!), familyIds(group), `a compile selects the same family from the compacted ${run}`);
  }
});

test('the same records give the same bytes in any order, and compacting again rewrites nothing', async () => {
  const records = [...crossingRecords(), ...crossingRecords(TARGET_B)];
  const a = join(root, 'order-a'),
    b = join(root, 'order-b');
  await appendRecords(a, records);
  await appendRecords(b, [...records].reverse());
  const outA = join(root, 'hub-a'),
    outB = join(root, 'hub-b');
  const first = await compactDatabase({ sources: [a], outDir: outA });
  await compactDatabase({ sources: [b], outDir: outB });
  assert.equal(first.targets.length, 2);
  assert.ok(first.targets.every((t) => t.changed));
  const files = readdirSync(outA).sort();
  assert.deepEqual(files, [INDEX_FILE, ...[TARGET_A, TARGET_B].map((t) => compactedFileName(targetFingerprint(t)))].sort());
  for (const f of files) assert.deepEqual(readFileSync(join(outA, f)), readFileSync(join(outB, f)), f);
  const gz = readFileSync(join(outA, compactedFileName(targetFingerprint(TARGET_A))));
  assert.equal(gz.readUInt32LE(4), 0, 'no timestamp in the gzip header');
  assert.equal(gz[9], 3, 'OS byte fixed');
  const before = files.map((f) => readFileSync(join(outA, f)));
  const again = await compactDatabase({ sources: [outA], outDir: outA });
  assert.ok(again.targets.every((t) => !t.changed));
  const twice = await compactDatabase({ sources: [a], outDir: outA });
  assert.ok(
    twice.targets.every((t) => !t.changed),
    'the source again: same records kept, same trials',
  );
  files.forEach((f, i) => assert.deepEqual(readFileSync(join(outA, f)), before[i], f));
  const index = JSON.parse(readFileSync(join(outA, INDEX_FILE), 'utf8'));
  const entry = index.targets[targetFingerprint(TARGET_A)];
  assert.equal(entry.sha256, contentHash(gunzipSync(gz).toString('utf8')));
  assert.equal(entry.cores, TARGET_A.cores);
  assert.deepEqual(entry.isa, ['avx2', 'avx512f', 'fma']);
  assert.equal(entry.workloads, 2);
});

test('--target compacts one target and leaves the others; the folder index lists every file', async () => {
  const db = join(root, 'two-targets');
  await appendRecords(db, [...crossingRecords(), ...crossingRecords(TARGET_B)]);
  const out = join(root, 'hub-one');
  const r = await compactDatabase({ sources: [db], outDir: out, target: targetFingerprint(TARGET_B) });
  assert.deepEqual(
    r.targets.map((t) => t.target),
    [targetFingerprint(TARGET_B)],
  );
  assert.deepEqual(Object.keys(r.index.targets), [targetFingerprint(TARGET_B)]);
  await compactDatabase({ sources: [db], outDir: out, target: targetFingerprint(TARGET_A) });
  const index = JSON.parse(readFileSync(join(out, INDEX_FILE), 'utf8'));
  assert.deepEqual(Object.keys(index.targets).sort(), [TARGET_A, TARGET_B].map(targetFingerprint).sort());
});

test('a write that fails midway leaves the old compacted file whole and no temp file behind', async () => {
  const db = join(root, 'atomic-src');
  await appendRecords(db, crossingRecords());
  const out = join(root, 'hub-atomic');
  await compactDatabase({ sources: [db], outDir: out });
  const file = join(out, compactedFileName(targetFingerprint(TARGET_A)));
  const old = readFileSync(file);
  await appendRecords(db, [sampleRecord(60, { levelMs: { 0: 0.5, 1: 0.5, 3: 0.5 } })]);
  async function* halfThenFail(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
    yield bytes.subarray(0, bytes.length >> 1);
    throw Object.assign(new Error('simulated crash'), { code: 'EIO' });
  }
  await assert.rejects(
    compactDatabase({ sources: [db], outDir: out, writeFile: (path, bytes) => writeFileAtomic(path, halfThenFail(bytes)) }),
    /simulated crash/,
  );
  assert.deepEqual(readFileSync(file), old);
  assert.deepEqual(
    readdirSync(out).filter((n) => n.startsWith('.')),
    [],
  );
  const r = await compactDatabase({ sources: [db], outDir: out });
  assert.ok(r.targets[0]!.changed, 'the next run writes the new record');
});

test('bad files: not gzip and a wrong header are typed errors naming the file; a corrupt line is skipped with one warning', async () => {
  const dir = join(root, 'bad');
  mkdirSync(dir);
  const name = compactedFileName(targetFingerprint(TARGET_A));
  writeFileSync(join(dir, name), 'plain text, not gzip');
  await assert.rejects(scanDatabase(dir), (e: Error & { code?: string }) => e.code === 'BAD_INPUT' && e.message.includes(name));
  const header = { kind: 'veltair-compacted-records', v: 1, target: 'not-a-fingerprint', trials: [] };
  writeFileSync(join(dir, name), gzipSync(JSON.stringify(header) + '\n'));
  await assert.rejects(
    scanDatabase(dir),
    (e: Error & { code?: string }) => e.code === 'BAD_INPUT' && e.message.includes(`${name}:1`) && e.message.includes('"target"'),
  );
  const good = { ...header, target: targetFingerprint(TARGET_A) };
  const lines = [
    JSON.stringify(good),
    recordLine(sampleRecord(1)).trimEnd(),
    '{"torn":',
    recordLine(sampleRecord(2, { target: TARGET_B })).trimEnd(),
  ];
  writeFileSync(join(dir, name), gzipSync(lines.join('\n') + '\n'));
  const warnings: string[] = [];
  const scan = await scanDatabase(dir, { onWarning: (m) => warnings.push(m) });
  assert.equal(scan.records.size, 1);
  assert.equal(scan.corrupt, 2, 'a torn line, and a record of another target than the file header');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, new RegExp(`${name.replace(/\./g, '\\.')}:3 not JSON`));
  await assert.rejects(
    compactDatabase({ sources: [join(root, 'missing')], outDir: join(root, 'hub-missing') }),
    (e: Error & { code?: string }) => e.code === 'FILE_NOT_FOUND',
  );
});

test('merge and prune refuse to rewrite a folder of compacted files (its trial counts would be lost); reading it is fine', async () => {
  const db = join(root, 'refuse-src');
  await appendRecords(db, crossingRecords());
  const hub = join(root, 'hub-refuse');
  await compactDatabase({ sources: [db], outDir: hub });
  const before = readdirSync(hub).map((n) => readFileSync(join(hub, n)));
  await assert.rejects(
    pruneDatabase(hub, { keepPerWorkload: 1 }),
    (e: Error & { code?: string }) => e.code === 'BAD_ARGUMENT' && e.message.includes('compacted'),
  );
  await assert.rejects(mergeDatabases([db], hub), (e: Error & { code?: string }) => e.code === 'BAD_ARGUMENT');
  assert.deepEqual(
    readdirSync(hub).map((n) => readFileSync(join(hub, n))),
    before,
  );
  const merged = await mergeDatabases([hub], join(root, 'merged-from-hub'));
  assert.equal(merged.records, (await scanDatabase(hub)).records.size);
});

const tinyConv: Conv2dWorkload = {
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
  'tuning reads a compacted set as exact records on its target (0 measured) and as transfer seeds on another',
  { timeout: 300_000 },
  async () => {
    const here = await detectTarget();
    const conv = withKey(tinyConv);
    const options = { trials: 6, levels: [0], threads: [1], seed: 5, minTimeMs: 10, target: here };
    const source = await openDatabase(join(root, 'tuned'), { target: here, shipped: false });
    const first = await tuneWorkloads([{ workload: conv, count: 1 }], { ...options, db: source });
    assert.equal(first.measured, 6);
    const hub = join(root, 'hub-tuned');
    await compactDatabase({ sources: [join(root, 'tuned')], outDir: hub });
    const kept = (await scanDatabase(hub)).records.size;
    assert.ok(kept < 6, `compaction keeps fewer records than trials (${kept})`);

    const fresh = await openDatabase(join(root, 'fresh'), { target: here, shipped: hub });
    const exact = await tuneWorkloads([{ workload: conv, count: 1 }], { ...options, db: fresh });
    assert.equal(exact.measured, 0, 'every trial of the run is in the compacted set');
    assert.equal(exact.dbHits, 6);
    assert.equal(exact.transfer.exactWorkloads, 1);
    assert.deepEqual(
      exact.families.get(conv.key)!.versions.map((v) => v.id),
      first.families.get(conv.key)!.versions.map((v) => v.id),
      'the same family as from every record',
    );

    const other: Target = { ...here, cpuModel: `${here.cpuModel} (other stepping)`, caches: { ...here.caches, l1d: here.caches.l1d * 2 } };
    const elsewhere = await openDatabase(join(root, 'elsewhere'), { target: other, shipped: hub });
    assert.equal(elsewhere.lookup(conv.key).length, 0, 'never a measurement on another target');
    assert.equal(elsewhere.trialsSpent(conv.key, 1), 0);
    assert.ok(elsewhere.foreign(conv.key).length > 0, 'a seed for transfer');
    const ignored = await openDatabase(join(root, 'fresh'), { target: here, shipped: false });
    assert.deepEqual([ignored.lookup(conv.key).length, ignored.trialsSpent(conv.key, 1)], [0, 0], 'shipped: false ignores it');
  },
);

const SHIPPED = resolve('tuning-db');
const MAX_SHIPPED_BYTES = 40 * 1024 * 1024;

test('the shipped tuning-db/ is compacted files and their index, within 40 MiB, and compacting it again changes nothing', async () => {
  const names = readdirSync(SHIPPED).sort();
  assert.ok(names.includes(INDEX_FILE));
  assert.ok(
    names.every((n) => n === INDEX_FILE || /^t1-[0-9a-f]{16}\.jsonl\.gz$/.test(n)),
    names.join(' '),
  );
  const bytes = names.reduce((sum, n) => sum + statSync(join(SHIPPED, n)).size, 0);
  assert.ok(bytes <= MAX_SHIPPED_BYTES, `tuning-db/ holds ${bytes} bytes`);
  const index = JSON.parse(readFileSync(join(SHIPPED, INDEX_FILE), 'utf8'));
  assert.deepEqual(
    Object.keys(index.targets).map(compactedFileName).sort(),
    names.filter((n) => n !== INDEX_FILE),
  );
  const copy = join(root, 'shipped-copy');
  mkdirSync(copy);
  for (const n of names) writeFileSync(join(copy, n), readFileSync(join(SHIPPED, n)));
  const r = await compactDatabase({ sources: [SHIPPED], outDir: copy });
  for (const t of r.targets) {
    assert.equal(t.changed, false, t.target);
    const text = gunzipSync(readFileSync(join(SHIPPED, compactedFileName(t.target)))).toString('utf8');
    assert.equal(index.targets[t.target].sha256, contentHash(text));
  }
});
