/**
 * TypeScript's handle on the sparse-training addon (native-kernels/sparse/addon.c): the exports'
 * types, loading, and the few numeric codes both sides share (activations, hash families, modes).
 */
import { createRequire } from 'node:module';
import { internalError } from '../errors.js';
import { ensureSparseAddon, type SparseBuild } from './native-build.js';

export type Handle = object;

/** Must match the VS_ACT_* / VS_HASH_* / VS_MODE_* enums in native-kernels/sparse/vs.h and vs_model.h. */
export const ACTIVATION_CODE = { relu: 0, linear: 1, tanh: 2, softmax: 3, sigmoid: 4 } as const;
export const HASH_CODE = { simhash: 0, dwta: 1 } as const;
export const MODE_CODE = { dense: 1, sparse: 2 } as const;

export interface NativeLayerConfig {
  readonly dim: number;
  readonly act: number;
  readonly sparse: number;
  readonly sparsity: number;
  readonly family: number;
  readonly K: number;
  readonly L: number;
  readonly R: number;
}

export interface AdamOptions {
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly aln: number;
}

export type TensorName = 'w' | 'b' | 'gw' | 'gb' | 'mw' | 'vw' | 'mb' | 'vb';

export interface HashInfo {
  readonly family: number;
  readonly K: number;
  readonly L: number;
  readonly R: number;
  readonly dim: number;
  readonly rowBytes: number;
  readonly perTable: number;
  readonly seed: bigint;
  readonly signs?: Uint8Array;
  readonly bins?: Int32Array;
}

export interface TablesDump {
  readonly offsets: Uint32Array;
  readonly ids: Uint32Array;
  readonly seen: Uint32Array;
}

/** Hash functions and compact tables drawn for one output layer (headTables). */
export interface HeadTables {
  readonly signs?: Uint8Array;
  readonly bins?: Int32Array;
  readonly rowBytes: number;
  readonly perTable: number;
  readonly offsets: Uint32Array;
  readonly ids: Uint32Array;
}

export interface HeadConfig {
  readonly n: number;
  readonly d: number;
  readonly family: number;
  readonly K: number;
  readonly L: number;
  readonly seed: bigint;
  readonly rowBytes: number;
  readonly perTable: number;
}

export interface HeadTopK {
  readonly values: Float32Array;
  readonly indices: Int32Array;
  /** Neurons scored over all rows. */
  readonly scored: number;
}

export interface SparseAddon {
  isa(): string;
  codes(): { activation: Record<string, number>; hash: Record<string, number>; mode: Record<string, number> };
  create(config: { inputDim: number; seed: number; threads: number; layers: readonly NativeLayerConfig[] }): Handle;
  dataset(row: Float64Array, idx: Int32Array, val: Float32Array, lrow: Float64Array, labels: Int32Array, inputDim: number, outputDim: number): Handle;
  shuffle(order: Int32Array, seed: number, epoch: number): void;
  /** [loss, samples, unlabelled, union, filled, active, queries, labelMissed, alnInserts] (sums) */
  backprop(model: Handle, data: Handle, order: Int32Array, start: number, count: number, threads: number, epoch: number, opts: AdamOptions): Float64Array;
  adamStep(model: Handle, threads: number, opts: AdamOptions): void;
  index(model: Handle, threads: number, all: boolean, round: number): void;
  /** [counted, p1, p5, r5, loss, lossCounted, activeSum] (sums) */
  evaluate(model: Handle, data: Handle, start: number, count: number, threads: number, mode: number, sparsity: number): Float64Array;
  scores(model: Handle, data: Handle, start: number, count: number, threads: number, mode: number, sparsity: number): Float32Array;
  getTensor(model: Handle, layer: number, name: TensorName): Float32Array;
  setTensor(model: Handle, layer: number, name: TensorName, values: Float32Array): void;
  getStep(model: Handle): number;
  setStep(model: Handle, step: number): void;
  hashInfo(model: Handle, layer: number): HashInfo;
  tables(model: Handle, layer: number): TablesDump;
  query(model: Handle, layer: number, x: Float32Array): { ids: Uint32Array; codes: Uint32Array };
  close(model: Handle): void;
  /** Sparse inference (native-kernels/sparse/infer.c): draw a hash and build tables over w [n x d], neuron-major. */
  headTables(config: { family: number; K: number; L: number; R: number; seed: bigint; threads: number }, w: Float32Array, n: number, d: number): HeadTables;
  /** A head over the given arrays, read in place (nothing rehashed); the addon checks every shape and id. */
  headCreate(config: HeadConfig, w: Float32Array, b: Float32Array, signs: Uint8Array | null, bins: Int32Array | null, offsets: Uint32Array,
    ids: Uint32Array): Handle;
  /** Top k of each of `rows` inputs x [rows x d]; budget 0 (or >= n) scores every neuron (dense). */
  headTopK(head: Handle, x: Float32Array, rows: number, k: number, budget: number): HeadTopK;
  /** The same on a libuv worker thread. The head takes one query at a time: another call meanwhile throws VT_BUSY. */
  headTopKAsync(head: Handle, x: Float32Array, rows: number, k: number, budget: number): Promise<HeadTopK>;
  /** Pin the calling (JS) thread to `core` (false if refused); -1 restores the affinity it had before the first pin. */
  pinCallingThread(core: number): boolean;
}

const loaded = new Map<SparseBuild, SparseAddon>();

/** The codes above are the TS half of a contract whose C half is vs.h: refuse a build where they differ. */
export function checkCodes(c: ReturnType<SparseAddon['codes']>, path: string): void {
  const want = { activation: ACTIVATION_CODE, hash: HASH_CODE, mode: MODE_CODE };
  for (const [k, table] of Object.entries(want)) {
    const got = (c as Record<string, Record<string, number>>)[k] ?? {};
    if (JSON.stringify(Object.entries(table).sort()) !== JSON.stringify(Object.entries(got).sort())) {
      throw internalError(`the sparse addon ${path} was built with ${k} codes ${JSON.stringify(got)}, but native.ts says ${JSON.stringify(table)}`);
    }
  }
}

export async function loadSparseAddon(build: SparseBuild = 'native'): Promise<SparseAddon> {
  const have = loaded.get(build);
  if (have) return have;
  const path = await ensureSparseAddon({ build });
  const addon = createRequire(import.meta.url)(path) as SparseAddon;
  checkCodes(addon.codes(), path);
  loaded.set(build, addon);
  return addon;
}
