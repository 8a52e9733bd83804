/**
 * Uniformly random negatives and the sampled-softmax (logQ) correction of a sampled output layer (pass.c): a random pick
 * from a pool of P neurons, m of them picked, has its logit raised by log(P/m). Tiny cases where the formula gives the
 * answer: with every logit 0 the corrected loss is the full softmax's, log(classes), whichever neurons were picked
 * (uncorrected: log(active)); and at sparsity 1 (the pool is all picked, the offset log(1) = 0) the corrected path equals
 * the dense layer's gradients.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPTIMIZER_CODE, PASS_CODE, loadSparseTrainAddon, type AdamOptions } from '../src/sparse/native.js';
import { nativeLayerConfig } from '../src/sparse/trainer.js';
import { denseLayer, maxRelDiff, randomRows, sparseLayer, xcFromRows } from './sparse-fixture.js';

const INPUT = 30,
  CLASSES = 400,
  BATCH = 16;
const base = { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, aln: 0, optimizer: OPTIMIZER_CODE.adam };

/** Mean loss per sample and mean active neurons of one batch with the output layer's weights and biases all 0. */
async function zeroLogitBatch(opts: AdamOptions): Promise<{ loss: number; active: number }> {
  const addon = await loadSparseTrainAddon();
  const layers = [denseLayer(0, INPUT, 8, 'relu'), sparseLayer(1, 8, CLASSES, 'softmax', 0.05, 'simhash', 4, 2, 4)];
  const data = xcFromRows(randomRows(BATCH, INPUT, 300, 4, 5));
  const model = addon.create({ inputDim: INPUT, seed: 2, threads: 1, layers: layers.map((l) => nativeLayerConfig(l)) });
  const d = addon.dataset(data.row, data.idx, data.val, data.lrow, data.labels, INPUT, CLASSES);
  addon.setTensor(model, 1, 'w', new Float32Array(8 * CLASSES));
  addon.setTensor(model, 1, 'b', new Float32Array(CLASSES));
  addon.index(model, 1, true, 0);
  const st = addon.backprop(
    model,
    d,
    Int32Array.from({ length: BATCH }, (_, i) => i),
    0,
    BATCH,
    1,
    0,
    opts,
  );
  addon.close(model);
  return { loss: st[0]! / st[1]!, active: st[5]! / st[6]! };
}

test('logQ: with all logits 0 the sampled loss is the full softmax loss, log(classes), in both passes', async () => {
  for (const pass of [PASS_CODE.sample, PASS_CODE['neuron-adam']]) {
    const corrected = await zeroLogitBatch({ ...base, pass, uniform: 0.25, logq: 1 });
    assert.ok(corrected.active < CLASSES / 10, `a sampled batch (${corrected.active} active of ${CLASSES})`);
    assert.ok(
      Math.abs(corrected.loss - Math.log(CLASSES)) < 1e-4,
      `corrected loss ${corrected.loss} vs log(${CLASSES}) ${Math.log(CLASSES)}`,
    );
    const plain = await zeroLogitBatch({ ...base, pass, uniform: 0.25, logq: 0 });
    assert.ok(
      Math.abs(plain.loss - Math.log(plain.active)) < 1e-4,
      `uncorrected loss ${plain.loss} vs log(active) ${Math.log(plain.active)}`,
    );
  }
});

test('logQ with uniform negatives at sparsity 1 equals the dense layer: loss and one batch of gradients', async () => {
  const addon = await loadSparseTrainAddon();
  const data = xcFromRows(randomRows(BATCH, INPUT, 24, 6, 11));
  const run = (sparse: boolean, opts: AdamOptions) => {
    const layers = [
      denseLayer(0, INPUT, 16, 'relu'),
      sparse ? sparseLayer(1, 16, 24, 'softmax', 1, 'dwta', 3, 2, 6) : denseLayer(1, 16, 24, 'softmax'),
    ];
    const model = addon.create({ inputDim: INPUT, seed: 5, threads: 1, layers: layers.map((l) => nativeLayerConfig(l)) });
    const d = addon.dataset(data.row, data.idx, data.val, data.lrow, data.labels, INPUT, 24);
    addon.index(model, 1, true, 0);
    const st = addon.backprop(
      model,
      d,
      Int32Array.from({ length: BATCH }, (_, i) => i),
      0,
      BATCH,
      1,
      0,
      opts,
    );
    const g = ['gw', 'gb'].flatMap((n) => [0, 1].map((l) => addon.getTensor(model, l, n as 'gw' | 'gb')));
    addon.close(model);
    return { loss: st[0]!, g };
  };
  const dense = run(false, base);
  for (const pass of [PASS_CODE.sample, PASS_CODE.neuron]) {
    const sampled = run(true, { ...base, pass, uniform: 0.25, logq: 1 });
    assert.ok(Math.abs(sampled.loss - dense.loss) < 1e-4 * Math.abs(dense.loss), `loss ${sampled.loss} vs dense ${dense.loss}`);
    sampled.g.forEach((g, i) => assert.ok(maxRelDiff(g, dense.g[i]!) < 1e-4, `gradient ${i}: ${maxRelDiff(g, dense.g[i]!)}`));
  }
});
