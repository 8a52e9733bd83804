/**
 * The warm-up batches a tuning pass proposes and compiles before it measures anything: the same
 * runs and sizes the task scheduler would give their first batches, every candidate's object in the
 * cache before the first measurement, and compiler calls spread over every core.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/db/store.js';
import { withKey, type Conv2dWorkload } from '../src/ir/workload.js';
import { compileChunks } from '../src/measure/build.js';
import type { Schedule } from '../src/space/knobs.js';
import { detectTarget } from '../src/toolchain/target.js';
import type { TaskProgress } from '../src/tune/trial-allocator.js';
import type { TaskSearch, TrialResult } from '../src/tune/search.js';
import { tuneWorkloads } from '../src/tune/tune-model.js';
import { prebuildWarmups, proposeWarmups } from '../src/tune/warmup.js';
import { targetFingerprint } from '../src/db/target-fingerprint.js';
import { defaultTableRefresh } from '../src/space/presets.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-tune-warmup-'));
after(() => rmSync(root, { recursive: true, force: true }));

const shape: Conv2dWorkload = {
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 16,
  h: 8,
  w: 8,
  cout: 32,
  kh: 3,
  kw: 3,
  strideH: 1,
  strideW: 1,
  pads: [1, 1, 1, 1],
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 8,
  ow: 8,
  epilogue: ['bias', 'relu'],
};

/** A search that proposes numbered placeholders and remembers the sizes asked for. */
function fakeSearch(name: string, visited = 0): TaskSearch & { asked: number[] } {
  const asked: number[] = [];
  let next = 0;
  return {
    workload: withKey(shape),
    asked,
    visited: Array.from({ length: visited }, () => ({}) as TrialResult),
    propose(n) {
      asked.push(n);
      return Array.from({ length: n }, () => ({ name: `${name}${next++}` }) as unknown as Schedule);
    },
    observe() {
      /* not used */
    },
    bestMs: () => ({}),
  };
}

const fresh = (): TaskProgress => ({ weight: 1, history: [], exhausted: false });

test('warm-ups: every run without a batch yet, in run order, each sized as the pass would ask, until the budget is spent', () => {
  const searches = [fakeSearch('a'), fakeSearch('b', 2), fakeSearch('c', 3), fakeSearch('d'), fakeSearch('e')];
  const progress = [fresh(), { weight: 1, history: [1, 1], exhausted: false }, fresh(), fresh(), fresh()];
  const caps = [3, 8, 3, 8, 8];
  // budget 9, 2 done (run b's resumed records): a gets 3 (its cap), b is not warmed up (it has a
  // history), c's cap is reached, d gets min(batch 4, 9 - 5) = 4, and nothing is left for e.
  const plan = proposeWarmups(searches, progress, caps, 4, 9, 2);
  assert.deepEqual([...plan.keys()], [0, 3]);
  assert.deepEqual(
    searches.map((s) => s.asked),
    [[3], [], [], [4], []],
  );
  assert.deepEqual(
    plan.get(3)!.map((s) => (s as unknown as { name: string }).name),
    ['d0', 'd1', 'd2', 'd3'],
  );
});

test('compiler calls: never fewer than the cores while units remain, never more than the batch size a call', () => {
  const sizes = (n: number, batch: number, jobs: number) =>
    compileChunks(
      Array.from({ length: n }, (_, i) => i),
      batch,
      jobs,
    ).map((c) => c.length);
  assert.deepEqual(sizes(3, 8, 2), [2, 1]);
  assert.deepEqual(sizes(20, 8, 2), [8, 8, 4]);
  assert.deepEqual(sizes(3, 8, 1), [3]);
  assert.deepEqual(sizes(1, 8, 16), [1]);
  assert.deepEqual(sizes(0, 8, 2), []);
});

test('a pass compiles every warm-up candidate before its first measurement', { timeout: 600_000 }, async () => {
  const cache = join(root, 'cache');
  const target = await detectTarget();
  const db = await openDatabase(join(root, 'db'), { target, shipped: false });
  const workloads = [withKey(shape), withKey({ ...shape, cout: 48 })];
  let objectsAtFirstTrial: number | undefined;

  const compiling: [number, number][] = [];
  const result = await tuneWorkloads(
    workloads.map((workload) => ({ workload, count: 1 })),
    {
      trials: 2,
      levels: [0],
      threads: [1],
      seed: 5,
      db,
      minTimeMs: 5,
      target,
      cacheDir: cache,
      onCompileProgress: (done, total) => {
        compiling.push([done, total]);
      },
      onProgress: () => {
        objectsAtFirstTrial ??= readdirSync(join(cache, 'objects')).filter((f) => f.endsWith('.o')).length;
      },
    },
  );
  assert.equal(result.measured, 4);
  assert.equal(objectsAtFirstTrial, 4, "both workloads' warm-up batches were compiled before the first one was measured");
  assert.deepEqual(compiling.at(-1), [4, 4], 'the compile phase reported its progress to the end');
  assert.ok(result.phases.warmup > 0 && result.phases.searchMeasure > 0, 'the warm-up and the measurements are phases of their own');
  assert.ok(
    compiling.length >= 2 && compiling.every(([d], i) => i === 0 || d > compiling[i - 1]![0]),
    'one report per compiler call, rising',
  );
});

test(
  'the warm-up builds the measurement harness beside the kernels, so the first measurement does not wait for it',
  { timeout: 600_000 },
  async () => {
    const cache = join(root, 'cache-harness');
    const target = await detectTarget();
    const db = await openDatabase(join(root, 'db-harness'), { target, shipped: false });
    const workload = withKey(shape);
    const harnessBuilt = () => existsSync(join(cache, 'tools')) && readdirSync(join(cache, 'tools')).some((f) => f.startsWith('harness-'));
    const ctx = {
      target,
      fingerprint: targetFingerprint(target),
      db,
      levels: [0],
      levelsFor: () => [0],
      bank: async () => undefined,
      cacheDir: cache,
      batch: 8,
    };
    await prebuildWarmups([{ use: { workload } }], new Map([[0, []]]), ctx);
    assert.equal(harnessBuilt(), false, 'nothing to compile: nothing built');
    await prebuildWarmups([{ use: { workload } }], new Map([[0, [defaultTableRefresh(workload, target, 1)]]]), ctx);
    assert.equal(harnessBuilt(), true);
    assert.equal(readdirSync(join(cache, 'objects')).filter((f) => f.endsWith('.o')).length, 1, "and the candidate's object");
  },
);
