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

test("layerwise makes one claim per layer, each claiming that layer's requirement", () => {
  const d = runAlone('layerwise');
  assert.equal(d.length, JAGGED.length);
  d.forEach((x, u) => {
    assert.equal(x.first, u);
    assert.equal(x.last, u);
  });
  assert.deepEqual(
    d.map((x) => x.cores.length),
    [2, 2, 2, 6, 2, 2, 2, 2],
  );
  // Cores follow the request (its previous cores first): a claim/release only where the set changes.
  assert.deepEqual(
    d.map((x) => x.claim),
    [true, false, false, true, true, false, false, false],
  );
});

test('layerwise pays a claim/release per layer: its requirement includes one, so each claiming layer still meets its share', () => {
  const claimUs = 50;
  const plan = handPlan('jagged-claims', JAGGED, 16, JAGGED_QOS_MS, claimUs);
  // Plain shares (not rescaled by time gained or lost), so each layer's claim is its requirement.
  const s = new Scheduler({ policy: parsePolicy('layerwise'), models: [plan], cores: 16, deadlineAware: false });
  const d: Decision[] = [];
  let pending = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  let t = 0;
  while (pending.length > 0) {
    d.push(pending[0]!);
    t += pending[0]!.expectedMs;
    pending = s.blockFinished(1, t).decisions;
  }
  assert.equal(d.length, JAGGED.length);
  const cheap = [0, 1, 2, 4, 5, 6, 7];
  // Without the claim a cheap layer needs 2 cores (1 ms / 2 = its 0.5 ms share); 0.5 ms plus 50 µs misses it.
  for (const u of cheap) assert.ok(plan.requirement[u]! > 2, `layer ${u} needs more than 2 cores once its claim is counted`);
  d.forEach((x, u) => {
    assert.equal(x.cores.length, plan.requirement[u], `layer ${u} claims its requirement`);
    if (x.claim)
      assert.ok(
        x.expectedMs <= plan.shareMs[u]! + 1e-9,
        `layer ${u}: ${x.expectedMs} ms with its claim within its ${plan.shareMs[u]} ms share`,
      );
  });
  assert.ok(d[0]!.claim && d[0]!.expectedMs > 1000 / d[0]!.cores.length / 1000, "the first claim is paid in the block's time");
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
  assert.deepEqual(
    next.map((x) => x.request),
    [2],
  );
  assert.equal(next[0]!.conflict, true);
});

test('static:K cuts fixed blocks of K layers, each on its flattened claim', () => {
  const d = runAlone('static:3');
  assert.deepEqual(
    d.map((x) => [x.first, x.last]),
    [
      [0, 2],
      [3, 5],
      [6, 7],
    ],
  );
  assert.deepEqual(
    parsePolicyList('static:2-4').map((p) => p.name),
    ['static:2', 'static:3', 'static:4'],
  );
});

test('veltair: one block alone on an idle machine, blocks split at the spike under load', () => {
  const alone = runAlone('veltair');
  assert.equal(alone.length, 1, 'all cores idle: the threshold covers the spike');
  assert.equal(alone[0]!.cores.length, 3, "the flattened claim of the whole model, below the spike's 6");
  // Requests arriving together: the k-th sees idle = 16 − 2.5·k cores, shared over k models' appetites.
  const s = new Scheduler({ policy: parsePolicy('veltair'), models: [jagged()], cores: 16 });
  const first: Decision[] = [];
  for (let i = 0; i < 6; i++) first.push(...s.arrive({ id: i, model: 0, arrivalMs: 0 }, 0));
  // 1st, 2nd: threshold 13.5 and 5.5 ≥ 3.5 covers the spike → whole model on 3 cores;
  // then threshold 2.8, 1.5, 0.7, 0.2 → the spike at layer 3 starts the next block: layers 0..2 on 2 cores.
  assert.deepEqual(
    first.map((x) => [x.request, x.first, x.last, x.cores.length]),
    [
      [0, 0, 7, 3],
      [1, 0, 7, 3],
      [2, 0, 2, 2],
      [3, 0, 2, 2],
      [4, 0, 2, 2],
      [5, 0, 2, 2],
    ],
  );
  assert.equal(s.pool.free, 2);
});

test('on a conflict a block policy runs on what is free (counted); a model-wise one waits', () => {
  const v = new Scheduler({ policy: parsePolicy('veltair'), models: [jagged()], cores: 3 });
  assert.deepEqual(
    v.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0).map((x) => x.cores.length),
    [2],
  );
  const shrunk = v.arrive({ id: 2, model: 0, arrivalMs: 0 }, 0);
  assert.deepEqual(
    shrunk.map((x) => [x.first, x.last, x.needCores, x.cores.length, x.conflict]),
    [[0, 2, 2, 1, true]],
  );
  assert.equal(v.stats.conflicts, 1);
  const w = new Scheduler({ policy: parsePolicy('veltair'), models: [jagged()], cores: 3, onConflict: 'wait' });
  w.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.deepEqual(w.arrive({ id: 2, model: 0, arrivalMs: 0 }, 0), [], 'the override makes it wait');
});

test('prema: one request on the machine at a time; the shorter job takes over at the next layer boundary', () => {
  const long = jagged();
  const short = handPlan('short', [{ us1: 1000 }], 16, 2);
  const s = new Scheduler({ policy: parsePolicy('prema'), models: [long, short], cores: 16 });
  const a = s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0);
  assert.deepEqual(
    a.map((x) => [x.request, x.first, x.last, x.cores.length]),
    [[1, 0, 0, long.fastestCores]],
  );
  assert.equal(s.arrive({ id: 2, model: 1, arrivalMs: 0.01 }, 0.01).length, 0, 'temporal: nothing else runs beside it');
  const next = s.blockFinished(1, 0.07).decisions;
  assert.deepEqual(
    next.map((x) => x.request),
    [2],
    'preempted at the layer boundary for the shorter job',
  );
  const back = s.blockFinished(2, 0.14).decisions;
  assert.deepEqual(
    back.map((x) => [x.request, x.first]),
    [[1, 1]],
    'then the long one resumes where it stopped',
  );
});

test(
  'version choice: veltair takes the version best at the predicted level, veltair-sched the best quiet one, ' +
    'veltair-compile adaptive on whole-model blocks',
  () => {
    // v0 is 10% faster quiet but 1.5x slower at level 4; v1 is the reverse.
    const layers = JAGGED.map((l) => ({ ...l, noisy: 1.5, versions: [[1.1, 1.2]] as const }));
    const plan = handPlan('two-versions', layers, 16, 2 * JAGGED_QOS_MS);
    const decide = (policy: string) => {
      const s = new Scheduler({ policy: parsePolicy(policy), models: [plan], cores: 16, predictLevel: () => 4 });
      return s.arrive({ id: 1, model: 0, arrivalMs: 0 }, 0)[0]!;
    };
    const v = decide('veltair'),
      sched = decide('veltair-sched'),
      compile = decide('veltair-compile');
    assert.equal(v.level, 4);
    assert.ok(v.versions.every((x) => x === 1));
    assert.equal(sched.level, 0);
    assert.ok(sched.versions.every((x) => x === 0));
    assert.deepEqual([compile.first, compile.last], [0, 7]);
    assert.ok(compile.versions.every((x) => x === 1));
  },
);

test('the core pool never grants a core twice and refuses wrong releases', () => {
  const pool = new CorePool(4);
  const a = pool.grant(1, 3);
  const b = pool.grant(2, 1);
  assert.equal(new Set([...a, ...b]).size, 4);
  assert.throws(
    () => pool.grant(3, 1),
    (e) => isVeltairError(e) && e.exitCode === 2,
  );
  assert.throws(() => pool.release(2, [a[0]!]), /held by 1/);
  pool.release(1, a);
  assert.deepEqual(
    pool.grant(3, 2, [a[2]!, a[1]!]),
    [a[1]!, a[2]!].sort((x, y) => x - y),
    'preferred cores first',
  );
});

test('a grant confined to a range takes only free cores inside it, preferred ones first, and refuses more than the range has free', () => {
  const pool = new CorePool(6);
  assert.deepEqual(pool.grant(1, 1, [0, 4], { first: 3, count: 2 }), [4], 'a preferred core outside the range is skipped');
  assert.equal(pool.freeIn({ first: 3, count: 2 }), 1);
  assert.deepEqual(pool.grant(2, 1, [], { first: 3, count: 2 }), [3]);
  assert.throws(
    () => pool.grant(3, 1, [], { first: 3, count: 2 }),
    (e) => isVeltairError(e) && e.exitCode === 2,
  );
  assert.equal(pool.free, 4, 'the cores outside the range are still free');
});

test('veltair-partition is a policy: adaptive blocks, deadline order, adaptive versions, a fixed partition; veltair chooses', () => {
  const p = parsePolicy('veltair-partition');
  assert.deepEqual(
    [p.name, p.blocks, p.order, p.adaptiveVersions, p.spatial],
    ['veltair-partition', 'adaptive', 'deadline', true, 'partitioned'],
  );
  assert.equal(parsePolicy('veltair').spatial, 'choose');
  assert.equal(parsePolicy('veltair-sched').spatial, 'shared');
});

test('a bad policy name is one clear error', () => {
  assert.throws(
    () => parsePolicy('fifo'),
    (e) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && /fifo/.test(e.message),
  );
  assert.throws(() => parsePolicyList('static:0'), /static:0/);
  assert.throws(() => parsePolicyList('fcfs,fcfs'), /twice/);
});
