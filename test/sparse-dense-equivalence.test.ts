/**
 * A sparse layer at sparsity 1.0 (every neuron selected through the hash tables, computed from
 * the active list) equals the dense layer: forward scores, the gradients of one batch, and one
 * Adam step — for an LSH-sampled output layer and for an LSH-sampled hidden layer (whose
 * successor then reads a sparse input). Both equal a plain float64 TypeScript reference of the same
 * network, and the AVX-512/AVX2 build equals the portable scalar build.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACTIVATION_CODE, MODE_CODE, OPTIMIZER_CODE, loadSparseTrainAddon, type SparseTrainAddon } from '../src/sparse/native.js';
import { nativeLayerConfig } from '../src/sparse/trainer.js';
import type { SparseLayer } from '../src/sparse/layers.js';
import { denseLayer, maxRelDiff, randomRows, sparseLayer, xcFromRows } from './sparse-fixture.js';

const INPUT = 40,
  BATCH = 12;
const data = xcFromRows(randomRows(BATCH, INPUT, 24, 6, 11));
const adam = { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, aln: 0, optimizer: OPTIMIZER_CODE.adam };

function network(sparseHidden: boolean, sparseOut: boolean): SparseLayer[] {
  return [
    denseLayer(0, INPUT, 16, 'relu'),
    sparseHidden ? sparseLayer(1, 16, 20, 'relu', 1, 'simhash', 2, 3, 8) : denseLayer(1, 16, 20, 'relu'),
    sparseOut ? sparseLayer(2, 20, 24, 'softmax', 1, 'dwta', 3, 2, 6) : denseLayer(2, 20, 24, 'softmax'),
  ];
}

interface Snapshot {
  scores: Float32Array;
  loss: number;
  tensors: Map<string, Float32Array>;
}

/** scores, then backprop over the batch (gradients read), then one Adam step (weights and moments read). */
function run(addon: SparseTrainAddon, layers: SparseLayer[], sparseMode: boolean): { before: Snapshot; after: Map<string, Float32Array> } {
  const model = addon.create({ inputDim: INPUT, seed: 5, threads: 1, layers: layers.map((l) => nativeLayerConfig(l)) });
  const d = addon.dataset(data.row, data.idx, data.val, data.lrow, data.labels, INPUT, 24);
  addon.index(model, 1, true, 0);
  const scores = addon.scores(model, d, 0, BATCH, 1, sparseMode ? MODE_CODE.sparse : MODE_CODE.dense, 1);
  const order = Int32Array.from({ length: BATCH }, (_, i) => i);
  const st = addon.backprop(model, d, order, 0, BATCH, 1, 0, adam);
  const tensors = new Map<string, Float32Array>();
  for (let l = 0; l < layers.length; l++) for (const n of ['gw', 'gb'] as const) tensors.set(`${l}.${n}`, addon.getTensor(model, l, n));
  addon.adamStep(model, 1, adam);
  const after = new Map<string, Float32Array>();
  for (let l = 0; l < layers.length; l++)
    for (const n of ['w', 'b', 'mw', 'vw', 'mb', 'vb'] as const) after.set(`${l}.${n}`, addon.getTensor(model, l, n));
  return { before: { scores, loss: st[0]!, tensors }, after };
}

/** The same network and step in float64, written plainly from the maths. */
function reference(addon: SparseTrainAddon, layers: SparseLayer[]) {
  const model = addon.create({ inputDim: INPUT, seed: 5, threads: 1, layers: layers.map((l) => nativeLayerConfig(l)) });
  const W = layers.map((_, l) => Float64Array.from(addon.getTensor(model, l, 'w')));
  const B = layers.map((_, l) => Float64Array.from(addon.getTensor(model, l, 'b')));
  const gW = W.map((w) => new Float64Array(w.length)),
    gB = B.map((b) => new Float64Array(b.length));
  const touched0 = new Set<number>();
  const scores: number[] = [];
  let loss = 0;
  for (let s = 0; s < BATCH; s++) {
    const a: number[][] = [];
    const x0 = Array.from(B[0]!);
    for (let k = data.row[s]!; k < data.row[s + 1]!; k++)
      for (let o = 0; o < 16; o++) x0[o]! += data.val[k]! * W[0]![data.idx[k]! * 16 + o]!;
    a.push(x0.map((v) => Math.max(0, v)));
    for (let l = 1; l < layers.length; l++) {
      const L = layers[l]!,
        prev = a[l - 1]!;
      const z = Array.from({ length: L.dim }, (_, n) => B[l]![n]! + prev.reduce((acc, v, j) => acc + v * W[l]![n * L.inputDim + j]!, 0));
      if (L.activation === 'relu') a.push(z.map((v) => Math.max(0, v)));
      else {
        const m = Math.max(...z);
        const e = z.map((v) => Math.exp(v - m));
        const sum = e.reduce((p, q) => p + q, 0);
        a.push(e.map((v) => v / sum));
      }
    }
    const p = a[a.length - 1]!;
    scores.push(...p);
    const labels = Array.from(data.labels.subarray(data.lrow[s]!, data.lrow[s + 1]!));
    let delta = p.map((v) => v / BATCH);
    for (const y of labels) {
      delta[y]! -= 1 / labels.length / BATCH;
      loss -= Math.log(p[y]!) / labels.length;
    }
    for (let l = layers.length - 1; l >= 1; l--) {
      const L = layers[l]!,
        prev = a[l - 1]!;
      const din = new Array<number>(L.inputDim).fill(0);
      delta.forEach((g, n) => {
        for (let j = 0; j < L.inputDim; j++) {
          gW[l]![n * L.inputDim + j]! += g * prev[j]!;
          din[j]! += g * W[l]![n * L.inputDim + j]!;
        }
        gB[l]![n]! += g;
      });
      delta = din.map((v, j) => (prev[j]! > 0 ? v : 0));
    }
    for (let k = data.row[s]!; k < data.row[s + 1]!; k++) {
      touched0.add(data.idx[k]!);
      for (let o = 0; o < 16; o++) gW[0]![data.idx[k]! * 16 + o]! += data.val[k]! * delta[o]!;
    }
    delta.forEach((g, o) => {
      gB[0]![o]! += g;
    });
  }
  // One Adam step (t = 1) from zero moments: rows of features not in the batch have no momentum, so they stay.
  const bc1 = 1 - adam.beta1,
    bc2 = Math.sqrt(1 - adam.beta2);
  const step = (w: Float64Array, g: Float64Array, i: number, m: Float64Array, v: Float64Array) => {
    m[i] = (1 - adam.beta1) * g[i]!;
    v[i] = (1 - adam.beta2) * g[i]! * g[i]!;
    w[i]! -= (adam.lr / bc1) * (m[i]! / (Math.sqrt(v[i]!) / bc2 + adam.eps));
  };
  const after = new Map<string, Float64Array>();
  layers.forEach((L, l) => {
    const mw = new Float64Array(W[l]!.length),
      vw = new Float64Array(W[l]!.length),
      mb = new Float64Array(B[l]!.length),
      vb = new Float64Array(B[l]!.length);
    for (let i = 0; i < W[l]!.length; i++) if (l > 0 || touched0.has(Math.floor(i / L.dim))) step(W[l]!, gW[l]!, i, mw, vw);
    for (let i = 0; i < B[l]!.length; i++) step(B[l]!, gB[l]!, i, mb, vb);
    after.set(`${l}.w`, W[l]!);
    after.set(`${l}.b`, B[l]!);
    after.set(`${l}.mw`, mw);
    after.set(`${l}.vw`, vw);
  });
  return { scores: Float64Array.from(scores), loss, gW, gB, after };
}

for (const [name, sh, so] of [
  ['the output layer', false, true],
  ['a hidden layer and the output layer', true, true],
] as const) {
  test(`sparsity 1.0 on ${name} equals the dense network: forward, gradients, one Adam step`, async () => {
    const addon = await loadSparseTrainAddon();
    const dense = run(addon, network(false, false), false);
    const sparse = run(addon, network(sh, so), true);
    assert.ok(
      maxRelDiff(sparse.before.scores, dense.before.scores) < 1e-5,
      `scores differ by ${maxRelDiff(sparse.before.scores, dense.before.scores)}`,
    );
    assert.ok(Math.abs(sparse.before.loss - dense.before.loss) < 1e-5 * Math.abs(dense.before.loss));
    for (const [k, v] of dense.before.tensors) {
      const r = maxRelDiff(sparse.before.tensors.get(k)!, v, 1e-6);
      assert.ok(r < 1e-4, `gradient ${k} differs by ${r}`);
    }
    for (const [k, v] of dense.after) {
      const r = maxRelDiff(sparse.after.get(k)!, v, 1e-6);
      assert.ok(r < 1e-4, `after Adam, ${k} differs by ${r}`);
    }
  });
}

test('the native dense network equals a float64 reference of the same maths (forward, gradients, Adam step)', async () => {
  const addon = await loadSparseTrainAddon();
  const layers = network(false, false);
  const ours = run(addon, layers, false);
  const ref = reference(addon, layers);
  assert.ok(maxRelDiff(ours.before.scores, ref.scores) < 1e-4, `scores differ by ${maxRelDiff(ours.before.scores, ref.scores)}`);
  assert.ok(Math.abs(ours.before.loss - ref.loss) < 1e-4 * ref.loss, `loss ${ours.before.loss} vs ${ref.loss}`);
  layers.forEach((_, l) => {
    assert.ok(maxRelDiff(ours.before.tensors.get(`${l}.gw`)!, ref.gW[l]!, 1e-5) < 1e-3, `layer ${l} weight gradient`);
    assert.ok(maxRelDiff(ours.before.tensors.get(`${l}.gb`)!, ref.gB[l]!, 1e-5) < 1e-3, `layer ${l} bias gradient`);
    for (const n of ['w', 'b', 'mw', 'vw']) {
      const r = maxRelDiff(ours.after.get(`${l}.${n}`)!, ref.after.get(`${l}.${n}`)!, 1e-5);
      assert.ok(r < 1e-3, `layer ${l} ${n} after Adam differs by ${r}`);
    }
  });
  assert.equal(ACTIVATION_CODE.softmax, 3);
});

test('the vector build (AVX2/AVX-512) and the portable scalar build compute the same step', async () => {
  const fast = await loadSparseTrainAddon('native');
  const plain = await loadSparseTrainAddon('portable');
  assert.equal(plain.isa(), 'scalar');
  const layers = network(true, true);
  const a = run(fast, layers, true),
    b = run(plain, layers, true);
  assert.ok(maxRelDiff(a.before.scores, b.before.scores) < 1e-5);
  for (const [k, v] of b.after) assert.ok(maxRelDiff(a.after.get(k)!, v, 1e-6) < 1e-4, `${k} differs between ${fast.isa()} and scalar`);
});
