import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMix, qosRule, qosRuleLine, PRESETS } from '../src/bench/serve-mixes.js';
import { candidateSplits, splitLoad } from '../src/bench/pinned-split.js';
import { parseArms, isOrt } from '../src/bench/serve-arms.js';
import { bestOrt, mixTable, paired, type ArmResult } from '../src/bench/serve-table.js';
import { aaChecks } from '../src/bench/serve-resolution.js';
import type { ProbeNoise } from '../src/bench/serve-noise.js';

test('a preset mix finds its bundles in the bundle dir, the first existing one per slot', () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-mix-'));
  for (const m of ['resnet50', 'mobilenet_v2', 'bert_large', 'efficientnet_b0']) mkdirSync(join(dir, `${m}.bundle`));
  const het1 = parseMix('het1', dir);
  assert.deepEqual(
    het1.bundles.map((b) => b.split('/').pop()),
    ['resnet50.bundle', 'mobilenet_v2.bundle'],
  );
  assert.equal(het1.k, PRESETS['het1']!.k);
  assert.equal(het1.heterogeneous, true);
  assert.equal(parseMix('het2', dir).bundles[0]!.endsWith('bert_large.bundle'), true, 'bert_tiny absent: bert_large');
  mkdirSync(join(dir, 'bert_tiny.bundle'));
  assert.equal(parseMix('het2', dir).bundles[0]!.endsWith('bert_tiny.bundle'), true, 'bert_tiny first when present');
  assert.throws(
    () => parseMix('het3', dir),
    (e: { code?: string }) => e.code === 'FILE_NOT_FOUND',
  );
  assert.equal(parseMix('het1@2.5', dir).k, 2.5);
});

test("a named list takes a preset's k when named like one, else the homogeneous 5; bad input is a typed error", () => {
  assert.equal(parseMix('het1=a.bundle,b.bundle', '.').k, PRESETS['het1']!.k);
  assert.equal(parseMix('light=a.bundle,b.bundle', '.').k, 5);
  assert.equal(parseMix('light=a.bundle,b.bundle', '.', 4).k, 4);
  for (const bad of ['nosuch', 'x=', 'x=a.bundle,a.bundle', 'het1@0.5', '../x=a.bundle', '=a.bundle']) {
    assert.throws(
      () => parseMix(bad, '.'),
      (e: { code?: string }) => e.code === 'BAD_ARGUMENT',
      bad,
    );
  }
});

test('the QoS rule: k × own latency, and sharing is hard exactly when k × light < heavy', () => {
  const lat = new Map([
    ['heavy', 50],
    ['light', 9],
  ]);
  const r = qosRule(3, lat);
  assert.deepEqual(r.qosMs, { heavy: 150, light: 27 });
  assert.equal(r.heavy, 'heavy');
  assert.equal(r.light, 'light');
  assert.equal(r.hardSharing, true);
  assert.equal(qosRule(6, lat).hardSharing, false);
  const line = qosRuleLine(r, lat, 2);
  assert.match(line, /k = 3/);
  assert.match(line, /sharing is hard/);
  assert.match(qosRuleLine(qosRule(6, lat), lat, 2), /NOT hard/);
});

test('pinned splits: disjoint contiguous subsets covering the cores, best-balanced first; more models than cores share cores', () => {
  const cores = [0, 1, 2, 3];
  const all = candidateSplits(cores, [30, 10], 10);
  assert.equal(all.length, 3, 'compositions of 4 into 2');
  for (const s of all) assert.deepEqual(s.flat().sort(), cores);
  assert.deepEqual(all[0], [[0, 1, 2], [3]], 'the heavy model gets more cores');
  for (let i = 1; i < all.length; i++) assert.ok(splitLoad(all[i - 1]!, [30, 10]) <= splitLoad(all[i]!, [30, 10]));
  assert.equal(candidateSplits(cores, [30, 10], 1).length, 1);
  const three = candidateSplits([0, 1], [30, 20, 5], 10);
  assert.equal(three.length, 6, 'every map of 3 models onto 2 cores using both');
  for (const s of three) assert.deepEqual([...new Set(s.flat())].sort(), [0, 1]);
  assert.deepEqual(
    three[0]!.map((c) => c.length),
    [1, 1, 1],
  );
});

test('arms: a kind named twice is labelled #2; ORT kinds are known', () => {
  assert.deepEqual(parseArms('fcfs,fcfs,ort'), [
    { label: 'fcfs', kind: 'fcfs' },
    { label: 'fcfs#2', kind: 'fcfs' },
    { label: 'ort', kind: 'ort' },
  ]);
  assert.equal(isOrt('ort-pinned'), true);
  assert.equal(isOrt('ort-instances'), true);
  assert.equal(isOrt('veltair'), false);
});

const arm = (label: string, maxQps: number[], kind = label.split('#')[0]!): ArmResult => ({
  label,
  kind,
  maxQps,
  undecided: maxQps.map(() => []),
  noise: maxQps.map(() => []),
  simulatedQps: null,
});

test('best ORT is the ORT arm with the highest median; ratios are paired per round', () => {
  const arms = [
    arm('ort', [10, 12, 11]),
    arm('ort-pinned', [14, 13, 15]),
    arm('ort-instances', [9, 9, 9]),
    arm('veltair', [28, 26, 30]),
    arm('fcfs', [20, 20, 20]),
  ];
  assert.equal(bestOrt(arms)!.label, 'ort-pinned');
  const r = paired(arms[3]!, arms[1]!)!;
  assert.deepEqual(r.ratios, [2, 2, 2]);
  const table = mixTable({ mix: 'het1', models: ['a', 'b'], cores: [0, 1], ruleLine: 'QoS rule: …', arms });
  assert.match(table, /best ORT: ort-pinned, median 14\.00 QPS/);
  assert.match(table, /\| ort-pinned \(best ORT\) \|/);
  assert.match(table, /\| veltair \| 28\.00 \/ 26\.00 \/ 30\.00 \| 28\.00 \| 2\.00 \[2\.00–2\.00\] \| 1\.40 \[1\.30–1\.50\]/);
  assert.equal(bestOrt([arm('fcfs', [1])]), undefined);
});

test("A/A: the method resolves 10% when the identical arms' paired median is within 10% and every round within 20%", () => {
  const tight = aaChecks([arm('veltair', [10, 10, 10]), arm('veltair#2', [10.5, 9.6, 11.5])]);
  assert.equal(tight.length, 1);
  assert.equal(tight[0]!.medianWithin, true);
  assert.equal(tight[0]!.everyRoundWithin, true);
  assert.ok(Math.abs(tight[0]!.worstRound - 1.15) < 1e-9, 'the round farthest from 1');
  const wide = aaChecks([arm('veltair', [10, 10, 10]), arm('veltair#2', [13, 9.5, 10])])[0]!;
  assert.equal(wide.medianWithin, true, 'median 1.0');
  assert.equal(wide.everyRoundWithin, false, 'one round 1.3');
  const off = aaChecks([arm('ort-instances', [10, 10, 10]), arm('ort-instances#2', [12, 11.5, 12.5])])[0]!;
  assert.equal(off.medianWithin, false);
  const arms = [arm('veltair', [10, 10, 10]), arm('veltair#2', [13, 9.5, 10])];
  const table = mixTable({ mix: 'm', models: ['a'], cores: [0], ruleLine: 'r', arms });
  const header = table.split('| arm |')[0]!;
  assert.match(header, /Resolution \(A\/A veltair#2 \/ veltair, 3 rounds\): paired median 1\.000 \(within 10%\), /);
  assert.match(header, /worst round 1\.300 \(NOT every round within 20%\)/);
  assert.match(header, /does NOT resolve 10%/);
  assert.match(header, /459 requests with 0 late, 662 with 1, 2,010 with 10/);
  assert.match(mixTable({ mix: 'm', models: ['a'], cores: [0], ruleLine: 'r', arms: [arm('fcfs', [1])] }), /no A\/A pair ran/);
  assert.equal(aaChecks([arm('fcfs', [1]), arm('veltair', [1])]).length, 0);
  const undecided = mixTable({
    mix: 'm',
    models: ['a'],
    cores: [0],
    ruleLine: 'r',
    arms: [arm('veltair', [0, 0]), arm('veltair#2', [0, 0])],
  });
  assert.match(undecided, /the A\/A pair veltair#2 \/ veltair ran, but no round found a max QPS above 0 for both/);
  assert.doesNotMatch(undecided, /no A\/A pair ran/);
});

test("the noise columns: most outside work and steal of any probe, the client's median CPU per request, and the noisy reruns", () => {
  const p = (outsideShare: number | null, client: number, rerunOfNoisy = false): ProbeNoise => ({
    qps: 10,
    verdict: 'pass',
    durationS: 4,
    sent: 500,
    outsideShare,
    stealShare: 0.001,
    clientCpuMsPerRequest: client,
    rerunOfNoisy,
  });
  const a: ArmResult = {
    ...arm('veltair', [10, 10]),
    noise: [
      [p(0.01, 0.2), p(0.08, 0.3)],
      [p(0.02, 0.25, true), p(null, 0.4)],
    ],
    undecided: [[12], []],
  };
  const row = mixTable({ mix: 'm', models: ['a'], cores: [0], ruleLine: 'r', arms: [a] })
    .split('\n')
    .find((l) => l.startsWith('| veltair |'))!;
  assert.match(row, /\| 1 \| 8\.0% \| 0\.1% \| 0\.275 \| 1 \|$/, row);
});
