/**
 * The sparse head's always list (src/sparse/head-always.ts, native-kernels/sparse/head/infer.c): a
 * version scores the first `always` listed neurons for every input, then its buckets' candidates
 * in the budget left. Checked against the dense path of the same head (every score bit for bit),
 * and on a layer built so that the hash cannot find the answers (a few neurons win every input by
 * their bias, which an angle-based hash does not see): the list, chosen by cross-validation on
 * calibration rows, recovers them on rows it never saw.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { seededRng } from '../src/random.js';
import { ALWAYS_SHARES, choosePlans, rankAlways, TABLE_FRACTIONS } from '../src/sparse/head-always.js';
import { HEAD_JSON, headWeightsSha256, readHead, writeHead, type HeadArrays, type HeadMeta } from '../src/sparse-head/format.js';
import { buildHeadIndex, type HeadIndex } from '../src/sparse/head-index.js';
import { createNativeHead, loadSparseHeadAddon } from '../src/sparse-head/addon.js';
import type { SparseHeadAddon } from '../src/sparse-head/native-head.js';

const N = 2000;
const D = 32;

function gaussians(count: number, seed: number, scale = 1): Float32Array {
  const rng = seededRng(seed);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const u = Math.max(rng.next(), 1e-12),
      v = rng.next();
    out[i] = scale * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
  return out;
}

/** ReLU inputs, like a hidden layer's. */
const inputs = (rows: number, seed: number) => gaussians(rows * D, seed).map((v) => Math.max(0, v));

/** A layer whose neurons `popular` carry a large bias: they are the dense top-1 of nearly every input. */
async function layer(addon: SparseHeadAddon, popular: readonly number[] = []): Promise<HeadIndex> {
  const weight = gaussians(N * D, 5, 1 / Math.sqrt(D));
  const bias = new Float32Array(N);
  for (const p of popular) bias[p] = 3;
  return buildHeadIndex(addon, weight, bias, N, D, { sparsity: 0.05, family: 'dwta', seed: 9n, threads: 1 });
}

const withList = (a: SparseHeadAddon, ix: HeadIndex, list: Uint32Array | null) =>
  createNativeHead(a, ix.hash, N, D, { ...ix.arrays, always: list });

test('always 0 is the head as it was: the same answers as a head without a list, bit for bit', async () => {
  const addon = await loadSparseHeadAddon();
  const ix = await layer(addon);
  const plain = withList(addon, ix, null);
  const listed = withList(
    addon,
    ix,
    Uint32Array.from({ length: 300 }, (_, i) => (i * 7) % N),
  );
  const x = inputs(50, 1);
  for (const budget of [0, 20, 100, 400]) {
    const a = addon.headTopK(plain, x, 50, 5, budget, 0, 0),
      b = addon.headTopK(listed, x, 50, 5, budget, 0, 0);
    assert.deepEqual(Array.from(b.indices), Array.from(a.indices), `budget ${budget}`);
    assert.ok(
      b.values.every((v, i) => Object.is(v, a.values[i])),
      `budget ${budget}: scores`,
    );
    assert.equal(b.scored, a.scored);
  }
});

test("a sparse query scores the listed prefix then the buckets, with dense's scores bit for bit, within its budget", async () => {
  const addon = await loadSparseHeadAddon();
  const ix = await layer(addon);
  const x = inputs(20, 2);
  const plain = withList(addon, ix, null);
  const all = addon.headTopK(plain, x, 20, N, 0, 0, 0); // every neuron, sorted: the dense reference
  for (let r = 0; r < 20; r++) {
    const row = x.subarray(r * D, (r + 1) * D);
    const denseIds = Array.from(all.indices.subarray(r * N, (r + 1) * N));
    const denseScore = new Map(denseIds.map((id, j) => [id, all.values[r * N + j]!]));
    // the row's dense top-5 listed first: even a budget of 8 returns exactly the dense top-5
    const list = Uint32Array.from([...denseIds.slice(0, 5), ...denseIds.slice(-50)]);
    const head = withList(addon, ix, list);
    const got = addon.headTopK(head, row, 1, 5, 8, 5, 0);
    assert.deepEqual(Array.from(got.indices), denseIds.slice(0, 5), `row ${r}`);
    got.values.forEach((v, j) => assert.ok(Object.is(v, all.values[r * N + j]), `row ${r} rank ${j}: the dense score`));
    assert.ok(got.scored <= 8 && got.scored >= 5, `row ${r}: scored ${got.scored}`);
    // a budget below the always count scores exactly the budget's prefix of the list: its best, as dense ranks them
    const worst = addon.headTopK(head, row, 1, 3, 10, 55, 0);
    assert.equal(worst.scored, 10);
    const prefix = Array.from(list.subarray(0, 10)).sort((a, b) => denseScore.get(b)! - denseScore.get(a)! || a - b);
    assert.deepEqual(Array.from(worst.indices), prefix.slice(0, 3), `row ${r}: the listed prefix's top 3`);
    // the listed neurons are not scored twice: every returned id is distinct
    const wide = addon.headTopK(head, row, 1, 30, 200, 55, 0);
    assert.equal(new Set(wide.indices).size, 30);
    wide.indices.forEach((id, j) => assert.ok(Object.is(wide.values[j], denseScore.get(id)), `row ${r}: neuron ${id} scored as dense`));
  }
});

test('an always list with a repeated or out-of-range id is refused by the addon', async () => {
  const addon = await loadSparseHeadAddon();
  const ix = await layer(addon);
  assert.throws(
    () => withList(addon, ix, Uint32Array.from([3, 4, 3])),
    (e: Error & { code?: string }) => e.code === 'VT_ARGUMENT' && /twice/.test(e.message),
  );
  assert.throws(
    () => withList(addon, ix, Uint32Array.from([3, N])),
    (e: Error & { code?: string }) => e.code === 'VT_ARGUMENT' && /not a neuron/.test(e.message),
  );
  const head = withList(addon, ix, Uint32Array.from([1, 2]));
  assert.throws(
    () => addon.headTopK(head, inputs(1, 3), 1, 5, 10, -1, 0),
    (e: Error & { code?: string }) => e.code === 'VT_ARGUMENT',
  );
});

test('rankAlways: top-1 count first, then top-k count, then id; only the rows given', () => {
  // 4 rows x kk 3
  const indices = Int32Array.from([7, 1, 2, 7, 2, 1, 5, 2, 9, 2, 5, -1]);
  assert.deepEqual(Array.from(rankAlways({ indices }, 3, [0, 1, 2, 3])), [7, 2, 5, 1, 9]);
  assert.deepEqual(Array.from(rankAlways({ indices }, 3, [2, 3])), [2, 5, 9]);
});

test('on a layer whose answers the hash cannot find, the chosen list recovers them on rows it never saw', async () => {
  const addon = await loadSparseHeadAddon();
  const popular = Array.from({ length: 40 }, (_, i) => 37 * i + 11);
  const ix = await layer(addon, popular);
  const budget = 100;
  const cal = inputs(300, 4),
    held = inputs(300, 6);
  const plain = withList(addon, ix, null);
  const dense = addon.headTopK(plain, cal, 300, 5, 0, 0, 0);
  const L = ix.hash.L;
  const choice = choosePlans(addon, (list: Uint32Array) => withList(addon, ix, list), cal, 300, D, dense, 5, [0, budget], L);
  assert.deepEqual(choice.plans[0], { always: 0, tables: 0 }, 'the dense budget has no plan');
  const plan = choice.plans[1]!;
  assert.ok(plan.always > 0 && ALWAYS_SHARES.some((s) => Math.floor(s * budget) === plan.always), `always ${plan.always}`);
  assert.ok(plan.tables === 0 || TABLE_FRACTIONS.some((f) => Math.max(1, Math.ceil(f * L)) === plan.tables), `tables ${plan.tables}`);
  const list = rankAlways(
    dense,
    5,
    Array.from({ length: 300 }, (_, r) => r),
  );
  const head = withList(addon, ix, list);
  const heldDense = addon.headTopK(head, held, 300, 1, 0, 0, 0);
  const recall = (always: number, tables: number) => {
    const got = addon.headTopK(head, held, 300, 1, budget, always, tables);
    return got.indices.filter((id, r) => id === heldDense.indices[r]).length / 300;
  };
  const bucketsOnly = recall(0, 0),
    withAlways = recall(Math.min(plan.always, list.length), plan.tables);
  assert.ok(bucketsOnly < 0.6, `the buckets alone find ${bucketsOnly} of the answers (the layer was built so that they cannot)`);
  assert.ok(withAlways >= 0.95, `with the list: recall@1 ${withAlways} on held-out rows`);
  assert.ok(choice.recallAt1[1]! >= 0.95, `cross-validated recall@1 ${choice.recallAt1[1]}`);
});

test('a version reading the first tables only hashes them as the whole head does: a head of just those tables answers the same', async () => {
  const addon = await loadSparseHeadAddon();
  const ix = await layer(addon);
  const { K, L, perTable } = ix.hash;
  const first = 5;
  // the first tables of the index as a head of their own: their offsets and bins, the same ids
  const offsets = ix.arrays.offsets.slice(0, first * 2 ** K + 1);
  const sliced = {
    ...ix.arrays,
    offsets,
    ids: ix.arrays.ids.slice(0, offsets[first * 2 ** K]!),
    bins: ix.arrays.bins!.slice(0, first * perTable * 8),
  };
  const small = createNativeHead(addon, { ...ix.hash, L: first }, N, D, { ...sliced, always: null });
  const full = withList(addon, ix, null);
  // every bin of these inputs has a winner of its own (no zeros), so no bin borrows from tables past `first`
  const positive = gaussians(40 * D, 8).map((v) => Math.abs(v) + 0.01);
  for (const budget of [30, N - 1]) {
    const a = addon.headTopK(small, positive, 40, 5, budget, 0, 0),
      b = addon.headTopK(full, positive, 40, 5, budget, 0, first);
    assert.deepEqual(Array.from(b.indices), Array.from(a.indices), `budget ${budget}`);
    assert.equal(b.scored, a.scored);
  }
  // ReLU inputs (empty bins borrow along the whole head's probe sequence): the first tables' candidates are a subset of all tables'
  const relu = inputs(40, 9);
  const all = addon.headTopK(full, relu, 40, N, N - 1, 0, 0),
    some = addon.headTopK(full, relu, 40, N, N - 1, 0, first);
  const same = addon.headTopK(full, relu, 40, N, N - 1, 0, L);
  assert.deepEqual(Array.from(same.indices), Array.from(all.indices), 'tables = L is every table');
  for (let r = 0; r < 40; r++) {
    const have = new Set(Array.from(all.indices.subarray(r * N, (r + 1) * N)).filter((i) => i >= 0));
    const part = Array.from(some.indices.subarray(r * N, (r + 1) * N)).filter((i) => i >= 0);
    assert.ok(part.length > 0 && part.length < have.size, `row ${r}: ${part.length} of ${have.size} candidates`);
    assert.ok(
      part.every((i) => have.has(i)),
      `row ${r}: a candidate outside every table's buckets`,
    );
  }
});

test('head.bin carries the list; a version scoring more of it than it holds is refused at load', async () => {
  const addon = await loadSparseHeadAddon();
  const ix = await layer(addon);
  const dir = await mkdtemp(join(tmpdir(), 'veltair-always-'));
  try {
    await mkdir(join(dir, 'sparse'));
    const arrays: HeadArrays = { ...ix.arrays, always: Uint32Array.from([5, 9, 1]) };
    const version = {
      id: 's0.05',
      sparsity: 0.05,
      budget: 100,
      always: 3,
      latencyMs: { 0: 0.1 },
      repeatsMs: [0.1],
      recallAt1: 1,
      recallAt5: 1,
      precisionAt1: null,
      scoredMean: 100,
      kept: true,
    };
    const meta: Omit<HeadMeta, 'blobs'> = {
      format: 'veltair-sparse-head',
      version: 1,
      layer: { index: 1, name: 'l', input: 'h', output: 'y', activation: 'none', n: N, d: D, k: 5, outputs: { values: 'v', indices: 'i' } },
      weightsSha256: headWeightsSha256(arrays.weight, arrays.bias),
      hash: ix.hash,
      index: ix.index,
      calibration: { source: 'generated', path: null, rows: 1, labelled: false, note: 'test' },
      latencyLevels: [0],
      versions: [{ ...version, id: 's1', sparsity: 1, budget: 0, always: 0 }, version],
    };
    await writeHead(dir, meta, arrays);
    const back = await readHead(dir);
    assert.deepEqual(Array.from(back.arrays.always!), [5, 9, 1]);
    const json = JSON.parse(await readFile(join(dir, HEAD_JSON), 'utf8')) as { versions: { always: number }[] };
    json.versions[1]!.always = 4;
    await writeFile(join(dir, HEAD_JSON), JSON.stringify(json));
    await assert.rejects(readHead(dir), (e: Error & { code?: string }) => e.code === 'BAD_BUNDLE' && /always list holds 3/.test(e.message));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
