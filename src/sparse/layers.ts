/**
 * From a spec and the command line to the layers that are trained: each layer's width, activation,
 * sparsity (and where it came from), and for LSH-sampled layers the hash family and K/L/R (each
 * autotuned unless overridden). `SparseLayer` is what the native model, the checkpoint, the ONNX
 * export and the hash index all describe.
 */
import { userError } from '../errors.js';
import { autoSparsity, autotuneKLR, bucketCap, costLimitedTables, covers, type Autotuned } from './autotune.js';
import type { Activation, NetworkSpec } from './spec.js';

export type HashFamily = 'simhash' | 'dwta';
export const HASH_FAMILIES: readonly HashFamily[] = ['simhash', 'dwta'];

export type ValueSource = 'autotuned' | 'flag';

export interface LayerHash {
  readonly family: HashFamily;
  readonly K: number;
  readonly L: number;
  readonly R: number;
  readonly sources: { readonly K: ValueSource; readonly L: ValueSource; readonly R: ValueSource };
  /** What the autotuner alone would choose, for the record. */
  readonly autotuned: Autotuned;
}

export interface SparseLayer {
  readonly index: number;
  readonly inputDim: number;
  readonly dim: number;
  readonly activation: Activation;
  readonly sparsity: number;
  readonly sparsitySource: 'spec' | 'flag' | 'auto' | 'default';
  /** null: a dense layer (sparsity 1). */
  readonly hash: LayerHash | null;
}

export interface LayerOptions {
  readonly family: HashFamily;
  readonly K?: number;
  readonly L?: number;
  readonly R?: number;
  /** --sparsity: the output layer's sparsity. */
  readonly outputSparsity?: number;
}

function largestCoveringK(d: number, L: number, s: number): number {
  let K = 1;
  while (2 ** (K + 1) <= d && K + 1 <= 30 && covers(d, K + 1, L, s)) K++;
  return K;
}

function layerHash(d: number, dPrev: number, s: number, o: LayerOptions): LayerHash {
  const autotuned = autotuneKLR(d, dPrev, s);
  const K = o.K ?? (o.L !== undefined ? largestCoveringK(d, o.L, s) : autotuned.K);
  const L = o.L ?? (o.K !== undefined ? Math.max(1, costLimitedTables(d, K, s)) : autotuned.L);
  const R = o.R ?? bucketCap(d, K);
  return {
    family: o.family,
    K,
    L,
    R,
    autotuned,
    sources: {
      K: o.K !== undefined ? 'flag' : 'autotuned',
      L: o.L !== undefined ? 'flag' : 'autotuned',
      R: o.R !== undefined ? 'flag' : 'autotuned',
    },
  };
}

export function resolveLayers(spec: NetworkSpec, o: LayerOptions): SparseLayer[] {
  const last = spec.layers.length - 1;
  if (o.outputSparsity !== undefined && last === 0 && o.outputSparsity < 1) {
    throw userError(
      'BAD_ARGUMENT',
      `--sparsity ${o.outputSparsity}: this network has one layer, which reads the raw sparse features and is always dense`,
      'add a hidden layer to the spec (e.g. 128 relu) so the output layer can be LSH-sampled',
    );
  }
  let prev = spec.input;
  return spec.layers.map((l, index) => {
    let sparsity: number;
    let sparsitySource: SparseLayer['sparsitySource'];
    if (index === last && o.outputSparsity !== undefined) {
      sparsity = o.outputSparsity;
      sparsitySource = 'flag';
    } else if (l.sparsity !== undefined) {
      sparsity = l.sparsity;
      sparsitySource = 'spec';
    } else if (index === last && index > 0) {
      sparsity = autoSparsity(l.dim);
      sparsitySource = 'auto';
    } else {
      sparsity = 1;
      sparsitySource = 'default';
    }
    const layer: SparseLayer = {
      index,
      inputDim: prev,
      dim: l.dim,
      activation: l.activation,
      sparsity,
      sparsitySource,
      hash: sparsity < 1 ? layerHash(l.dim, prev, sparsity, o) : null,
    };
    prev = l.dim;
    return layer;
  });
}

/** Neurons a sparse layer computes per input. */
export function activeTarget(l: SparseLayer): number {
  return Math.min(l.dim, Math.max(1, Math.ceil(l.sparsity * l.dim)));
}

/** One line per layer for the user: what was chosen and why. */
export function describeLayer(l: SparseLayer): string {
  const head = `layer ${l.index}: ${l.inputDim} → ${l.dim} ${l.activation}`;
  if (!l.hash) return `${head}, dense`;
  const h = l.hash;
  const src = (k: 'K' | 'L' | 'R') => (h.sources[k] === 'flag' ? ' (--' + k + ')' : '');
  const from = { spec: 'from the spec', flag: 'from --sparsity', auto: `autotuned from ${l.dim} classes`, default: '' }[l.sparsitySource];
  const tuned =
    h.sources.K === 'autotuned' && h.sources.L === 'autotuned' && h.sources.R === 'autotuned'
      ? `autotuned: ${h.autotuned.reason}`
      : `autotuner's choice K=${h.autotuned.K} L=${h.autotuned.L} R=${h.autotuned.R}`;
  return (
    `${head}, sparsity ${l.sparsity} (${from}; ${activeTarget(l)} neurons per input), ` +
    `${h.family} K=${h.K}${src('K')} L=${h.L}${src('L')} R=${h.R}${src('R')} [${tuned}]`
  );
}
