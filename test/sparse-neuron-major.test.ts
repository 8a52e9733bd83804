/**
 * The neuron-major batch (native-kernels/sparse/train/batched.c) trains the same model as the
 * per-sample HOGWILD pass: the same active sets, loss and gradients (the output layer's bit for bit
 * on one thread, the hidden layer's up to float summation order), the same weights after many Adam
 * steps, the output layer's gradients the same on any thread count, and at sparsity 1.0 the same as
 * a dense output layer. Networks it does not fit (three layers) run per sample either way.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPTIMIZER_CODE, PASS_CODE, loadSparseTrainAddon, type SparseTrainAddon } from '../src/sparse/native.js';
import { nativeLayerConfig } from '../src/sparse/trainer.js';
import type { SparseLayer } from '../src/sparse/layers.js';
import { denseLayer, maxRelDiff, randomRows, sparseLayer, xcFromRows } from './sparse-fixture.js';

const INPUT = 30,
  CLASSES = 400,
  ROWS = 96,
  BATCH = 32;
const data = xcFromRows(randomRows(ROWS, INPUT, CLASSES, 4, 7));
const order = Int32Array.from({ length: ROWS }, (_, i) => i);

function opts(pass: number, optimizer: number = OPTIMIZER_CODE.adam) {
  return { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, aln: 0, optimizer, pass };
}

interface Run {
  stats: Float64Array;
  grads: Map<string, Float32Array>;
  after: Map<string, Float32Array>;
}

/** One batch (gradients read), then `steps` more batches with Adam (weights and moments read). */
function train(addon: SparseTrainAddon, layers: SparseLayer[], pass: number, threads: number, steps: number, optimizer?: number): Run {
  const model = addon.create({ inputDim: INPUT, seed: 3, threads, layers: layers.map((l) => nativeLayerConfig(l)) });
  const d = addon.dataset(data.row, data.idx, data.val, data.lrow, data.labels, INPUT, CLASSES);
  const last = layers.length - 1;
  if (layers[last]!.hash) {
    addon.setAlways(model, last, Int32Array.from([5, 6, 7]));
    addon.index(model, threads, true, 0);
  }
  const o = opts(pass, optimizer);
  const stats = addon.backprop(model, d, order, 0, BATCH, threads, 0, o);
  const grads = new Map<string, Float32Array>();
  layers.forEach((_, l) => {
    for (const n of ['gw', 'gb'] as const) grads.set(`${l}.${n}`, addon.getTensor(model, l, n));
  });
  addon.adamStep(model, threads, o);
  for (let k = 1; k <= steps; k++) {
    addon.backprop(model, d, order, (k * BATCH) % ROWS, BATCH, threads, 0, o);
    addon.adamStep(model, threads, o);
  }
  const after = new Map<string, Float32Array>();
  layers.forEach((_, l) => {
    for (const n of ['w', 'b', 'mw', 'vw'] as const) after.set(`${l}.${n}`, addon.getTensor(model, l, n));
  });
  addon.close(model);
  return { stats, grads, after };
}

const sampled = (act: 'softmax' | 'sigmoid' = 'softmax', sparsity = 0.05, hidden = 16) => [
  denseLayer(0, INPUT, hidden, 'relu'),
  sparseLayer(1, hidden, CLASSES, act, sparsity, 'dwta', 4, 8, 8),
];

/* 128 hidden units: the register-resident backward (batched.c) where the build has AVX-512. */
for (const [act, hidden] of [
  ['softmax', 16],
  ['sigmoid', 16],
  ['softmax', 128],
] as const) {
  test(`one batch, one thread, ${act} output, ${hidden} hidden: neuron-major equals per sample (loss, active sets, gradients)`, async () => {
    const addon = await loadSparseTrainAddon();
    const a = train(addon, sampled(act, 0.05, hidden), PASS_CODE.sample, 1, 0);
    const b = train(addon, sampled(act, 0.05, hidden), PASS_CODE.neuron, 1, 0);
    assert.ok(Math.abs(a.stats[0]! - b.stats[0]!) <= 1e-9 * Math.abs(a.stats[0]!), `loss ${a.stats[0]} vs ${b.stats[0]}`);
    assert.deepEqual(Array.from(b.stats.subarray(1)), Array.from(a.stats.subarray(1)), 'samples, candidates, filled, active, label misses');
    assert.deepEqual(b.grads.get('1.gw'), a.grads.get('1.gw'), 'output weight gradients bit for bit');
    assert.deepEqual(b.grads.get('1.gb'), a.grads.get('1.gb'), 'output bias gradients bit for bit');
    for (const k of ['0.gw', '0.gb']) {
      const r = maxRelDiff(b.grads.get(k)!, a.grads.get(k)!, 1e-6); /* float summation order only */
      assert.ok(r < 1e-4, `${k} differs by ${r}`);
    }
    assert.ok(
      a.grads.get('1.gw')!.some((x) => x !== 0),
      'the control: the batch has output gradients',
    );
  });
}

const OPTIMIZERS = [
  ['adam', OPTIMIZER_CODE.adam],
  ['lazy-adam', OPTIMIZER_CODE['lazy-adam']],
  ['dense-adam', OPTIMIZER_CODE['dense-adam']],
] as const;
for (const [name, optimizer] of OPTIMIZERS) {
  test(`30 Adam steps (${name}), one thread: neuron-major, fused Adam step or not, ends at the per-sample pass's weights and moments`, async () => {
    const addon = await loadSparseTrainAddon();
    const a = train(addon, sampled(), PASS_CODE.sample, 1, 30, optimizer);
    for (const pass of [PASS_CODE.neuron, PASS_CODE['neuron-adam']]) {
      const b = train(addon, sampled(), pass, 1, 30, optimizer);
      for (const [k, v] of a.after) {
        const r = maxRelDiff(b.after.get(k)!, v, 1e-6);
        assert.ok(r < 1e-3, `pass ${pass}: ${k} after 30 steps differs by ${r}`);
      }
    }
  });
}

for (const hidden of [16, 128])
  test(`the fused Adam step (neuron-adam) equals the separate one: a batch, a thread, ${hidden} hidden`, async () => {
    const addon = await loadSparseTrainAddon();
    const a = train(addon, sampled('softmax', 0.05, hidden), PASS_CODE.neuron, 1, 0);
    const b = train(addon, sampled('softmax', 0.05, hidden), PASS_CODE['neuron-adam'], 1, 0);
    for (const k of ['1.w', '1.b', '1.mw', '1.vw']) assert.deepEqual(b.after.get(k), a.after.get(k), k);
    assert.ok(
      b.grads.get('1.gw')!.every((x) => x === 0),
      "fused: the output layer's gradients are never stored",
    );
    assert.ok(
      a.after.get('1.mw')!.some((x) => x !== 0),
      'the control: the step moved the moments',
    );
  });

test("the output layer's gradients do not depend on the thread count (no two threads write one neuron)", async () => {
  const addon = await loadSparseTrainAddon();
  const one = train(addon, sampled(), PASS_CODE.neuron, 1, 0);
  const two = train(addon, sampled(), PASS_CODE.neuron, 2, 0);
  const three = train(addon, sampled(), PASS_CODE.neuron, 3, 0);
  for (const other of [two, three]) {
    assert.deepEqual(other.grads.get('1.gw'), one.grads.get('1.gw'));
    assert.deepEqual(other.grads.get('1.gb'), one.grads.get('1.gb'));
    assert.deepEqual(Array.from(other.stats.subarray(1)), Array.from(one.stats.subarray(1)));
  }
});

test('neuron-major at sparsity 1.0 equals a dense output layer: loss, gradients, one Adam step', async () => {
  const addon = await loadSparseTrainAddon();
  const dense = train(addon, [denseLayer(0, INPUT, 16, 'relu'), denseLayer(1, 16, CLASSES, 'softmax')], PASS_CODE.neuron, 1, 0);
  const sparse = train(addon, sampled('softmax', 1), PASS_CODE.neuron, 1, 0);
  assert.ok(
    Math.abs(sparse.stats[0]! - dense.stats[0]!) < 1e-5 * Math.abs(dense.stats[0]!),
    `loss ${sparse.stats[0]} vs ${dense.stats[0]}`,
  );
  for (const [k, v] of dense.grads) {
    const r = maxRelDiff(sparse.grads.get(k)!, v, 1e-6);
    assert.ok(r < 1e-4, `gradient ${k} differs by ${r}`);
  }
});

test('a three-layer network runs per sample whatever the pass asks (the same gradients either way)', async () => {
  const addon = await loadSparseTrainAddon();
  const layers = [
    denseLayer(0, INPUT, 16, 'relu'),
    denseLayer(1, 16, 12, 'relu'),
    sparseLayer(2, 12, CLASSES, 'softmax', 0.05, 'dwta', 4, 8, 8),
  ];
  const a = train(addon, layers, PASS_CODE.sample, 1, 0);
  const b = train(addon, layers, PASS_CODE.neuron, 1, 0);
  for (const [k, v] of a.grads) assert.deepEqual(b.grads.get(k), v, k);
});
