/** Small in-memory data sets and networks for the sparse-training tests. */
import { seededRng } from '../src/random.js';
import type { XcDataset } from '../src/sparse/xc-reader.js';
import type { SparseLayer } from '../src/sparse/layers.js';
import type { Activation } from '../src/sparse/spec.js';
import type { TrainSettings } from '../src/sparse/trainer.js';

export interface Row {
  readonly labels: readonly number[];
  readonly feats: readonly (readonly [number, number])[];
}

export function xcFromRows(rows: readonly Row[], path = 'memory'): XcDataset {
  const nnz = rows.reduce((s, r) => s + r.feats.length, 0);
  const nl = rows.reduce((s, r) => s + r.labels.length, 0);
  const row = new Float64Array(rows.length + 1),
    lrow = new Float64Array(rows.length + 1);
  const idx = new Int32Array(nnz),
    val = new Float32Array(nnz),
    labels = new Int32Array(nl);
  let f = 0,
    l = 0;
  rows.forEach((r, i) => {
    for (const [j, v] of r.feats) {
      idx[f] = j;
      val[f] = v;
      f++;
    }
    for (const y of r.labels) labels[l++] = y;
    row[i + 1] = f;
    lrow[i + 1] = l;
  });
  return {
    path,
    rows: rows.length,
    row,
    idx,
    val,
    lrow,
    labels,
    header: null,
    sha256: path,
    bytes: 0,
    unlabelled: rows.filter((r) => !r.labels.length).length,
  };
}

/** Random rows: `nnz` distinct features each, 1–2 labels. */
export function randomRows(n: number, input: number, classes: number, nnz: number, seed: number): Row[] {
  const rng = seededRng(seed);
  return Array.from({ length: n }, () => {
    const feats = new Map<number, number>();
    while (feats.size < Math.min(nnz, input)) feats.set(rng.int(0, input - 1), Math.round((rng.next() * 2 - 0.5) * 1000) / 1000);
    const labels = [rng.int(0, classes - 1)];
    if (rng.next() < 0.3 && classes > 1) labels.push((labels[0]! + 1 + rng.int(0, classes - 2)) % classes);
    return { labels, feats: [...feats].sort((a, b) => a[0] - b[0]) };
  });
}

export function denseLayer(index: number, inputDim: number, dim: number, activation: Activation): SparseLayer {
  return { index, inputDim, dim, activation, sparsity: 1, sparsitySource: 'default', hash: null };
}

export function sparseLayer(
  index: number,
  inputDim: number,
  dim: number,
  activation: Activation,
  sparsity: number,
  family: 'simhash' | 'dwta',
  K: number,
  L: number,
  R: number,
): SparseLayer {
  const autotuned = { K, L, R, meetsCoverage: true, meetsCost: true, reason: 'test' };
  return {
    index,
    inputDim,
    dim,
    activation,
    sparsity,
    sparsitySource: 'spec',
    hash: { family, K, L, R, sources: { K: 'flag', L: 'flag', R: 'flag' }, autotuned },
  };
}

export function settings(o: Partial<TrainSettings> = {}): TrainSettings {
  return {
    epochs: 1,
    batch: 16,
    lr: 0.01,
    threads: 1,
    seed: 7,
    hash: 'simhash',
    aln: false,
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
    schedule: { rehashEvery: 0, rebuildEvery: 0 },
    ...o,
  };
}

export function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>, atol = 1e-6): number {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) / (atol + Math.abs(b[i]!));
    if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
  }
  return worst;
}
