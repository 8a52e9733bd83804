import test from 'node:test';
import assert from 'node:assert/strict';
import { parsePolicy } from '../src/schedule/policies.js';
import { simulate, type EventView } from '../src/simulate/engine.js';
import { calibrateInterference, NO_INTERFERENCE } from '../src/simulate/interference.js';
import { runExperiment } from '../src/simulate/experiment.js';
import { handPlan, handProfile, JAGGED, JAGGED_QOS_MS } from './schedule-fixture.js';

const models = () => [
  {
    plan: handPlan(
      'jagged',
      JAGGED.map((l) => ({ ...l, noisy: 1.2 })),
      16,
      JAGGED_QOS_MS * 1.3,
      20,
    ),
    qps: 1200,
  },
  { plan: handPlan('flat', [{ us1: 3000, noisy: 1.3 }, { us1: 2000, maxUseful: 4, noisy: 1.1 }, { us1: 3000 }], 16, 3, 20), qps: 800 },
];
const interference = calibrateInterference(
  handProfile('x', JAGGED, 16).levels,
  'test',
  { l3Bytes: 2 ** 25 },
  { gbps: 20, l3Bytes: 2 ** 25 },
);

function checkNoDoubleBooking(v: EventView): void {
  const seen = new Set<number>();
  for (const r of v.running) {
    for (const c of r.cores) {
      assert.ok(!seen.has(c), `core ${c} granted twice at t=${v.now}`);
      seen.add(c);
      assert.equal(v.scheduler.pool.ownerOf(c), r.request, `core ${c} owned by its block's request`);
    }
  }
  assert.equal(seen.size, v.scheduler.pool.size - v.scheduler.pool.free, 'busy cores = cores of running blocks');
}

for (const [policy, onConflict] of [
  ['veltair', 'shrink'],
  ['veltair', 'wait'],
  ['veltair-partition', 'shrink'],
  ['fcfs', 'wait'],
  ['layerwise', 'shrink'],
  ['prema', 'wait'],
  ['static:3', 'wait'],
] as const) {
  test(`no core is double-booked at any event of a long seeded run (${policy}, ${onConflict})`, () => {
    let events = 0;
    const r = simulate({
      models: models(),
      cores: 16,
      policy: parsePolicy(policy),
      seed: 7,
      durationMs: 4000,
      warmupMs: 200,
      maxSimMs: 1e6,
      maxEvents: 1e7,
      interference,
      onConflict,
      onEvent: (v) => {
        events++;
        checkNoDoubleBooking(v);
      },
    });
    assert.equal(r.stop, 'drained');
    assert.ok(events > 10_000, `a long run: ${events} events`);
    assert.equal(events, r.events);
    assert.equal(r.metrics.scheduler.completed, r.metrics.little.arrivals, 'every request left');
  });
}

test("Little's law holds within 3% on a long run: mean requests in system = arrival rate × mean time in system", () => {
  for (const policy of ['veltair', 'fcfs']) {
    const m = models();
    const r = simulate({
      models: m,
      cores: 16,
      policy: parsePolicy(policy),
      seed: 3,
      durationMs: 60_000,
      warmupMs: 0,
      maxSimMs: 1e7,
      maxEvents: 1e8,
      interference,
    });
    assert.equal(r.stop, 'drained');
    const offeredPerMs = m.reduce((s, x) => s + x.qps, 0) / 1000;
    const L = (r.metrics.little.meanInSystem * r.endMs) / 60_000; // ∫N dt over the arrival period's length
    const lambdaW = offeredPerMs * r.metrics.little.meanSojournMs;
    assert.ok(Math.abs(L / lambdaW - 1) < 0.03, `${policy}: L ${L.toFixed(4)} vs λW ${lambdaW.toFixed(4)}`);
  }
});

test('the same seed gives the same result byte for byte; another seed does not', () => {
  const run = (seed: number) =>
    JSON.stringify(
      runExperiment({
        models: models().map((x) => ({ plan: x.plan, weight: 0.5 })),
        cores: 16,
        policies: [parsePolicy('fcfs'), parsePolicy('veltair')],
        seed,
        durationMs: 2000,
        warmupMs: 200,
        maxSimMs: 1e6,
        maxEvents: 1e7,
        interference,
        loads: { kind: 'load', values: [0.3, 0.6] },
      }),
    );
  const a = run(11),
    b = run(11),
    c = run(12);
  assert.equal(a, b);
  assert.notEqual(a, c);
});

test('a run says which bound it hit', () => {
  const base = {
    models: models(),
    cores: 16,
    policy: parsePolicy('veltair'),
    seed: 1,
    durationMs: 5000,
    warmupMs: 0,
    interference: NO_INTERFERENCE,
  };
  const byEvents = simulate({ ...base, maxSimMs: 1e9, maxEvents: 500 });
  assert.equal(byEvents.stop, 'event-bound');
  assert.equal(byEvents.events, 500);
  const byTime = simulate({ ...base, maxSimMs: 1000, maxEvents: 1e9 });
  assert.equal(byTime.stop, 'time-bound');
  assert.equal(byTime.endMs, 1000);
  // Overload: arrivals far beyond capacity, stopped as soon as a model is past its 1% late allowance.
  const over = simulate({
    ...base,
    models: models().map((m) => ({ ...m, qps: m.qps * 20 })),
    maxSimMs: 1e9,
    maxEvents: 1e9,
    stopWhenFailed: true,
  });
  assert.equal(over.stop, 'failed-early');
});

test('co-running blocks slow each other down through the calibrated interference, and only when calibrated', () => {
  const run = (i: typeof interference) =>
    simulate({
      models: models(),
      cores: 16,
      policy: parsePolicy('fcfs'),
      seed: 5,
      durationMs: 3000,
      warmupMs: 0,
      maxSimMs: 1e6,
      maxEvents: 1e7,
      interference: i,
    });
  const quiet = run(NO_INTERFERENCE),
    noisy = run(interference);
  assert.ok(noisy.metrics.meanMs > quiet.metrics.meanMs, `${noisy.metrics.meanMs} > ${quiet.metrics.meanMs}`);
  assert.equal(interference.levelFor(0, 0), 0);
  assert.ok(interference.levelFor(1e6, 1e12) === 4, 'capped at the heaviest measured level');
  assert.ok(interference.levelFor(10, 2 ** 25) > interference.levelFor(5, 2 ** 24));
});
