/**
 * Chained decisions: a block decided while nobody waits carries the request's next blocks on the
 * same cores (chainLast); a request left waiting that is tighter, or of another model, asks the
 * chain to stop; the scheduler then decides again from the unit where the chain stopped.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { parsePolicy } from '../src/schedule/policies.js';
import { Scheduler } from '../src/schedule/scheduler.js';
import { handPlan, JAGGED, JAGGED_QOS_MS } from './schedule-fixture.js';

// Heavy: 50 layers of 2 ms on one core, QoS 300 ms. Light: 4 layers of 1 ms, QoS 12 ms: its wait
// budget (2 ms) cuts heavy's adaptive blocks to one layer each.
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

test('alone, a request is decided as its committed block plus a chain to its end on the same cores', () => {
  const plain = new Scheduler({ policy: parsePolicy('veltair'), models: [heavy(), light()], cores: 1 });
  const [p] = plain.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.equal(p!.chainLast, p!.last, 'without chaining a decision is one block');
  assert.equal(p!.chainExpectedMs, p!.expectedMs);

  const s = new Scheduler({ policy: parsePolicy('veltair'), models: [heavy(), light()], cores: 1, chain: true });
  const [d] = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.deepEqual([d!.first, d!.last], [p!.first, p!.last], 'the committed block is what the unchained scheduler decides');
  assert.equal(d!.last, 0, "heavy's blocks are one layer (the light model's wait budget)");
  assert.equal(d!.chainLast, 49, 'nobody waits: the chain runs to the end');
  assert.equal(d!.versions.length, 50, 'a version for every chained unit');
  assert.ok(Math.abs(d!.chainExpectedMs - 100) < 1e-9, `50 layers of 2 ms on one core, got ${d!.chainExpectedMs}`);
  assert.deepEqual(s.takePreemptions(), [], 'nothing to stop');
  const done = s.blockFinished(1, 100);
  assert.equal(done.completed, true, 'a chain that ran through completes its request: one hand-off');
  assert.deepEqual(s.stats.blocks, 1);
  assert.equal(s.pool.free, 1, 'its core is back');
});

test('a tighter request of another model stops the chain; the scheduler decides again from the unit it stopped before', () => {
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: [heavy(), light()], cores: 1, chain: true });
  const [h] = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.equal(h!.chainLast, 49);
  assert.deepEqual(s.arrive({ id: 2, model: 1, arrivalMs: 5 }, 5), [], 'the only core is held: the light request waits');
  assert.deepEqual(s.takePreemptions(), [1], 'the heavy chain is asked to stop');
  assert.deepEqual(s.takePreemptions(), [], 'once');
  // The worker stopped before unit 3 (after the committed block and two chained units).
  const after = s.blockFinished(1, 6, 3);
  assert.equal(after.completed, false);
  assert.equal(after.decisions.length, 1);
  const l = after.decisions[0]!;
  assert.equal(l.request, 2, 'the light request runs first');
  assert.equal(l.chainLast, l.last, 'heavy waits: no chain for the light request');
  assert.equal(s.stats.chainsStopped, 1);
  const resumed = s.blockFinished(2, 10);
  assert.equal(resumed.completed, true);
  const next = resumed.decisions[0]!;
  assert.deepEqual([next.request, next.first, next.chainLast], [1, 3, 49], 'heavy resumes at unit 3, chained to its end');
  assert.equal(s.blockFinished(1, 104).completed, true);
  assert.equal(s.pool.free, 1);
  assert.equal(s.inSystem, 0);
});

test('a younger request of the same model does not stop a chain under arrival order; a stop outside the chain is refused', () => {
  const s = new Scheduler({ policy: parsePolicy('layerwise'), models: [heavy()], cores: 1, chain: true });
  const [d] = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.deepEqual([d!.first, d!.last, d!.chainLast], [0, 0, 49], 'layer-wise blocks chain too');
  s.arrive({ id: 2, model: 0, arrivalMs: 1 }, 1);
  assert.deepEqual(s.takePreemptions(), [], 'the waiting request is neither tighter nor of another model');
  assert.throws(() => s.blockFinished(1, 2, 0), /outside its chain/, 'a chain never stops inside its committed block');
  assert.throws(() => s.blockFinished(1, 2, 51), /outside its chain/);
});

test('a chain ends where the next block would need more cores than it holds', () => {
  // JAGGED: layers need 2 cores, layer 3 (the spike) 6, on 8 cores.
  const s = new Scheduler({
    policy: parsePolicy('layerwise'),
    models: [handPlan('jagged', JAGGED, 8, JAGGED_QOS_MS)],
    cores: 8,
    chain: true,
  });
  const [d] = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.deepEqual([d!.first, d!.last, d!.chainLast, d!.cores.length], [0, 0, 2, 2], 'layers 1 and 2 chain on 2 cores; layer 3 needs 6');
  const next = s.blockFinished(1, 1.5).decisions[0]!;
  assert.deepEqual([next.first, next.cores.length], [3, 6], 'the spike is decided afresh, on more cores');
  assert.equal(next.chainLast, 7, 'the cheap layers after it fit on the 6 cores it holds');
});

test("partitioned, a chain keeps its own cores: another model's request waits on its own, and stops nothing", () => {
  const s = new Scheduler({ policy: parsePolicy('veltair-partition'), models: [heavy(), heavy()], cores: 2, chain: true });
  assert.deepEqual(s.spatial.partition?.cores, [1, 1]);
  const [a] = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  const [b] = s.arrive({ id: 2, model: 1, arrivalMs: 1 }, 1);
  assert.deepEqual([a!.chainLast, b!.chainLast], [49, 49], 'each runs to its end on its own core');
  assert.deepEqual(s.arrive({ id: 3, model: 1, arrivalMs: 2 }, 2), [], "model 1's second request waits for model 1's core");
  assert.deepEqual(s.takePreemptions(), [], "it is not tighter than model 1's chain, and model 0's core is not its own");
});
