import test from 'node:test';
import assert from 'node:assert/strict';
import { CorePool } from '../src/schedule/core-pool.js';
import { parsePolicy, parsePolicyList } from '../src/schedule/policies.js';
import { Scheduler, type Decision } from '../src/schedule/scheduler.js';
import { handPlan, JAGGED, JAGGED_QOS_MS } from './schedule-fixture.js';
import { isVeltairError } from '../src/errors.js';

const jagged = () => handPlan('jagged', JAGGED, 16, JAGGED_QOS_MS);

/** Run one request alone to completion, finishing each block as soon as it is decided. */
function runAlone(policy: string, cores = 16): Decision[] {
  const s = new Scheduler({ policy: parsePolicy(policy), models: [jagged()], cores });
  const out: Decision[] = [];
  let pending = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  let t = 0;
  while (pending.length > 0) {
    assert.equal(pending.length, 1);
    out.push(pending[0]!);
    t += pending[0]!.expectedMs;
    const r = s.blockFinished(1, t);
    pending = r.decisions;
    if (r.completed) assert.equal(pending.length, 0);
  }
  assert.equal(s.inSystem, 0);
  assert.equal(s.pool.free, cores);
  return out;
}

test('layerwise makes one claim per layer, each claiming that layer\'s requirement', () => {
  const d = runAlone('layerwise');
  assert.equal(d.length, JAGGED.length);
  d.forEach((x, u) => { assert.equal(x.first, u); assert.equal(x.last, u); });
  assert.deepEqual(d.map((x) => x.cores.length), [2, 2, 2, 6, 2, 2, 2, 2]);
  // Cores follow the request (its previous cores first): a claim/release only where the set changes.
  assert.deepEqual(d.map((x) => x.claim), [true, false, false, true, true, false, false, false]);
});

test('fcfs runs the whole model as one block on its peak requirement; the next request waits (one conflict) in arrival order', () => {
  const d = runAlone('fcfs');
  assert.equal(d.length, 1);
  assert.deepEqual([d[0]!.first, d[0]!.last, d[0]!.cores.length], [0, 7, 6]);
  const s = new Scheduler({ policy: parsePolicy('fcfs'), models: [jagged()], cores: 8 });
  assert.equal(s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0).length, 1);
  assert.equal(s.arrive({ id: 2, model: 0, arrivalMs: 0.1 }, 0.1).length, 0, '2 cores free, 6 needed: waits');
  assert.equal(s.arrive({ id: 3, model: 0, arrivalMs: 0.2 }, 0.2).length, 0, 'strict order: nobody overtakes the waiting request');
  assert.equal(s.stats.conflicts, 1, 'request 3 never tried: it is behind request 2');
  const next = s.blockFinished(1, 3).decisions;
  assert.deepEqual(next.map((x) => x.request), [2]);
  assert.equal(next[0]!.conflict, true);
});

test('static:K cuts fixed blocks of K layers, each on its flattened claim', () => {
  const d = runAlone('static:3');
  assert.deepEqual(d.map((x) => [x.first, x.last]), [[0, 2], [3, 5], [6, 7]]);
  assert.deepEqual(parsePolicyList('static:2-4').map((p) => p.name), ['static:2', 'static:3', 'static:4']);
});

test('veltair: one sprinting block alone on an idle machine, blocks split at the spike under load', () => {
  const alone = runAlone('veltair');
  assert.equal(alone.length, 1, 'all cores idle: the threshold covers the spike');
  assert.equal(alone[0]!.cores.length, 6, 'sprints up to its peak requirement');
  // Requests arriving together: the k-th sees idle = 16 − 2.5·k cores, shared over k models' appetites.
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: [jagged()], cores: 16 });
  const first: Decision[] = [];
  for (let i = 0; i < 6; i++) first.push(...s.arrive({ id: i, model: 0, arrivalMs: 0 }, 0));
  // 1st, 2nd: threshold 13.5 and 5.5 ≥ 3.5 covers the spike → whole model, sprinting to 6 cores;
  // 3rd, 4th: threshold 2.8 and 1.5 → the spike at layer 3 starts the next block; the rest wait.
  assert.deepEqual(first.map((x) => [x.request, x.first, x.last, x.cores.length]), [[0, 0, 7, 6], [1, 0, 7, 6], [2, 0, 2, 2], [3, 0, 2, 2]]);
  assert.equal(s.pool.free, 0);
});

test('prema: one request on the machine at a time; the shorter job takes over at the next layer boundary', () => {
  const long = jagged();
  const short = handPlan('short', [{ us1: 1000 }], 16, 2);
  const s = new Scheduler({ policy: parsePolicy('prema'), models: [long, short], cores: 16 });
  const a = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.deepEqual(a.map((x) => [x.request, x.first, x.last, x.cores.length]), [[1, 0, 0, long.fastestCores]]);
  assert.equal(s.arrive({ id: 2, model: 1, arrivalMs: 0.01 }, 0.01).length, 0, 'temporal: nothing else runs beside it');
  const next = s.blockFinished(1, 0.07).decisions;
  assert.deepEqual(next.map((x) => x.request), [2], 'preempted at the layer boundary for the shorter job');
  const back = s.blockFinished(2, 0.14).decisions;
  assert.deepEqual(back.map((x) => [x.request, x.first]), [[1, 1]], 'then the long one resumes where it stopped');
});

test('version choice: veltair takes the version best at the predicted level, veltair-sched the best quiet one, veltair-compile adaptive on whole-model blocks', () => {
  // v0 is 10% faster quiet but 1.5x slower at level 4; v1 is the reverse.
  const layers = JAGGED.map((l) => ({ ...l, versions: [[1.1, 1.2]] as const }));
  const plan = handPlan('two-versions', layers, 16, JAGGED_QOS_MS);
  const decide = (policy: string) => {
    const s = new Scheduler({ policy: parsePolicy(policy), models: [plan], cores: 16, predictLevel: () => 4 });
    return s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0)[0]!;
  };
  const v = decide('veltair'), sched = decide('veltair-sched'), compile = decide('veltair-compile');
  assert.equal(v.level, 4);
  assert.ok(v.versions.every((x) => x === 1));
  assert.equal(sched.level, 0);
  assert.ok(sched.versions.every((x) => x === 0));
  assert.deepEqual([compile.first, compile.last], [0, 7]);
  assert.ok(compile.versions.every((x) => x === 1));
});

test('the core pool never grants a core twice and refuses wrong releases', () => {
  const pool = new CorePool(4);
  const a = pool.grant(1, 3);
  const b = pool.grant(2, 1);
  assert.equal(new Set([...a, ...b]).size, 4);
  assert.throws(() => pool.grant(3, 1), (e) => isVeltairError(e) && e.exitCode === 2);
  assert.throws(() => pool.release(2, [a[0]!]), /held by 1/);
  pool.release(1, a);
  assert.deepEqual(pool.grant(3, 2, [a[2]!, a[1]!]), [a[1]!, a[2]!].sort((x, y) => x - y), 'preferred cores first');
});

test('a bad policy name is one clear error', () => {
  assert.throws(() => parsePolicy('fifo'), (e) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && /fifo/.test(e.message));
  assert.throws(() => parsePolicyList('static:0'), /static:0/);
  assert.throws(() => parsePolicyList('fcfs,fcfs'), /twice/);
});
