/**
 * TypeScript's handle on the training add-on (native-kernels/sparse/train/): its exports' types,
 * its numeric codes (activations, modes, optimizers, passes) and loading it. The loader and the hash
 * family codes it shares with the serving head's add-on live in src/sparse-head/addon.ts.
 */
import { HASH_CODE, loadSparseAddon } from '../sparse-head/addon.js';
import type { SparseBuild } from '../sparse-head/native-build.js';

export type Handle = object;

/** Must match the VS_ACT_* / VS_HASH_* / VS_MODE_* enums in native-kernels/sparse/vs.h and vs_model.h. */
export const ACTIVATION_CODE = { relu: 0, linear: 1, tanh: 2, softmax: 3, sigmoid: 4 } as const;
export const MODE_CODE = { dense: 1, sparse: 2 } as const;
/**
 * Must match VS_OPT_* in vs.h. 'adam' equals dense Adam (untouched rows catch up when next read, adam.c);
 * 'lazy-adam' updates only the rows a batch touched (SLIDE/BOLT's, kept for comparison); 'dense-adam' updates
 * every row every step (the reference 'adam' is tested against; as slow as PyTorch's).
 */
export const OPTIMIZER_CODE = { adam: 0, 'lazy-adam': 1, 'dense-adam': 2 } as const;
export type Optimizer = keyof typeof OPTIMIZER_CODE;
/**
 * How a batch is computed (native-kernels/sparse/train/batched.c): per sample (HOGWILD), or neuron-major where the network fits,
 * or neuron-major with the output layer's Adam step taken in backprop (its gradients are then never stored: adamStep must follow).
 */
export const PASS_CODE = { sample: 0, neuron: 1, 'neuron-adam': 2 } as const;
export type Pass = keyof typeof PASS_CODE;

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
  /** OPTIMIZER_CODE */
  readonly optimizer: number;
  /** PASS_CODE (absent: neuron-major where it fits) */
  readonly pass?: number;
  /** Fraction of the output layer's active target kept for uniformly random negatives (absent or 0: none; pass.c). */
  readonly uniform?: number;
  /** 1: uniformly random negatives' logits get + log(pool / picked) (logQ; pass.c). */
  readonly logq?: number;
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

/** The training add-on (native-kernels/sparse/train/addon.c). */
export interface SparseTrainAddon {
  isa(): string;
  codes(): {
    activation: Record<string, number>;
    hash: Record<string, number>;
    mode: Record<string, number>;
    optimizer: Record<string, number>;
    pass: Record<string, number>;
  };
  create(config: { inputDim: number; seed: number; threads: number; layers: readonly NativeLayerConfig[] }): Handle;
  dataset(
    row: Float64Array,
    idx: Int32Array,
    val: Float32Array,
    lrow: Float64Array,
    labels: Int32Array,
    inputDim: number,
    outputDim: number,
  ): Handle;
  shuffle(order: Int32Array, seed: number, epoch: number): void;
  /** [loss, samples, unlabelled, union, filled, active, queries, labelMissed, alnInserts] (sums) */
  backprop(
    model: Handle,
    data: Handle,
    order: Int32Array,
    start: number,
    count: number,
    threads: number,
    epoch: number,
    opts: AdamOptions,
  ): Float64Array;
  adamStep(model: Handle, threads: number, opts: AdamOptions): void;
  index(model: Handle, threads: number, all: boolean, round: number): void;
  /** [counted, p1, p5, r5, loss, lossCounted, activeSum] (sums) */
  evaluate(model: Handle, data: Handle, start: number, count: number, threads: number, mode: number, sparsity: number): Float64Array;
  scores(model: Handle, data: Handle, start: number, count: number, threads: number, mode: number, sparsity: number): Float32Array;
  getTensor(model: Handle, layer: number, name: TensorName): Float32Array;
  setTensor(model: Handle, layer: number, name: TensorName, values: Float32Array): void;
  getStep(model: Handle): number;
  setStep(model: Handle, step: number): void;
  /** Neurons every training sample computes on sparse layer `layer` (the most frequent labels). */
  setAlways(model: Handle, layer: number, ids: Int32Array): void;
  hashInfo(model: Handle, layer: number): HashInfo;
  tables(model: Handle, layer: number): TablesDump;
  query(model: Handle, layer: number, x: Float32Array): { ids: Uint32Array; codes: Uint32Array };
  /** The epoch profile's counters since the last reset (epoch-breakdown.ts reads them); `reset` zeroes them. */
  profile(model: Handle, reset: boolean): Float64Array;
  close(model: Handle): void;
}

/** The training add-on (built on first use). */
export function loadSparseTrainAddon(build: SparseBuild = 'native'): Promise<SparseTrainAddon> {
  return loadSparseAddon('train', build, {
    activation: ACTIVATION_CODE,
    hash: HASH_CODE,
    mode: MODE_CODE,
    optimizer: OPTIMIZER_CODE,
    pass: PASS_CODE,
  });
}
