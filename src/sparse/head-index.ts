/**
 * Where a sparse head's hash index comes from:
 *  - the one `veltair train` exported beside the model (lsh-index.json/bin), when its layer's
 *    weightsSha256 is that of the weights being compiled: its tables are sliced out as stored;
 *  - else built here from the layer's weights with the training addon's own hashing (DWTA by
 *    default, as in training), K/L/R autotuned by BOLT's rule at the densest sparse version's
 *    sparsity (the sparser versions trim the same candidates by table count).
 */
import { autotuneKLR } from './autotune.js';
import type { HeadArrays, HeadMeta, HashFamily } from '../sparse-head/format.js';
import type { IndexLayer, LoadedIndex } from './hash-index.js';
import { HASH_CODE } from '../sparse-head/addon.js';
import type { SparseHeadAddon } from '../sparse-head/native-head.js';

export interface HeadIndex {
  readonly hash: HeadMeta['hash'];
  readonly index: HeadMeta['index'];
  readonly arrays: HeadArrays;
}

export interface BuildIndexOptions {
  /** The sparsity the tables must cover (BOLT's coverage rule L·n/2^K ≥ s·n). */
  readonly sparsity: number;
  readonly family: HashFamily;
  readonly seed: bigint;
  readonly threads: number;
  /** Replace the autotuned table count L (more tables: more candidates to trim from, more hashing). */
  readonly tables?: number;
}

export function buildHeadIndex(
  addon: SparseHeadAddon,
  weight: Float32Array,
  bias: Float32Array,
  n: number,
  d: number,
  o: BuildIndexOptions,
): HeadIndex {
  const tuned = autotuneKLR(n, d, o.sparsity);
  const { K, R } = tuned;
  const L = o.tables ?? tuned.L;
  const reason = o.tables ? `L=${L} given by --sparse-tables; K, R autotuned` : tuned.reason;
  const t = addon.headTables({ family: HASH_CODE[o.family], K, L, R, seed: o.seed, threads: o.threads }, weight, n, d);
  return {
    hash: { family: o.family, K, L, R, seed: o.seed.toString(), rowBytes: t.rowBytes, perTable: t.perTable },
    index: {
      source: 'compiled',
      note: `built at compile time from the layer's weights (${o.family}, K=${K} L=${L} R=${R} for sparsity ${o.sparsity}: ${reason})`,
    },
    arrays: { weight, bias, signs: t.signs ?? null, bins: t.bins ?? null, offsets: t.offsets, ids: t.ids, always: null },
  };
}

/** The trained index's layer whose weights are these (same sha256), if any. */
export function trainedLayerFor(loaded: LoadedIndex, weightsSha256: string, n: number, d: number): IndexLayer | undefined {
  return loaded.index.layers.find((l) => l.weightsSha256 === weightsSha256 && l.dim === n && l.inputDim === d);
}

export function headIndexFromTrained(
  loaded: LoadedIndex,
  layer: IndexLayer,
  weight: Float32Array,
  bias: Float32Array,
  where: string,
): HeadIndex {
  const slice = <T>(b: { offset: number; bytes: number }, make: (buf: ArrayBuffer, off: number, len: number) => T, elem: number): T => {
    const copy = new Uint8Array(b.bytes);
    copy.set(loaded.bin.subarray(b.offset, b.offset + b.bytes));
    return make(copy.buffer, 0, b.bytes / elem);
  };
  const u32 = (buf: ArrayBuffer, o: number, l: number) => new Uint32Array(buf, o, l);
  return {
    hash: {
      family: layer.family,
      K: layer.K,
      L: layer.L,
      R: layer.R,
      seed: layer.seed,
      rowBytes: layer.simhash?.rowBytes ?? 0,
      perTable: layer.dwta?.perTable ?? 0,
    },
    index: {
      source: 'trained',
      note: `the index veltair train exported (${where}), layer ${layer.layer}, trained at sparsity ${layer.sparsity}`,
    },
    arrays: {
      weight,
      bias,
      signs: layer.simhash ? slice(layer.simhash.signs, (buf, o, l) => new Uint8Array(buf, o, l), 1) : null,
      bins: layer.dwta ? slice(layer.dwta.bins, (buf, o, l) => new Int32Array(buf, o, l), 4) : null,
      offsets: slice(layer.tables.offsets, u32, 4),
      ids: slice(layer.tables.ids, u32, 4),
      always: null,
    },
  };
}
