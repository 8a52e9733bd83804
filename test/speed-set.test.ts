import test from 'node:test';
import assert from 'node:assert/strict';
import type { CoverageRecord } from '../src/bench/coverage-table.js';
import { roundsOf } from '../src/bench/model-runs.js';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { publishRecords, parseSpeedSetArgs, speedSetModels } from '../src/bench/speed-set.js';
import { appendRecords } from '../src/db/store.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { TARGET_A, sampleRecord } from './db-fixture.js';
import { SPEED_BEGIN, SPEED_END, speedSetTable, type SpeedRow } from '../src/bench/speed-set-table.js';
import { describeRoofline, groupLimits, groupOf, int8Work, stepLimit } from '../src/bench/step-roofline.js';

const conv = (o: Partial<{ cin: number; cout: number; kh: number; kw: number; groups: number }>) => ({
  op: 'conv2d' as const,
  dtype: 'float32' as const,
  n: 1,
  cin: 64,
  h: 56,
  w: 56,
  cout: 64,
  kh: 3,
  kw: 3,
  strideH: 1,
  strideW: 1,
  pads: [1, 1, 1, 1] as const,
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 56,
  ow: 56,
  epilogue: [],
  ...o,
});

test("a step's limit is the larger of its FMA time and its traffic time, and its fraction is that over its time", () => {
  // 2 GFLOP at 200 GFLOP/s = 10 ms; 10 MB at 20 GB/s = 0.5 ms: FMA-bound, 10 ms of 20 observed.
  const fma = stepLimit({ group: 'conv 3×3', layer: 3, ms: 20, flops: 2e9, bytes: 1e7 }, 200, 20);
  assert.equal(fma.bound, 'fma');
  assert.ok(Math.abs(fma.computeMs - 10) < 1e-9 && Math.abs(fma.memoryMs - 0.5) < 1e-9);
  assert.ok(Math.abs(fma.fraction - 0.5) < 1e-9);
  // No arithmetic: the copy at its size is the limit.
  const copy = stepLimit({ group: 'concat', layer: null, ms: 1, flops: 0, bytes: 2e7 }, 200, 40);
  assert.equal(copy.bound, 'memory');
  assert.ok(Math.abs(copy.fraction - 0.5) < 1e-9);
  assert.equal(stepLimit({ group: 'reshape', layer: null, ms: 0, flops: 0, bytes: 0 }, 200, 0).fraction, 0, 'a step that took no time');
});

test('an INT8 kernel is held to the INT8 dot-product peak, not the FMA peak', () => {
  // 2 GOP at 800 GOP/s = 2.5 ms (at the FMA peak it would read 10 ms): 2.5 of 5 observed.
  const q = stepLimit({ group: 'int8 conv 3×3', layer: 3, ms: 5, flops: 2e9, bytes: 1e7, int8: true }, 200, 20, 800);
  assert.equal(q.bound, 'int8');
  assert.ok(Math.abs(q.computeMs - 2.5) < 1e-9 && Math.abs(q.fraction - 0.5) < 1e-9);
  // Its traffic can still bound it.
  assert.equal(stepLimit({ group: 'int8 dense', layer: 4, ms: 5, flops: 2e6, bytes: 1e8, int8: true }, 200, 20, 800).bound, 'memory');
  const g = groupLimits([q, stepLimit({ group: 'conv 1×1', layer: 5, ms: 5, flops: 1e9, bytes: 1e6 }, 200, 20, 800)]);
  assert.deepEqual(
    g.map((x) => x.bound),
    ['int8', 'fma'],
  );
  assert.equal(
    describeRoofline({ groups: g, fraction: 0.5 }),
    'int8 conv 3×3 50% at 50% of INT8 peak; conv 1×1 50% at 100% of FMA (whole run at 50% of its limit)',
  );
});

test("an INT8 layer's work and group come from its manifest shapes", () => {
  const conv = (groups: number, cin: number, cout: number, k: number) => ({
    op: 'qconv2d',
    inputShapes: [[1, cin, 16, 16]],
    outputShape: [1, cout, 8, 8],
    attrs: { groups, kernel: [k, k] },
  });
  assert.deepEqual(int8Work(conv(1, 16, 32, 3)), { group: 'int8 conv 3×3', macs: 32 * 64 * 16 * 9 });
  assert.deepEqual(int8Work(conv(16, 16, 16, 3)), { group: 'int8 depthwise conv', macs: 16 * 64 * 9 });
  assert.deepEqual(int8Work(conv(4, 16, 32, 1)), { group: 'int8 grouped conv', macs: 32 * 64 * 4 });
  assert.deepEqual(int8Work({ op: 'qmatmul', inputShapes: [[2, 2048]], outputShape: [2, 1000], attrs: {} }), {
    group: 'int8 dense',
    macs: 2 * 2048 * 1000,
  });
  assert.equal(int8Work({ op: 'qadd', inputShapes: [[1, 8]], outputShape: [1, 8], attrs: {} }), undefined);
});

test('layers are grouped by what they compute', () => {
  assert.equal(groupOf(conv({})), 'conv 3×3');
  assert.equal(groupOf(conv({ kh: 1, kw: 1 })), 'conv 1×1');
  assert.equal(groupOf(conv({ kh: 1, kw: 7 })), 'conv 1×7');
  assert.equal(groupOf(conv({ groups: 64 })), 'depthwise conv');
  assert.equal(groupOf(conv({ groups: 32, cout: 128 })), 'grouped conv');
  assert.equal(groupOf({ op: 'dense', dtype: 'float32', m: 1, k: 512, n: 1000, epilogue: [] } as never), 'dense');
});

test('groups sum their steps, largest time first, with their share and the fraction of their summed limit', () => {
  const steps = [
    stepLimit({ group: 'conv 3×3', layer: 1, ms: 6, flops: 1.2e9, bytes: 1e6 }, 200, 20), // limit 6 ms: 100%
    stepLimit({ group: 'conv 3×3', layer: 2, ms: 2, flops: 0.2e9, bytes: 1e6 }, 200, 20), // limit 1 ms
    stepLimit({ group: 'add', layer: null, ms: 2, flops: 0, bytes: 2e7 }, 200, 20), // limit 1 ms, memory
  ];
  const g = groupLimits(steps);
  assert.deepEqual(
    g.map((x) => x.group),
    ['conv 3×3', 'add'],
  );
  assert.equal(g[0]!.steps, 2);
  assert.ok(Math.abs(g[0]!.share - 0.8) < 1e-9 && Math.abs(g[0]!.fraction - 7 / 8) < 1e-9);
  assert.equal(g[1]!.bound, 'memory');
  assert.equal(
    describeRoofline({ groups: g, fraction: 0.8 }),
    'conv 3×3 80% at 88% of FMA; add 20% at 50% of memory (whole run at 80% of its limit)',
  );
});

test('flat samples are cut into rounds of `runs`, a partial round dropped', () => {
  assert.deepEqual(roundsOf([2, 2, 2, 3, 3, 3], 3), [
    [2, 2, 2],
    [3, 3, 3],
  ]);
  assert.deepEqual(roundsOf([1, 2, 3], 2), [[1, 2]]);
});

const cov = (model: string, gmacs: number | undefined, ok: boolean): CoverageRecord => ({
  model,
  task: 'classification',
  input: [1, 3, 224, 224],
  when: '',
  export: { ok: true },
  ...(gmacs === undefined ? {} : { gmacs }),
  compile: { ok: true, wallSeconds: 1, budget: 'x' },
  match: { relErr: ok ? 1e-6 : 1, ok },
});

test('the speed set: models that matched ORT at ≤ the GMACs cap, smallest first', () => {
  const set = speedSetModels(
    [
      cov('vgg16', 15.5, true),
      cov('resnet18', 1.8, true),
      cov('vit_h_14', 167, true),
      cov('bad', 1, false),
      cov('unknown', undefined, true),
    ],
    25,
  );
  assert.deepEqual(set, [
    { model: 'resnet18', gmacs: 1.8 },
    { model: 'vgg16', gmacs: 15.5 },
  ]);
});

test('the speed-set table: ratios with spread, misses in bold with their profile, geomeans and what is still to run', () => {
  const lat = (ratio: number) => ({ veltairMs: 10 * ratio, ortMs: 10, ratio, minRatio: ratio - 0.05, maxRatio: ratio + 0.05 });
  const roof = {
    peakGflops: 200,
    memoryGbps: 25,
    totalMs: 12,
    fraction: 0.4,
    groups: [{ group: 'depthwise conv', steps: 17, ms: 6, share: 0.5, fraction: 0.2, bound: 'memory' as const }],
  };
  const rows: SpeedRow[] = [
    {
      model: 'resnet18',
      gmacs: 1.8,
      compile: { ok: true, wallSeconds: 115 },
      match: { relErr: 1e-6, ok: true },
      latency: { 1: lat(0.7), 2: lat(0.64) },
    },
    {
      model: 'mobilenet_v2',
      gmacs: 0.3,
      compile: { ok: true, wallSeconds: 200 },
      match: { relErr: 1e-6, ok: true },
      latency: { 1: lat(1.2), 2: lat(0.9) },
      roofline: { 1: roof, 2: roof },
    },
    { model: 'vgg16', gmacs: 15.5 },
  ];
  const t = speedSetTable(rows);
  const body = t.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| model'));
  assert.deepEqual(
    body.map((l) => l.split(' | ')[0]),
    ['| mobilenet_v2', '| resnet18', '| vgg16'],
  );
  assert.match(body[0]!, /\*\*1\.200\*\* \[1\.15–1\.25\] \(12\.0 \/ 10\.0\)/);
  assert.match(body[0]!, /1t: depthwise conv 50% at 20% of memory .*2t: depthwise conv/);
  assert.doesNotMatch(body[1]!, /of FMA|of memory/, 'below 0.8: no profile');
  assert.match(body[2]!, /not compiled yet/);
  assert.match(t, /3 models at ≤ 25 GMACs: 2 compiled at the default budget, 2 checked against ONNX Runtime, 2 timed/);
  assert.match(t, /1 thread\(s\): 2 models, geomean veltair\/ORT 0\.917 \(target ≤ 0\.8\), above 1\.0: 1 \(mobilenet_v2\)/);
  assert.match(t, /2 thread\(s\): 2 models, geomean veltair\/ORT 0\.759 \(target ≤ 0\.8\), above 1\.0: none/);
  assert.ok(SPEED_BEGIN.includes('speed-set-table:begin') && SPEED_END.includes('speed-set-table:end'));
});

test('speed-set arguments: modes, numbers, and refusals of unknown flags and missing values', () => {
  const o = parseSpeedSetArgs(['W', 'resnet18', '--bench', '--rounds', '5']);
  assert.equal(o.mode, 'bench');
  assert.deepEqual(o.names, ['resnet18']);
  assert.equal(o.rounds, 5);
  assert.equal(o.maxGmacs, 25);
  assert.equal(parseSpeedSetArgs(['W', '--table-only']).mode, 'table');
  assert.equal(parseSpeedSetArgs(['W']).mode, 'compile');
  assert.throws(() => parseSpeedSetArgs(['W', '--round', '5']), /unknown flag --round/);
  assert.throws(() => parseSpeedSetArgs(['W', '--runs']), /--runs needs a value/);
  assert.throws(() => parseSpeedSetArgs(['W', '--max-gmacs', '-1']), /must be a positive number, not -1/);
  assert.throws(() => parseSpeedSetArgs(['W', '--profile-runs', 'x']), /must be a positive number/);
  assert.throws(() => parseSpeedSetArgs([]), /usage/);
});

test('--records-out: after a model, the speed set compacts its database into the folder, and again changes no byte', async () => {
  assert.equal(parseSpeedSetArgs(['W', '--records-out', 'tuning-db']).recordsOut, resolve('tuning-db'));
  assert.equal(parseSpeedSetArgs(['W']).recordsOut, undefined);
  assert.throws(() => parseSpeedSetArgs(['W', '--records-out']), /--records-out needs a value/);
  const work = mkdtempSync(join(tmpdir(), 'veltair-speed-records-'));
  try {
    const out = join(work, 'hub');
    await publishRecords(work, out); // no database yet: nothing to write
    await appendRecords(join(work, 'speed', 'db'), [sampleRecord(0), sampleRecord(1), sampleRecord(2)]);
    await publishRecords(work, out);
    const file = join(out, `${targetFingerprint(TARGET_A)}.jsonl.gz`);
    assert.deepEqual(readdirSync(out).sort(), ['index.json', `${targetFingerprint(TARGET_A)}.jsonl.gz`]);
    const bytes = readFileSync(file);
    await publishRecords(work, out);
    assert.deepEqual(readFileSync(file), bytes);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
