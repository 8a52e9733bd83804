/**
 * The hash tables of a sparse layer, for both families: after a rebuild, querying with a neuron's
 * own weight vector finds that neuron in every table whose bucket did not overflow (and so in at
 * least one table); no bucket ever holds more than R ids — after rebuilds, rehashes, and ALN
 * inserts from two threads at once; and the hash codes depend only on the seed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadSparseTrainAddon, type SparseTrainAddon, type Handle } from '../src/sparse/native.js';
import { nativeLayerConfig } from '../src/sparse/trainer.js';
import { denseLayer, randomRows, sparseLayer, xcFromRows } from './sparse-fixture.js';

const D = 3000,
  HIDDEN = 32;

function model(addon: SparseTrainAddon, family: 'simhash' | 'dwta', seed: number, R: number, threads = 1): Handle {
  const layers = [denseLayer(0, 100, HIDDEN, 'relu'), sparseLayer(1, HIDDEN, D, 'softmax', 0.05, family, 6, 8, R)];
  return addon.create({ inputDim: 100, seed, threads, layers: layers.map((l) => nativeLayerConfig(l)) });
}

function bucketSizes(addon: SparseTrainAddon, m: Handle): number[] {
  const t = addon.tables(m, 1);
  return Array.from({ length: t.offsets.length - 1 }, (_, b) => t.offsets[b + 1]! - t.offsets[b]!);
}

for (const family of ['simhash', 'dwta'] as const) {
  test(`${family}: every neuron is found by querying its own weight vector (in every table whose bucket did not overflow)`, async () => {
    const addon = await loadSparseTrainAddon();
    const R = 2 * Math.ceil(D / 64); // twice the mean fill: some buckets still overflow, which the check must allow for
    const m = model(addon, family, 3, R);
    addon.index(m, 1, true, 0);
    const { seen, offsets, ids } = addon.tables(m, 1);
    const w = addon.getTensor(m, 1, 'w');
    let overflowed = 0;
    for (let n = 0; n < D; n++) {
      const q = addon.query(m, 1, w.subarray(n * HIDDEN, (n + 1) * HIDDEN));
      assert.ok(q.ids.includes(n), `neuron ${n} not returned by its own weights`);
      q.codes.forEach((code, t) => {
        const b = t * 64 + code;
        const members = ids.subarray(offsets[b]!, offsets[b + 1]!);
        if (seen[b]! <= R) assert.ok(members.includes(n), `neuron ${n} missing from table ${t} bucket ${code}, which holds ${seen[b]} ≤ R`);
        else overflowed++;
      });
    }
    assert.ok(bucketSizes(addon, m).every((s) => s <= R));
    assert.ok(overflowed < D * 8, 'the check must have covered most (neuron, table) pairs');
  });

  test(`${family}: no bucket exceeds R after rehashes and two threads of ALN inserts during training`, async () => {
    const addon = await loadSparseTrainAddon();
    const R = 5; // small, so the reservoir is exercised on every bucket
    const m = model(addon, family, 4, R, 2);
    const data = xcFromRows(randomRows(600, 100, D, 8, 5));
    const d = addon.dataset(data.row, data.idx, data.val, data.lrow, data.labels, 100, D);
    const order = Int32Array.from({ length: 600 }, (_, i) => i);
    const opts = { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, aln: 1, optimizer: 0 };
    addon.index(m, 2, true, 0);
    let inserts = 0;
    for (let b = 0; b < 600; b += 50) {
      inserts += addon.backprop(m, d, order, b, 50, 2, 0, opts)[8]!;
      addon.adamStep(m, 2, opts);
      addon.index(m, 2, b % 200 === 0, b + 1);
      const sizes = bucketSizes(addon, m);
      assert.ok(Math.max(...sizes) <= R, `a bucket holds ${Math.max(...sizes)} > R = ${R}`);
    }
    assert.ok(inserts > 0, 'ALN inserted label neurons');
  });
}

test('hash codes are a function of the seed: same seed, same codes; another seed, other codes', async () => {
  const addon = await loadSparseTrainAddon();
  const x = Float32Array.from({ length: HIDDEN }, (_, i) => Math.sin(i + 1));
  for (const family of ['simhash', 'dwta'] as const) {
    const a = model(addon, family, 9, 10),
      b = model(addon, family, 9, 10),
      c = model(addon, family, 10, 10);
    assert.deepEqual(addon.query(a, 1, x).codes, addon.query(b, 1, x).codes);
    assert.notDeepEqual(addon.query(a, 1, x).codes, addon.query(c, 1, x).codes);
    assert.ok(addon.query(a, 1, x).codes.every((code) => code < 64));
  }
});
