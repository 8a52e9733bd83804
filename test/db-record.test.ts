/** Tuning records: the schema round trip, what makes a line corrupt, stable ids and target fingerprints. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CODEGEN_VERSION } from '../src/codegen/kernel.js';
import { medianMs, parseRecordLine, preferRecord, recordId, recordIdOf, recordLine, type TuningRecord } from '../src/db/record.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { workloadKey } from '../src/ir/workload.js';
import { VERSION } from '../src/version.js';
import { CONV, TARGET_A, TARGET_B, sampleRecord } from './db-fixture.js';

const parse = (line: string) => parseRecordLine(line.trimEnd());
const problemOf = (value: unknown) => {
  const p = parseRecordLine(JSON.stringify(value));
  return 'problem' in p ? p.problem : undefined;
};

test('a record survives the JSON line round trip unchanged and names its workload, target and tools', () => {
  const r = sampleRecord(3, { workload: CONV, levelMs: { 0: 2, 1: 2.2, 4: 3 } });
  const line = recordLine(r);
  assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'), 'exactly one line');
  const back = parse(line);
  assert.ok('record' in back, JSON.stringify(back));
  assert.deepEqual(back.record, r);
  assert.equal(r.v, 1);
  assert.equal(r.workload, workloadKey(CONV));
  assert.equal(r.target, targetFingerprint(TARGET_A));
  assert.deepEqual(r.tool, { veltair: VERSION, codegen: CODEGEN_VERSION });
  assert.deepEqual(Object.keys(r.latencies), ['0', '1', '4']);
  assert.equal(r.latencies['4']!.length, 5, 'every repeat is kept');
  assert.ok(Math.abs(medianMs(r, 4)! - 3) < 0.01);
  assert.equal(medianMs(r, 2), undefined);
});

test('failed measurements are valid records with a short error and no latencies', () => {
  const r = sampleRecord(1, { status: 'crash', error: 'harness died (SIGSEGV)\n' + 'x'.repeat(1000) });
  assert.ok('record' in parse(recordLine(r)));
  assert.equal(r.error!.length, 300);
  assert.ok(!r.error!.includes('\n'));
  assert.equal(medianMs(r, 0), undefined);
});

test('the schema rejects malformed records and keys that do not match their specs', () => {
  const good = JSON.parse(JSON.stringify(sampleRecord(2))) as Record<string, unknown>;
  assert.equal(problemOf(good), undefined);
  const { schedule: _s, ...noSchedule } = good;
  const cases: [string, unknown, RegExp][] = [
    ['missing schedule', noSchedule, /schedule/],
    ['unknown status', { ...good, status: 'fine' }, /status/],
    ['ok without latencies', { ...good, latencies: {} }, /latencies/],
    ['ok with an empty level', { ...good, latencies: { 0: [] } }, /latencies/],
    ['negative latency', { ...good, latencies: { 0: [-1] } }, /latencies/],
    ['level that is not a number', { ...good, latencies: { quiet: [1] } }, /latencies/],
    ['future format version', { ...good, v: 2 }, /\/v/],
    ['unknown top-level field', { ...good, extra: 1 }, /additional/],
    ['bad timestamp', { ...good, timestamp: 'yesterday' }, /timestamp/],
    ['edited workload key', { ...good, workload: 'dense-0000000000000000' }, /workload key/],
    ['edited target', { ...good, targetSpec: { ...(good['targetSpec'] as object), cores: 64 } }, /fingerprint/],
  ];
  for (const [name, value, why] of cases) {
    const p = problemOf(value);
    assert.ok(p, `${name} should be rejected`);
    assert.match(p, why, name);
  }
  assert.equal(Object.hasOwn(parseRecordLine('{"v":1,"workload":'), 'problem'), true);
  assert.deepEqual(parseRecordLine('not json at all'), { problem: 'not JSON' });
  assert.throws(() => recordLine({ ...sampleRecord(2), threads: 0 } as TuningRecord), /invalid tuning record/);
});

test('record ids are stable, ignore key order, and change with workload, target, schedule, threads and codegen', () => {
  const r = sampleRecord(5);
  const shuffled = Object.fromEntries(Object.entries(r.schedule).reverse()) as unknown as TuningRecord['schedule'];
  assert.equal(recordId({ ...r, schedule: shuffled }), recordId(r));
  assert.equal(recordId(r), recordIdOf(r.workload, r.target, r.schedule, r.threads, CODEGEN_VERSION));
  assert.match(recordId(r), /^[0-9a-f]{64}$/);
  const ids = new Set([
    recordId(r),
    recordId(sampleRecord(5, { workload: CONV })),
    recordId(sampleRecord(5, { target: TARGET_B })),
    recordId(sampleRecord(6)),
    recordId({ ...r, threads: r.threads + 1 }),
    recordId({ ...r, tool: { ...r.tool, codegen: r.tool.codegen + 1 } }),
  ]);
  assert.equal(ids.size, 6);
  // latencies and timestamps are results, not identity
  assert.equal(recordId(sampleRecord(5, { levelMs: { 0: 9 } })), recordId(r));
});

test('target fingerprints are stable and change with every transferable field only', () => {
  const fp = targetFingerprint(TARGET_A);
  assert.match(fp, /^t1-[0-9a-f]{16}$/);
  assert.equal(targetFingerprint({ ...TARGET_A }), fp);
  assert.equal(targetFingerprint(JSON.parse(JSON.stringify(TARGET_A))), fp);
  const variants = [
    { ...TARGET_A, cpuModel: 'AMD EPYC 9B45' },
    { ...TARGET_A, isa: { ...TARGET_A.isa, avx512f: false } },
    { ...TARGET_A, cores: 16 },
    { ...TARGET_A, caches: { ...TARGET_A.caches, l3: 32 << 20 } },
    { ...TARGET_A, cc: 'gcc (Debian 13.1.0) 13.1.0' },
    { ...TARGET_A, cflags: [...TARGET_A.cflags, '-ffast-math'] },
  ];
  const fps = new Set(variants.map(targetFingerprint));
  assert.equal(fps.size, variants.length);
  assert.ok(!fps.has(fp));
  assert.equal(targetFingerprint({ ...TARGET_A, hostname: 'elsewhere' } as typeof TARGET_A), fp, 'non-transferable fields do not count');
});

test('between duplicates the ok record with more repeats wins, whatever the order', () => {
  const few = sampleRecord(4, { repeats: 3 });
  const many = sampleRecord(4, { repeats: 9 });
  const failed = sampleRecord(4, { status: 'timeout' });
  assert.equal(preferRecord(few, many), many);
  assert.equal(preferRecord(many, few), many);
  assert.equal(preferRecord(failed, few), few);
  assert.equal(preferRecord(few, failed), few);
});
