import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePolicy } from '../src/schedule/policies.js';
import { simulate } from '../src/simulate/engine.js';
import { NO_INTERFERENCE } from '../src/simulate/interference.js';
import {
  chargesFor,
  frontEndUs,
  readCalibration,
  validateCalibration,
  CALIBRATION_FORMAT,
  type ServingCalibration,
} from '../src/simulate/calibration.js';
import { fitCalibration } from '../src/simulate/calibration-fit.js';
import { accountTimeline, parseTimeline, timelineParameter } from '../src/serve/timeline.js';
import { handPlan } from './schedule-fixture.js';

const CAL: ServingCalibration = {
  format: CALIBRATION_FORMAT,
  version: 1,
  machine: 'fixture',
  measured: '2026-12-03T00:00:00Z',
  command: 'fixture',
  frontEnd: [
    { bytes: 1000, us: 100 },
    { bytes: 11_000, us: 300 },
    { bytes: 111_000, us: 1300 },
  ],
  blockDispatchUs: 40,
  wakeUpUsPerCore: 10,
  eventLoopUsPerBlock: 20,
};

test('front end by tensor bytes: linear between points, the end slopes beyond, never negative', () => {
  assert.equal(frontEndUs(CAL, 1000), 100);
  assert.equal(frontEndUs(CAL, 6000), 200);
  assert.equal(frontEndUs(CAL, 61_000), 800);
  assert.equal(frontEndUs(CAL, 211_000), 2300);
  assert.equal(frontEndUs(CAL, 0), 80);
  assert.equal(
    frontEndUs(
      {
        ...CAL,
        frontEnd: [
          { bytes: 1000, us: 5 },
          { bytes: 2000, us: 500 },
        ],
      },
      0,
    ),
    0,
  );
});

test("charges: per-block dispatch + wake-up per extra core + event loop; the front end's share of the cores, capped", () => {
  const c = chargesFor(CAL, [1000, 111_000]);
  assert.deepEqual(c.frontEndMs, [0.1, 1.3]);
  assert.equal(c.blockMs(1), 0.06);
  assert.equal(Number(c.blockMs(4).toFixed(6)), 0.09);
  assert.equal(Number(c.share([100, 100], 2).toFixed(6)), (100 * 100 + 100 * 1300) / 1e6 / 2);
  assert.equal(c.share([1e6, 1e6], 2), 0.9);
});

test('a calibration file is checked field by field; errors are typed and name the field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-cal-'));
  const good = join(dir, 'cal.json');
  writeFileSync(good, JSON.stringify(CAL));
  assert.deepEqual(readCalibration(good), CAL);
  const cases: [unknown, RegExp][] = [
    [{ ...CAL, format: 'x' }, /format/],
    [{ ...CAL, version: 2 }, /version/],
    [{ ...CAL, blockDispatchUs: -1 }, /blockDispatchUs/],
    [{ ...CAL, frontEnd: [] }, /frontEnd/],
    [
      {
        ...CAL,
        frontEnd: [
          { bytes: 10, us: 1 },
          { bytes: 5, us: 2 },
        ],
      },
      /frontEnd\[1\]\.bytes/,
    ],
    [{ ...CAL, machine: 3 }, /machine/],
    [[], /format/],
  ];
  for (const [v, field] of cases) {
    assert.throws(
      () => validateCalibration(v, 'f.json'),
      (e: { code?: string; message?: string }) => e.code === 'BAD_ARGUMENT' && field.test(e.message!),
    );
  }
  assert.throws(
    () => readCalibration(join(dir, 'none.json')),
    (e: { code?: string }) => e.code === 'BAD_ARGUMENT',
  );
  writeFileSync(join(dir, 'bad.json'), '{');
  assert.throws(
    () => readCalibration(join(dir, 'bad.json')),
    (e: { code?: string }) => e.code === 'BAD_ARGUMENT',
  );
});

const run = (policy: string, charges?: ReturnType<typeof chargesFor>) =>
  simulate({
    models: [
      { plan: handPlan('heavy', [{ us1: 3000 }, { us1: 3000 }, { us1: 3000 }], 2, 60), qps: 40 },
      { plan: handPlan('light', [{ us1: 500 }, { us1: 500 }], 2, 10), qps: 40 },
    ],
    cores: 2,
    policy: parsePolicy(policy),
    seed: 3,
    durationMs: 4000,
    warmupMs: 200,
    maxSimMs: 1e6,
    maxEvents: 1e7,
    interference: NO_INTERFERENCE,
    ...(charges ? { charges } : {}),
  });

for (const policy of ['fcfs', 'layerwise', 'veltair']) {
  test(`the simulator charges the calibration (${policy}): every model's mean simulated latency grows, by at least its front end`, () => {
    const plain = run(policy);
    const charged = run(policy, chargesFor(CAL, [1000, 111_000]));
    assert.equal(plain.stop, 'drained');
    assert.equal(charged.stop, 'drained');
    plain.metrics.models.forEach((m, i) => {
      const c = charged.metrics.models[i]!;
      assert.ok(c.meanMs > m.meanMs, `${m.model}: ${c.meanMs} > ${m.meanMs}`);
    });
    assert.ok(charged.metrics.models[1]!.meanMs >= plain.metrics.models[1]!.meanMs + 1.3 - 1e-9, 'light pays its 1.3 ms front end');
  });
}

test('a request timeline goes out as a parameter and comes back as where its time went', () => {
  const a = 1_000_000_000n;
  const text = timelineParameter(
    {
      arrivalNs: a,
      instanceNs: a + 100_000n,
      begunNs: a + 200_000n,
      blocks: [
        {
          decidedNs: a + 300_000n,
          kernelStartNs: Number(a) + 400_000,
          kernelEndNs: Number(a) + 2_400_000,
          resumedNs: a + 2_500_000n,
          cores: 2,
        },
        {
          decidedNs: a + 3_500_000n,
          kernelStartNs: Number(a) + 3_600_000,
          kernelEndNs: Number(a) + 4_600_000,
          resumedNs: a + 4_700_000n,
          cores: 1,
        },
      ],
    },
    a + 5_000_000n,
  );
  const t = parseTimeline(text)!;
  assert.deepEqual(t.blocks[0], [0.3, 0.4, 2.4, 2.5, 2]);
  const acc = accountTimeline(t);
  assert.equal(Number(acc.queueMs.toFixed(6)), 0.1 + 0.1 + 1.0);
  assert.equal(Number(acc.beginMs.toFixed(6)), 0.1);
  assert.equal(Number(acc.dispatchMs.toFixed(6)), 0.2);
  assert.equal(Number(acc.kernelMs.toFixed(6)), 3.0);
  assert.equal(Number(acc.returnMs.toFixed(6)), 0.2);
  assert.equal(Number(acc.finishMs.toFixed(6)), 0.3);
  assert.equal(acc.totalMs, 5);
  assert.equal(parseTimeline('nope'), null);
  assert.equal(parseTimeline(JSON.stringify({ instance: 0, begun: 0, answer: 1, blocks: [[1, 2]] })), null);
  assert.equal(parseTimeline(7), null);
});

test('fitting a calibration from answers: front end per tensor size, dispatch at the smallest team, wake-up slope, event loop per block', () => {
  const answer = (clientMs: number, blocks: [number, number, number, number, number][], schedulerUs: number) => ({
    clientMs,
    serverMs: null,
    accounting: null,
    schedulerUs,
    timeline: { instance: 0, begun: 0, blocks, answer: 2 },
  });
  const cal = fitCalibration(
    [
      {
        bytes: 500,
        answer: answer(
          2.5,
          [
            [0.1, 0.15, 1.0, 1.02, 1],
            [1.1, 1.19, 1.9, 1.92, 2],
          ],
          10,
        ),
      },
      { bytes: 500, answer: answer(2.7, [[0.1, 0.15, 1.0, 1.02, 1]], 4) },
      { bytes: 9000, answer: answer(3.0, [[0.1, 0.15, 1.0, 1.02, 1]], 6) },
    ],
    { machine: 'm', measured: 'd', command: 'c' },
  );
  assert.deepEqual(cal.frontEnd, [
    { bytes: 500, us: 600 },
    { bytes: 9000, us: 1000 },
  ]);
  assert.equal(cal.blockDispatchUs, 50);
  assert.equal(cal.wakeUpUsPerCore, 40);
  assert.equal(cal.eventLoopUsPerBlock, 20 + 5);
  assert.doesNotThrow(() => validateCalibration(cal, 'fit'));
  assert.throws(
    () =>
      fitCalibration([{ bytes: 1, answer: { clientMs: 1, schedulerUs: null, timeline: null } }], {
        machine: 'm',
        measured: 'd',
        command: 'c',
      }),
    /veltair_timeline/,
  );
});

test('simulate --calibration: tensor bytes from each bundle manifest; a model without a bundle gets the smallest point, and the label says so', async () => {
  const { bundleTensorBytes, simulateCharges } = await import('../src/cli/simulate-calibration.js');
  const dir = mkdtempSync(join(tmpdir(), 'veltair-cal-cli-'));
  const bundle = join(dir, 'net.bundle');
  mkdirSync(bundle);
  writeFileSync(
    join(bundle, 'manifest.json'),
    JSON.stringify({
      model: {
        inputs: [
          { name: 'x', dtype: 'float32', shape: [1, 3, 10, 10] },
          { name: 'ids', dtype: 'int64', shape: [1, 4] },
        ],
        outputs: [{ name: 'y', dtype: 'float32', shape: [1, 10] }],
      },
    }),
  );
  assert.equal(bundleTensorBytes(bundle), 1200 + 32 + 40);
  assert.equal(bundleTensorBytes(dir), null);
  const file = join(dir, 'cal.json');
  writeFileSync(file, JSON.stringify(CAL));
  const { charges, label } = simulateCharges(file, ['net', 'other'], [bundle, join(dir, 'other.profile.json')]);
  assert.equal(charges.frontEndMs[0], frontEndUs(CAL, 1272) / 1000);
  assert.equal(charges.frontEndMs[1], frontEndUs(CAL, 0) / 1000);
  assert.match(label, /other: tensor bytes unknown/);
  assert.match(label, /measured on fixture/);
});
