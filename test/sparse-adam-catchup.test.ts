/**
 * The default optimiser ('adam') equals dense Adam (every row updated every step, as torch.optim.Adam)
 * while updating only the rows a batch touches: a row left behind is caught up before it is read
 * (native-kernels/sparse/train/adam.c). Checked in the native code through the add-on:
 *  - k Adam steps with zero gradients from a given state (dense-adam, row by row) against the
 *    catch-up of the same k steps at once, for the input-major first layer, a neuron-major layer and
 *    its biases, from early steps (bias correction large) and late ones, k below and above the
 *    number of steps the catch-up sums exactly;
 *  - training (backprop reads caught-up rows) against dense-adam, where the lazy Adam differs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../src/random.js';
import { OPTIMIZER_CODE, loadSparseTrainAddon, type Optimizer, type SparseTrainAddon, type TensorName } from '../src/sparse/native.js';
import { createTrainer, nativeLayerConfig } from '../src/sparse/trainer.js';
import type { SparseLayer } from '../src/sparse/layers.js';
import { denseLayer, maxRelDiff, randomRows, settings, sparseLayer, xcFromRows } from './sparse-fixture.js';

const INPUT = 40;
const LAYERS: SparseLayer[] = [denseLayer(0, INPUT, 16, 'relu'), sparseLayer(1, 16, 24, 'softmax', 0.5, 'simhash', 3, 2, 8)];
const NAMES: readonly TensorName[] = ['w', 'b', 'mw', 'vw', 'mb', 'vb'];
const opts = (optimizer: Optimizer) => ({ lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, aln: 0, optimizer: OPTIMIZER_CODE[optimizer] });

/** A model whose moments are a state Adam can reach (|m| <= sqrt(v) * 4.5), some zero, some tiny (eps dominates). */
function modelAt(addon: SparseTrainAddon, step: number) {
  const model = addon.create({ inputDim: INPUT, seed: 3, threads: 1, layers: LAYERS.map((l) => nativeLayerConfig(l)) });
  const rng = seededRng(11);
  LAYERS.forEach((_, l) => {
    for (const [mName, vName] of [
      ['mw', 'vw'],
      ['mb', 'vb'],
    ] as const) {
      const n = addon.getTensor(model, l, mName).length;
      const m = new Float32Array(n),
        v = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        const kind = i % 7;
        const scale = kind === 0 ? 0 : kind === 1 ? 1e-9 : 1e-3;
        m[i] = (rng.next() * 2 - 1) * scale;
        v[i] = m[i]! * m[i]! * (0.05 + rng.next());
      }
      addon.setTensor(model, l, mName, m);
      addon.setTensor(model, l, vName, v);
    }
  });
  addon.setStep(model, step);
  return model;
}

function tensors(addon: SparseTrainAddon, model: object): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  LAYERS.forEach((_, l) => {
    for (const n of NAMES) out.set(`${l}.${n}`, addon.getTensor(model, l, n));
  });
  return out;
}

/** Largest |a - b| over the weights, as a fraction of the largest move dense Adam made (start -> b). */
function moveError(a: Float32Array, b: Float32Array, start: Float32Array): { err: number; moved: number } {
  let err = 0,
    moved = 0;
  for (let i = 0; i < a.length; i++) {
    err = Math.max(err, Math.abs(a[i]! - b[i]!));
    moved = Math.max(moved, Math.abs(b[i]! - start[i]!));
  }
  return { err: err / moved, moved };
}

for (const [start, k] of [
  [1, 1],
  [3, 7],
  [20, 60],
  [1000, 250],
  [5, 400],
] as const) {
  test(`catching a row up ${k} steps after step ${start} equals ${k} dense Adam steps with zero gradient (weights, biases, moments)`, async () => {
    const addon = await loadSparseTrainAddon();
    const dense = modelAt(addon, start),
      caught = modelAt(addon, start),
      lazy = modelAt(addon, start);
    const before = tensors(addon, dense);
    for (let s = 0; s < k; s++) {
      addon.adamStep(dense, 1, opts('dense-adam'));
      addon.adamStep(caught, 1, opts('adam'));
      addon.adamStep(lazy, 1, opts('lazy-adam'));
    }
    assert.equal(addon.getStep(caught), start + k);
    const want = tensors(addon, dense),
      got = tensors(addon, caught),
      stale = tensors(addon, lazy);
    for (const [key, w] of want) {
      const [, name] = key.split('.');
      if (name === 'w' || name === 'b') {
        const { err, moved } = moveError(got.get(key)!, w, before.get(key)!);
        assert.ok(moved > 1e-3, `${key}: dense Adam moved it (${moved})`);
        assert.ok(err < 2e-5, `${key}: caught-up weights differ from dense Adam's by ${err} of the move`);
        if (key !== '0.b') {
          // the first layer's biases are one dense row, updated every step by every optimiser
          const lazyErr = moveError(stale.get(key)!, w, before.get(key)!).err;
          assert.ok(lazyErr > 0.1, `${key}: the lazy Adam leaves the rows behind (${lazyErr})`);
        }
      } else {
        const r = maxRelDiff(got.get(key)!, w, 1e-30);
        assert.ok(r < 1e-4, `${key}: moments differ by ${r} (relative)`);
      }
    }
  });
}

async function trainWith(optimizer: Optimizer, layers: SparseLayer[]) {
  const data = xcFromRows(randomRows(160, 300, 24, 3, 9));
  const trainer = await createTrainer(layers, settings({ epochs: 2, batch: 8, optimizer }), data);
  await trainer.trainEpoch();
  await trainer.trainEpoch();
  const out = new Map<string, Float32Array>();
  for (const t of trainer.tensors()) out.set(`${t.layer}.${t.name}`, t.data);
  const step = trainer.adamStep();
  trainer.close();
  return { out, step };
}

const NETS: [string, SparseLayer[]][] = [
  ['a dense output layer', [denseLayer(0, 300, 16, 'relu'), denseLayer(1, 16, 24, 'softmax')]],
  ['an LSH-sampled output layer', [denseLayer(0, 300, 16, 'relu'), sparseLayer(1, 16, 24, 'softmax', 0.5, 'simhash', 3, 2, 8)]],
];

for (const [name, layers] of NETS) {
  test(`training with ${name}: adam equals dense-adam over 40 steps; lazy-adam does not`, async () => {
    const dense = await trainWith('dense-adam', layers);
    const ours = await trainWith('adam', layers);
    const lazy = await trainWith('lazy-adam', layers);
    assert.equal(ours.step, 40);
    for (const [key, w] of dense.out) {
      const r = maxRelDiff(ours.out.get(key)!, w, 1e-4);
      assert.ok(r < 1e-3, `${key} differs from dense Adam's by ${r}`);
    }
    const lazyW = maxRelDiff(lazy.out.get('0.w')!, dense.out.get('0.w')!, 1e-4);
    assert.ok(lazyW > 1e-2, `the lazy Adam's first layer differs from dense Adam's (${lazyW})`);
  });
}

test('bad optimiser options and steps are refused with VT_ARGUMENT', async () => {
  const addon = await loadSparseTrainAddon();
  const model = modelAt(addon, 0);
  assert.throws(() => addon.adamStep(model, 1, { ...opts('adam'), optimizer: 7 }), { code: 'VT_ARGUMENT' });
  assert.throws(() => addon.adamStep(model, 1, { ...opts('adam'), beta1: 1 }), { code: 'VT_ARGUMENT' });
  assert.throws(() => addon.setStep(model, 1.5), { code: 'VT_ARGUMENT' });
  assert.throws(() => addon.setStep(model, -1), { code: 'VT_ARGUMENT' });
  addon.close(model);
});
