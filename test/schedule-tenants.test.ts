/**
 * Heterogeneous tenants: a heavy model with a loose QoS beside a light one with a tight QoS. The
 * adaptive policies cut the heavy model's blocks to what the light one can wait, and serve the
 * nearest deadline first; FCFS does neither (its light request waits behind a whole inference).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { blockCaps, formBlock, waitBudgetMs } from '../src/schedule/blocks.js';
import { parsePolicy } from '../src/schedule/policies.js';
import { Scheduler, type Decision } from '../src/schedule/scheduler.js';
import { handPlan } from './schedule-fixture.js';

// Heavy: 50 layers of 2 ms on one core (100 ms), QoS 300 ms. Light: 4 layers of 1 ms (4 ms), QoS 12 ms.
// The light model's wait budget is 2 ms: heavy blocks of one layer.
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

test('a plan knows its planned latency; its wait budget is half of what its QoS leaves after two runs of its own', () => {
  const h = heavy(),
    l = light();
  assert.equal(h.plannedMs, 100, 'every heavy layer fits its share on one core');
  assert.equal(waitBudgetMs(h), 50, '(300 − 2 × 100) / 2');
  assert.equal(l.plannedMs, 4);
  assert.equal(waitBudgetMs(l), 2, '(12 − 2 × 4) / 2');
});

test("each model's block cap is the tightest other model's wait budget; a model alone has none", () => {
  assert.deepEqual(blockCaps([heavy(), light()]), [2, 50]);
  assert.deepEqual(blockCaps([heavy()]), [Infinity]);
});

test('formBlock stops at the cap (one-core time), and always takes its first unit', () => {
  const h = heavy();
  assert.deepEqual(formBlock(h, 0, 0), { first: 0, last: 49 }, 'no spikes and no cap: the whole model');
  assert.deepEqual(formBlock(h, 0, 0, 25), { first: 0, last: 11 }, '12 × 2 ms fit in 25 ms, 13 do not');
  assert.deepEqual(formBlock(h, 3, 0, 1), { first: 3, last: 3 }, 'a unit longer than the cap is a block of its own');
  assert.deepEqual(formBlock(h, 46, 0, 25), { first: 46, last: 49 }, 'the cap never runs past the model');
});

test('a model whose every unit needs the same cores has no spikes, whatever the float sum of its average says', () => {
  // Uneven layers, all fitting their shares on one core: the time-weighted average is 1 up to rounding.
  const p = handPlan(
    'uniform',
    Array.from({ length: 53 }, (_, i) => ({ us1: 300 + ((i * 7919) % 1000) * 1.37 })),
    2,
    200,
  );
  assert.equal(p.peakRequirement, 1);
  assert.notEqual(p.averageRequirement, 1, 'the fixture is one whose average rounds below 1');
  assert.deepEqual(formBlock(p, 0, 0), { first: 0, last: 52 }, 'one block under full load (threshold 0), not one per layer');
});

/** Drive the scheduler in simulated time: heavy requests 0 and 1 at t=0, a light one at t=1 ms. When does the light one start? */
function lightStart(policy: string): { start: number; decisions: Decision[] } {
  const s = new Scheduler({ policy: parsePolicy(policy), models: [heavy(), light()], cores: 2 });
  const running = new Map<number, number>();
  const all: Decision[] = [];
  const take = (ds: Decision[], now: number) => {
    for (const d of ds) {
      all.push(d);
      running.set(d.request, now + d.expectedMs);
    }
  };
  take(s.arrive({ id: 0, model: 0, arrivalMs: 0 }, 0), 0);
  take(s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0), 0);
  take(s.arrive({ id: 2, model: 1, arrivalMs: 1 }, 1), 1);
  let start = all.find((d) => d.request === 2) ? 1 : -1;
  while (running.size > 0 && start < 0) {
    const [id, now] = [...running.entries()].sort((a, b) => a[1] - b[1])[0]!;
    running.delete(id);
    const before = all.length;
    take(s.blockFinished(id, now).decisions, now);
    if (all.slice(before).some((d) => d.request === 2)) start = now;
  }
  return { start, decisions: all };
}

test('veltair: with both cores held by heavy requests, the light request starts at the first block boundary', () => {
  const { start, decisions } = lightStart('veltair');
  assert.ok(start > 0 && start <= 1 + 2, `the light request started at ${start} ms: within its 2 ms wait budget`);
  const heavyBlocks = decisions.filter((d) => d.model === 0);
  assert.ok(
    heavyBlocks.every((d) => d.last === d.first),
    "heavy blocks are 1 unit (2 ms on one core), the light model's wait budget",
  );
});

test('fcfs: the light request waits for a whole heavy inference', () => {
  const { start } = lightStart('fcfs');
  assert.ok(start >= 100, `the light request started at ${start} ms, behind a 100 ms inference`);
});

test('deadline order: among waiting requests the nearest deadline goes first, not the oldest', () => {
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: [heavy(), light()], cores: 2 });
  const first = [...s.arrive({ id: 0, model: 0, arrivalMs: 0 }, 0), ...s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0)];
  assert.equal(first.length, 2, 'two heavy blocks, one core each');
  // Queued while both cores are held: a heavy request (deadline 302) before a light one (deadline 14).
  assert.deepEqual(s.arrive({ id: 3, model: 0, arrivalMs: 2 }, 2), []);
  assert.deepEqual(s.arrive({ id: 4, model: 1, arrivalMs: 3 }, 3), []);
  const next = s.blockFinished(0, first[0]!.expectedMs).decisions;
  assert.equal(next[0]!.request, 4, 'the light request, arrived last, goes first');
  const f = new Scheduler({ policy: parsePolicy('layerwise'), models: [heavy(), light()], cores: 2 });
  const ff = [...f.arrive({ id: 0, model: 0, arrivalMs: 0 }, 0), ...f.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0)];
  f.arrive({ id: 3, model: 0, arrivalMs: 2 }, 2);
  f.arrive({ id: 4, model: 1, arrivalMs: 3 }, 3);
  const fn = f.blockFinished(0, ff[0]!.expectedMs).decisions;
  assert.equal(fn[0]!.request, 0, 'layerwise keeps arrival order: the in-flight heavy request 0 continues first');
});

test("blocks that cannot be cut to the cap hold at most the cores beyond the other tenant's reserve; the light request finds a core", () => {
  // Long: 5 layers of 10 ms on one core, beside the light model's 2 ms budget: no block can be cut to it.
  const long = handPlan(
    'long',
    Array.from({ length: 5 }, () => ({ us1: 10_000, maxUseful: 1 })),
    2,
    300,
  );
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: [long, light()], cores: 2 });
  const a = s.arrive({ id: 0, model: 0, arrivalMs: 0 }, 0);
  assert.equal(a.length, 1, 'the first long request runs');
  assert.deepEqual(
    s.arrive({ id: 1, model: 0, arrivalMs: 0.5 }, 0.5),
    [],
    'the second would take the last core with a 10 ms layer: it waits',
  );
  const l = s.arrive({ id: 2, model: 1, arrivalMs: 1 }, 1);
  assert.equal(l.length, 1, 'the light request starts at once on the core left free');
  assert.equal(l[0]!.request, 2);
  // When the first long block ends, the waiting long request may run (one long block at a time).
  const next = s.blockFinished(0, a[0]!.expectedMs).decisions;
  assert.equal(next.filter((d) => d.model === 0).length, 1, 'one long block runs again, never two at once');
  // fcfs has no such rule: the second request takes the last core, and the light one waits.
  const f = new Scheduler({ policy: parsePolicy('fcfs'), models: [long, light()], cores: 2 });
  f.arrive({ id: 0, model: 0, arrivalMs: 0 }, 0);
  assert.equal(f.arrive({ id: 1, model: 0, arrivalMs: 0.5 }, 0.5).length, 1);
  assert.deepEqual(f.arrive({ id: 2, model: 1, arrivalMs: 1 }, 1), []);
});

test('a model alone is never held back: its long blocks use every core', () => {
  const long = handPlan(
    'long',
    Array.from({ length: 5 }, () => ({ us1: 10_000, maxUseful: 1 })),
    2,
    300,
  );
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: [long], cores: 2 });
  assert.equal(s.arrive({ id: 0, model: 0, arrivalMs: 0 }, 0).length, 1);
  assert.equal(s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0).length, 1, 'both cores busy');
});
