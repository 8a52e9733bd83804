/**
 * A sampled output layer computes the most frequent labels for every training sample (pass.c says
 * why): which labels those are, that every batch then gives them a gradient, and bad calls.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPTIMIZER_CODE, loadSparseTrainAddon } from '../src/sparse/native.js';
import { frequentDefault, mostFrequent, nativeLayerConfig } from '../src/sparse/trainer.js';
import { denseLayer, randomRows, sparseLayer, xcFromRows } from './sparse-fixture.js';

test('mostFrequent: the n labels seen most often, ties to the lower id, never an unseen label', () => {
  assert.deepEqual([...mostFrequent(Int32Array.from([3, 1, 3, 2, 1, 3, 5]), 6, 3)], [3, 1, 2]);
  assert.deepEqual([...mostFrequent(Int32Array.from([4, 4]), 6, 3)], [4]);
  assert.deepEqual([...mostFrequent(new Int32Array(0), 6, 3)], []);
});

test('frequentDefault: 1/16 of the active neurons of a sampled layer, none for a dense one', () => {
  assert.equal(frequentDefault(sparseLayer(1, 16, 1000, 'softmax', 0.05, 'dwta', 3, 2, 8)), 4);
  assert.equal(frequentDefault(denseLayer(1, 16, 1000, 'softmax')), 0);
});

const INPUT = 30,
  CLASSES = 400;
const layers = [denseLayer(0, INPUT, 8, 'relu'), sparseLayer(1, 8, CLASSES, 'softmax', 0.02, 'simhash', 4, 2, 4)];
const opts = { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, aln: 0, optimizer: OPTIMIZER_CODE.adam };

/** Per batch, whether neurons 390 and 391 (no sample's label) got a bias gradient. */
async function batches(always: boolean): Promise<boolean[]> {
  const addon = await loadSparseTrainAddon();
  const rows = randomRows(160, INPUT, 300, 4, 5);
  const data = xcFromRows(rows);
  const model = addon.create({ inputDim: INPUT, seed: 2, threads: 1, layers: layers.map((l) => nativeLayerConfig(l)) });
  const d = addon.dataset(data.row, data.idx, data.val, data.lrow, data.labels, INPUT, CLASSES);
  if (always) addon.setAlways(model, 1, Int32Array.from([390, 391]));
  addon.index(model, 1, true, 0);
  const order = Int32Array.from({ length: rows.length }, (_, i) => i);
  const out: boolean[] = [];
  for (let b = 0; b < rows.length; b += 8) {
    addon.backprop(model, d, order, b, 8, 1, 0, opts);
    const gb = addon.getTensor(model, 1, 'gb');
    out.push(gb[390] !== 0 && gb[391] !== 0);
    addon.adamStep(model, 1, opts);
  }
  addon.close(model);
  return out;
}

test('setAlways: every batch computes (and so pushes down) the given neurons; without it some batches do not', async () => {
  assert.ok((await batches(true)).every(Boolean), 'every batch gives the always-computed neurons a gradient');
  assert.ok(
    (await batches(false)).some((x) => !x),
    'the control: the tables and the random fill alone miss them in some batch',
  );
});

test('setAlways refuses a dense layer and ids out of range with VT_ARGUMENT', async () => {
  const addon = await loadSparseTrainAddon();
  const model = addon.create({ inputDim: INPUT, seed: 2, threads: 1, layers: layers.map((l) => nativeLayerConfig(l)) });
  assert.throws(() => addon.setAlways(model, 0, Int32Array.from([1])), { code: 'VT_ARGUMENT' });
  assert.throws(() => addon.setAlways(model, 1, Int32Array.from([CLASSES])), { code: 'VT_ARGUMENT' });
  assert.throws(() => addon.setAlways(model, 1, Int32Array.from([-1])), { code: 'VT_ARGUMENT' });
  addon.close(model);
});
