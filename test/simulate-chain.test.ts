/**
 * The simulator models chained dispatch as the server runs it: a request that nothing interrupts
 * is one run (one hand-off charge), and a chain asked to stop ends at a layer boundary past its
 * committed block, the scheduler deciding the rest again.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { parsePolicy } from '../src/schedule/policies.js';
import { simulate } from '../src/simulate/engine.js';
import { NO_INTERFERENCE } from '../src/simulate/interference.js';
import type { Charges } from '../src/simulate/calibration.js';
import { handPlan } from './schedule-fixture.js';

// Heavy: 50 layers of 2 ms on one core; light: 4 layers of 1 ms with a tight QoS (one-layer heavy blocks).
const heavy = () =>
  handPlan(
    'heavy',
    Array.from({ length: 50 }, () => ({ us1: 2_000 })),
    2,
    300,
  );
const light = () =>
  handPlan(
    'light',
    Array.from({ length: 4 }, () => ({ us1: 1_000 })),
    2,
    12,
  );

/** 0.1 ms per run: what a hand-off costs (a made-up test figure, not a measurement). */
const handOff: Charges = { frontEndMs: [0, 0], blockMs: () => 0.1, share: () => 0 };

const run = (chain: boolean, qps: readonly [number, number], seed = 3) =>
  simulate({
    models: [
      { plan: heavy(), qps: qps[0] },
      { plan: light(), qps: qps[1] },
    ],
    cores: 1,
    policy: parsePolicy('veltair'),
    seed,
    durationMs: 20_000,
    warmupMs: 500,
    maxSimMs: 1e7,
    maxEvents: 1e7,
    interference: NO_INTERFERENCE,
    charges: handOff,
    chain,
  });

test('alone, a chained request is one run: one hand-off instead of one per block', () => {
  const chained = run(true, [2, 0]);
  const plain = run(false, [2, 0]);
  assert.equal(chained.stop, 'drained');
  assert.equal(chained.metrics.models[0]!.blocksPerRequest, 1, 'one run per request');
  assert.ok(plain.metrics.models[0]!.blocksPerRequest > 1, `block by block: ${plain.metrics.models[0]!.blocksPerRequest} per request`);
  assert.ok(
    chained.metrics.models[0]!.meanMs < plain.metrics.models[0]!.meanMs,
    'the hand-offs saved shorten the simulated latency (every other cost being equal)',
  );
});

test('a light request arriving during a heavy chain stops it at a layer boundary; every request completes', () => {
  const r = run(true, [2, 40]);
  assert.equal(r.stop, 'drained');
  assert.ok(r.metrics.scheduler.chainsStopped > 0, 'chains were preempted');
  assert.equal(r.metrics.scheduler.completed, r.metrics.little.arrivals, 'every request left');
  assert.ok(r.metrics.models[0]!.blocksPerRequest > 1, 'a preempted heavy request runs again from where it stopped');
  const plain = run(false, [2, 40]);
  assert.equal(plain.metrics.scheduler.chainsStopped, 0);
  assert.ok(
    r.metrics.models[1]!.p99Ms <= plain.metrics.models[1]!.p99Ms + 1e-9,
    `the light model waits no longer than for a block: p99 ${r.metrics.models[1]!.p99Ms} vs ${plain.metrics.models[1]!.p99Ms} ms`,
  );
});
