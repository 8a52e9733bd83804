import test from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../src/random.js';
import { DEFAULT_CHOICE, ModeChooser } from '../src/schedule/mode-choice.js';
import { compareModes } from '../src/schedule/partition.js';
import { parsePolicy } from '../src/schedule/policies.js';
import type { ModelPlan } from '../src/schedule/requirement.js';
import { Scheduler, type Decision } from '../src/schedule/scheduler.js';
import { simulate, type EventView } from '../src/simulate/engine.js';
import { NO_INTERFERENCE } from '../src/simulate/interference.js';
import { handPlan, type HandLayer } from './schedule-fixture.js';

const layers = (n: number, us1: number, serialFraction: number): HandLayer[] =>
  Array.from({ length: n }, () => ({ us1, serialUs: us1 * serialFraction }));

/**
 * Like het2: an encoder of long layers (6 ms each on one core) and a short convnet (2 ms), both
 * scaling poorly (a second core buys 1.25×); the convnet's QoS (4 ms) leaves too little to wait
 * behind even one encoder layer, but enough to wait behind one of its own requests.
 */
const het2 = (): ModelPlan[] => [handPlan('encoder', layers(4, 6000, 0.6), 2, 200), handPlan('convnet', layers(8, 250, 0.6), 2, 4)];
/** Like het1: a heavy model that needs both cores for its QoS and scales almost perfectly, and a light one. */
const het1 = (): ModelPlan[] => [handPlan('heavy', layers(16, 1500, 0.02), 2, 20), handPlan('light', layers(6, 300, 0.3), 2, 8)];

const throughputPerCore = (p: ModelPlan, c: number) => {
  const U = p.table.units.length;
  return 1 / (c * p.prefixMs[0]![c * (U + 1) + U]!);
};

/**
 * Drive a scheduler through arrivals (time order), finishing every block after its expected time,
 * and check every decision against the pool and, under a partition, the model's own cores.
 */
function drive(s: Scheduler, arrivals: readonly { model: number; atMs: number }[], check?: (d: Decision) => void): Decision[] {
  const running = new Map<number, { endMs: number; cores: readonly number[] }>();
  const all: Decision[] = [];
  const held = new Set<number>();
  const take = (ds: readonly Decision[], now: number) => {
    for (const d of ds) {
      for (const c of d.cores) {
        assert.ok(!held.has(c), `core ${c} granted twice`);
        held.add(c);
      }
      check?.(d);
      running.set(d.request, { endMs: now + d.expectedMs, cores: d.cores });
      all.push(d);
    }
  };
  const finishUntil = (t: number) => {
    for (;;) {
      let next: number | undefined;
      for (const [id, r] of running) if (r.endMs <= t && (next === undefined || r.endMs < running.get(next)!.endMs)) next = id;
      if (next === undefined) return;
      const r = running.get(next)!;
      running.delete(next);
      for (const c of r.cores) held.delete(c);
      take(s.blockFinished(next, r.endMs).decisions, r.endMs);
    }
  };
  arrivals.forEach((a, id) => {
    finishUntil(a.atMs);
    take(s.arrive({ id, model: a.model, arrivalMs: a.atMs }, a.atMs), a.atMs);
  });
  finishUntil(Infinity);
  assert.equal(s.inSystem, 0, 'every request completed');
  return all;
}

/** Poisson arrivals at `qps` in total, model m with probability shares[m]. */
function arrivalsAt(qps: number, shares: readonly number[], count: number, seed: number): { model: number; atMs: number }[] {
  const u = mulberry32(seed);
  let t = 0;
  return Array.from({ length: count }, () => {
    t += -Math.log(1 - u()) * (1000 / qps);
    let x = u(),
      model = 0;
    while (model < shares.length - 1 && x >= shares[model]!) x -= shares[model++]!;
    return { model, atMs: t };
  });
}

test('het2-like pair (poor scaling, a tight convnet): the chooser predicts partition 1+1 beyond the switching margin', () => {
  const plans = het2();
  for (const p of plans)
    assert.ok(throughputPerCore(p, 1) > throughputPerCore(p, 2), `${p.table.name}: most throughput per core at 1 core`);
  const cmp = compareModes(plans, [1, 1], 2);
  assert.equal(cmp.search, 'exhaustive');
  assert.deepEqual(cmp.partition?.cores, [1, 1]);
  assert.deepEqual(cmp.partition?.first, [0, 1]);
  assert.ok(cmp.partition!.capacityQps > cmp.timeSharedQps * (1 + DEFAULT_CHOICE.margin), JSON.stringify(cmp));
});

test('veltair starts time-shared and switches to 1+1 on a het2-like pair once it has seen enough arrivals; then blocks stay on their own core', () => {
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: het2(), cores: 2 });
  assert.equal(s.spatial.mode, 'time-shared');
  let switchedAt = -1;
  const arrivals = arrivalsAt(20, [0.5, 0.5], 600, 11);
  drive(s, arrivals, (d) => {
    if (s.spatial.mode === 'partitioned' && switchedAt < 0) switchedAt = d.request;
    // Once partitioned, a new request's blocks run on its model's core only.
    if (switchedAt >= 0 && d.request > switchedAt) assert.deepEqual(d.cores, [d.model], `request ${d.request} of model ${d.model}`);
  });
  assert.equal(s.spatial.mode, 'partitioned');
  assert.deepEqual(s.spatial.partition?.cores, [1, 1]);
  // Request ids count from 0: the first decision comes with the minArrivals-th arrival at the earliest.
  assert.ok(switchedAt >= DEFAULT_CHOICE.minArrivals - 1, `no switch before the first decision (at request ${switchedAt})`);
  assert.equal(s.spatial.switches, 1);
  assert.equal(s.stats.spatial, 'partitioned 1+1');
  assert.ok(s.spatial.ratesPerSec.every((r) => r > 0));
});

test('het1-like pair (a heavy model that scales, a light tight one): time sharing is predicted better and veltair keeps it', () => {
  const plans = het1();
  const cmp = compareModes(plans, [1, 1], 2);
  assert.ok(cmp.timeSharedQps > cmp.partition!.capacityQps, JSON.stringify(cmp));
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: plans, cores: 2 });
  drive(s, arrivalsAt(20, [0.5, 0.5], 600, 12));
  assert.ok(s.spatial.decisions >= 3, `decided ${s.spatial.decisions} times`);
  assert.equal(s.spatial.mode, 'time-shared');
  assert.equal(s.spatial.switches, 0);
  assert.equal(s.stats.spatial, 'time-shared');
});

test('veltair-partition: over a long random sequence no block of a model leaves its own cores, and no core is granted twice', () => {
  // Three models on four cores: the encoder and convnet of het2 and a third, moderately scaling one.
  const four = [
    handPlan('encoder', layers(12, 1000, 0.6), 4, 45),
    handPlan('convnet', layers(8, 500, 0.6), 4, 6),
    handPlan('third', layers(5, 800, 0.2), 4, 20),
  ];
  const s = new Scheduler({ policy: parsePolicy('veltair-partition'), models: four, cores: 4, loadShares: [1, 2, 1] });
  const part = s.spatial.partition;
  assert.ok(part, 'a partition is in force from the start');
  assert.equal(
    part.cores.reduce((a, b) => a + b, 0),
    4,
  );
  const u = mulberry32(5);
  const running = new Map<number, Decision>();
  const held = new Set<number>();
  let now = 0,
    nextId = 0,
    decisions = 0;
  const take = (ds: readonly Decision[]) => {
    for (const d of ds) {
      const first = part.first[d.model]!;
      for (const c of d.cores) {
        assert.ok(
          c >= first && c < first + part.cores[d.model]!,
          `model ${d.model} given core ${c}, outside its ${first}+${part.cores[d.model]}`,
        );
        assert.ok(!held.has(c), `core ${c} granted twice`);
        held.add(c);
      }
      running.set(d.request, d);
      decisions++;
    }
  };
  for (let step = 0; step < 20_000; step++) {
    now += u() * 2;
    if (running.size === 0 || u() < 0.45) {
      const x = u();
      take(s.arrive({ id: nextId++, model: x < 0.25 ? 0 : x < 0.75 ? 1 : 2, arrivalMs: now }, now));
    } else {
      // Finish a random running block, whatever its expected time: the driver's clock is its own.
      const ids = [...running.keys()];
      const id = ids[Math.floor(u() * ids.length)]!;
      for (const c of running.get(id)!.cores) held.delete(c);
      running.delete(id);
      take(s.blockFinished(id, now).decisions);
    }
    if (u() < 0.02 && nextId > 0) s.cancel(Math.floor(u() * nextId));
    assert.equal(held.size, 4 - s.pool.free);
  }
  assert.ok(decisions > 5_000, `${decisions} decisions`);
  assert.equal(s.spatial.switches, 0, 'a static partition never changes');
});

test('hysteresis: a mix oscillating around the break-even does not switch at every decision', () => {
  const plans = het2();
  // Around this pair's break-even: an encoder share of 0.28 favours time sharing, 0.32 the partition, both within the margin.
  const ratio = (share: number) => {
    const c = compareModes(plans, [share, 1 - share], 2);
    return c.partition!.capacityQps / c.timeSharedQps;
  };
  const margin = 1 + DEFAULT_CHOICE.margin;
  assert.ok(ratio(0.28) < 1 && ratio(0.28) > 1 / margin, `ratio at 0.28: ${ratio(0.28)}`);
  assert.ok(ratio(0.32) > 1 && ratio(0.32) < margin, `ratio at 0.32: ${ratio(0.32)}`);
  const run = (margin: number) => {
    const chooser = new ModeChooser(plans, 2, { intervalMs: 1000, minArrivals: 50, margin });
    let t = 0;
    for (let window = 0; window < 40; window++) {
      const share = window % 2 === 0 ? 0.28 : 0.32;
      // 100 arrivals spread over one second, the encoder's spread evenly among them.
      for (let i = 0; i < 100; i++) {
        t += 10;
        chooser.observe(Math.floor((i + 1) * share) > Math.floor(i * share) ? 0 : 1, t);
      }
    }
    return chooser.state;
  };
  const kept = run(DEFAULT_CHOICE.margin);
  assert.ok(kept.decisions >= 35, `${kept.decisions} decisions`);
  assert.ok(kept.switches <= 1, `${kept.switches} switches over ${kept.decisions} decisions`);
  const flapping = run(0);
  assert.ok(flapping.switches > 10, `without a margin it flaps: ${flapping.switches} switches`);
});

const simulateHet2 = (policy: string, qpsPerModel: number, onEvent?: (v: EventView) => void) =>
  simulate({
    models: het2().map((plan) => ({ plan, qps: qpsPerModel })),
    cores: 2,
    policy: parsePolicy(policy),
    seed: 3,
    durationMs: 6000,
    warmupMs: 200,
    maxSimMs: 1e6,
    maxEvents: 1e6,
    interference: NO_INTERFERENCE,
    ...(onEvent ? { onEvent } : {}),
  });

test('the simulator runs veltair-partition on a small mix, completes every request and names the partition', () => {
  const r = simulateHet2('veltair-partition', 15, (v) => {
    for (const b of v.running) assert.deepEqual(b.cores, [b.model], `request ${b.request} of model ${b.model} on its own core`);
  });
  assert.equal(r.stop, 'drained');
  assert.ok(r.metrics.little.arrivals > 100);
  assert.equal(r.metrics.scheduler.completed, r.metrics.little.arrivals, 'every request left');
  assert.equal(r.metrics.scheduler.spatial, 'partitioned 1+1');
});

test('in the simulator the predicted winner wins: on the het2-like pair the partition keeps the QoS where time sharing does not', () => {
  // 40 QPS in all: above what time sharing holds on this pair, below what the partition holds (simulated find-max: about 26 and 65).
  const shared = simulateHet2('veltair-sched', 20);
  const partitioned = simulateHet2('veltair-partition', 20);
  const chosen = simulateHet2('veltair', 20);
  assert.ok(partitioned.metrics.satisfaction >= 0.99, `partitioned: ${partitioned.metrics.satisfaction}`);
  assert.ok(shared.metrics.satisfaction < partitioned.metrics.satisfaction, `time-shared: ${shared.metrics.satisfaction}`);
  assert.equal(chosen.metrics.scheduler.spatial, 'partitioned 1+1');
  assert.ok(chosen.metrics.satisfaction > shared.metrics.satisfaction);
});

test('many cores: the split is searched greedily, covers every core once in contiguous ranges, one core at least each', () => {
  const plans = [
    handPlan('a', layers(6, 4000, 0.1), 64, 20),
    handPlan('b', layers(6, 2000, 0.3), 64, 15),
    handPlan('c', layers(4, 1000, 0.5), 64, 10),
    handPlan('d', layers(8, 500, 0.05), 64, 5),
  ];
  const cmp = compareModes(plans, [1, 2, 3, 4], 64);
  assert.equal(cmp.search, 'greedy');
  const part = cmp.partition!;
  assert.equal(
    part.cores.reduce((a, b) => a + b, 0),
    64,
  );
  part.cores.forEach((c, m) => {
    assert.ok(c >= 1);
    assert.equal(part.first[m], m === 0 ? 0 : part.first[m - 1]! + part.cores[m - 1]!);
  });
  assert.ok(part.capacityQps > 0);
});

test('more models than cores: no partition is offered, and veltair-partition time-shares', () => {
  const plans = [...het2(), handPlan('third', layers(3, 500, 0.5), 2, 10)];
  assert.equal(compareModes(plans, [1, 1, 1], 2).partition, null);
  const s = new Scheduler({ policy: parsePolicy('veltair-partition'), models: plans, cores: 2 });
  assert.equal(s.spatial.mode, 'time-shared');
  drive(s, arrivalsAt(10, [0.4, 0.3, 0.3], 60, 9));
});
