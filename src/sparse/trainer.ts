/**
 * A network being trained: the native model, its data, and the epoch loop's pieces — one epoch
 * of HOGWILD mini-batches with the table schedule, dense and sparse evaluation, the tensors a
 * checkpoint holds, and the export. `veltair train` (run.ts) drives it epoch by epoch with
 * checkpoints; the benchmark drives it epoch by epoch interleaved with PyTorch.
 */
import { VERSION } from '../version.js';
import { internalError } from '../errors.js';
import { epochProfile, type EpochProfile } from './epoch-breakdown.js';
import { exportOnnx, type LayerWeights } from './export-onnx.js';
import { activeTarget, type HashFamily, type SparseLayer } from './layers.js';
import { HASH_CODE } from '../sparse-head/addon.js';
import {
  ACTIVATION_CODE,
  MODE_CODE,
  OPTIMIZER_CODE,
  PASS_CODE,
  loadSparseTrainAddon,
  type AdamOptions,
  type Handle,
  type Optimizer,
  type Pass,
  type SparseTrainAddon,
  type TensorName,
} from './native.js';
import { indexAction, type TableRefresh } from './table-refresh.js';
import type { CheckpointTensor } from './checkpoint.js';
import type { XcDataset } from './xc-reader.js';

/** `veltair train`'s defaults (the benchmark uses the same). */
export const TRAIN_DEFAULTS = {
  epochs: 5,
  batch: 256,
  lr: 0.001,
  seed: 1,
  hash: 'dwta' as HashFamily,
  beta1: 0.9,
  beta2: 0.999,
  eps: 1e-8,
};

export interface TrainSettings {
  readonly epochs: number;
  readonly batch: number;
  readonly lr: number;
  readonly threads: number;
  readonly seed: number;
  readonly hash: HashFamily;
  readonly aln: boolean;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly schedule: TableRefresh;
  /** 'adam' (the default) equals dense Adam; 'lazy-adam' and 'dense-adam' are for comparison (native.ts). */
  readonly optimizer?: Optimizer;
  /** How many of the most frequent labels every sample computes on a sampled output layer (default: frequentDefault). */
  readonly frequentLabels?: number;
  /**
   * 'neuron-adam' (the default: neuron-major batches where the network fits, the output layer's Adam step fused into them),
   * 'neuron' (neuron-major, the Adam step apart) or 'sample' (per-sample HOGWILD), for comparison (native.ts).
   */
  readonly pass?: Pass;
  /**
   * Fraction of a sampled output layer's active neurons drawn uniformly at random instead of from the tables
   * (default: UNIFORM_DEFAULT), and whether their logits get the sampled-softmax correction log(pool / picked)
   * (default true; it also applies to the random fill when the tables return too few). native-kernels/sparse/train/pass.c.
   */
  readonly uniformNegatives?: number;
  readonly logQ?: boolean;
}

/**
 * The most frequent labels a sampled output layer computes for every training sample, beside the
 * sample's own labels and the tables' candidates: 1/16 of its active neurons (native-kernels/sparse/
 * train/pass.c says why).
 */
export function frequentDefault(l: SparseLayer): number {
  return l.hash ? Math.ceil(activeTarget(l) / 16) : 0;
}

/**
 * TrainSettings.uniformNegatives' default for a softmax output (sigmoid outputs: none, not measured). With the tables'
 * candidates only, labels they never return for an input are never pushed down by it: debian-packages P@5 stayed
 * 2.7-3.5 points under dense training; a quarter of the active set uniformly random, logQ-corrected, closed it
 *.
 */
export const UNIFORM_DEFAULT = 0.25;

/** The `n` labels that occur most often in `labels` (ties: the lower id), of `classes`. */
export function mostFrequent(labels: Int32Array, classes: number, n: number): Int32Array {
  const count = new Float64Array(classes);
  for (const y of labels) count[y]!++;
  const ids = Array.from({ length: classes }, (_, i) => i).filter((i) => count[i]! > 0);
  ids.sort((a, b) => count[b]! - count[a]! || a - b);
  return Int32Array.from(ids.slice(0, n));
}

export interface LshStats {
  /** Distinct neurons the tables returned per query, before trimming or filling. */
  readonly meanCandidates: number;
  /** Random neurons added per query because the tables returned too few. */
  readonly meanFilled: number;
  readonly meanActive: number;
  /** Fraction of label neurons the tables did not return (added anyway in training). */
  readonly labelMissRate: number;
  readonly alnInserts: number;
  readonly rebuilds: number;
  readonly rehashes: number;
  readonly indexSeconds: number;
}

export interface EpochTraining {
  readonly epoch: number;
  readonly loss: number;
  readonly samples: number;
  readonly unlabelled: number;
  readonly seconds: number;
  readonly lsh: LshStats | null;
  /** Where the epoch's time went (epoch-breakdown.ts). */
  readonly profile: EpochProfile;
}

export interface EvalResult {
  readonly mode: 'dense' | 'sparse';
  readonly sparsity: number;
  readonly samples: number;
  readonly 'precision@1': number;
  readonly 'precision@5': number;
  readonly 'recall@5': number;
  /** Dense softmax cross-entropy over all classes (null for sparse evaluation or sigmoid outputs). */
  readonly loss: number | null;
  readonly meanActive: number;
  readonly seconds: number;
}

export interface Trainer {
  readonly layers: readonly SparseLayer[];
  readonly isa: string;
  epochsDone(): number;
  adamStep(): number;
  trainEpoch(onBatch?: (done: number, total: number) => Promise<void> | void): Promise<EpochTraining>;
  evaluate(data: XcDataset, mode: 'dense' | 'sparse', sparsity?: number): EvalResult;
  /** Output probabilities of rows [start, start+count) of `data`. */
  scores(data: XcDataset, start: number, count: number, mode: 'dense' | 'sparse', sparsity?: number): Float32Array;
  weights(): LayerWeights[];
  tensors(): CheckpointTensor[];
  restore(tensors: readonly CheckpointTensor[], epochsDone: number, adamStep: number): void;
  onnx(): Uint8Array;
  /** Rebuild the tables from the current weights and read them, for the hash index. */
  indexDump(): { layer: SparseLayer; hash: ReturnType<SparseTrainAddon['hashInfo']>; tables: ReturnType<SparseTrainAddon['tables']> }[];
  native(): { addon: SparseTrainAddon; model: Handle };
  dataHandle(data: XcDataset): Handle;
  /** Free the native model now; the trainer cannot be used after. */
  close(): void;
}

/**
 * What a checkpoint holds. The add-on catches every row up to the current step before getTensor reads it
 * (native-kernels/sparse/train/adam.c), so these are the dense-Adam state at the checkpoint's step and no
 * per-row step is stored: the format is unchanged, and a checkpoint written before the catch-up (lazy Adam)
 * loads as the state it holds, every row current at its step (setStep).
 */
const CHECKPOINT_TENSORS: readonly TensorName[] = ['w', 'b', 'mw', 'vw', 'mb', 'vb'];
/** Round ids of the export's rebuild and of an epoch's rebuilds/rehashes, so every one draws its own reservoir randomness. */
const EXPORT_ROUND = 2 ** 52;
const roundId = (epoch: number, k: number) => epoch * 2 ** 20 + k;

export function nativeLayerConfig(l: SparseLayer, forceSparse = false) {
  const h = l.hash;
  return {
    dim: l.dim,
    act: ACTIVATION_CODE[l.activation],
    sparse: h || forceSparse ? 1 : 0,
    sparsity: l.sparsity,
    family: HASH_CODE[h?.family ?? 'simhash'],
    K: h?.K ?? 1,
    L: h?.L ?? 1,
    R: h?.R ?? 1,
  };
}

export async function createTrainer(layers: readonly SparseLayer[], settings: TrainSettings, train: XcDataset): Promise<Trainer> {
  const addon = await loadSparseTrainAddon();
  const inputDim = layers[0]!.inputDim;
  const outputDim = layers[layers.length - 1]!.dim;
  const model = addon.create({ inputDim, seed: settings.seed, threads: settings.threads, layers: layers.map((l) => nativeLayerConfig(l)) });
  const handles = new Map<XcDataset, Handle>();
  const dataHandle = (d: XcDataset): Handle => {
    let h = handles.get(d);
    if (!h) {
      h = addon.dataset(d.row, d.idx, d.val, d.lrow, d.labels, inputDim, outputDim);
      handles.set(d, h);
    }
    return h;
  };
  const trainHandle = dataHandle(train);
  const adam: AdamOptions = {
    lr: settings.lr,
    beta1: settings.beta1,
    beta2: settings.beta2,
    eps: settings.eps,
    aln: settings.aln ? 1 : 0,
    optimizer: OPTIMIZER_CODE[settings.optimizer ?? 'adam'],
    pass: PASS_CODE[settings.pass ?? 'neuron-adam'],
    uniform: settings.uniformNegatives ?? (layers[layers.length - 1]!.activation === 'softmax' ? UNIFORM_DEFAULT : 0),
    logq: (settings.logQ ?? true) ? 1 : 0,
  };
  const sparse = layers.some((l) => l.hash);
  const output = layers[layers.length - 1]!;
  const frequent = output.hash ? (settings.frequentLabels ?? frequentDefault(output)) : 0;
  if (frequent > 0) addon.setAlways(model, output.index, mostFrequent(train.labels, output.dim, frequent));
  const order = new Int32Array(train.rows);
  const pauseAt = parsePauseHook(process.env['VELTAIR_TRAIN_PAUSE_AT']);
  let epochs = 0;

  async function trainEpoch(onBatch?: (done: number, total: number) => Promise<void> | void): Promise<EpochTraining> {
    const epoch = epochs;
    addon.profile(model, true);
    const t0 = performance.now();
    addon.shuffle(order, settings.seed, epoch);
    let indexSeconds = 0,
      rebuilds = 0,
      rehashes = 0,
      k = 0;
    const index = (all: boolean) => {
      const i0 = performance.now();
      addon.index(model, settings.threads, all, roundId(epoch, k++));
      indexSeconds += (performance.now() - i0) / 1000;
      if (all) rebuilds++;
      else rehashes++;
    };
    if (sparse) index(true);
    const sums = new Float64Array(9);
    const batches = Math.ceil(train.rows / settings.batch);
    for (let b = 0, start = 0; start < train.rows; b++, start += settings.batch) {
      const count = Math.min(settings.batch, train.rows - start);
      const st = addon.backprop(model, trainHandle, order, start, count, settings.threads, epoch, adam);
      addon.adamStep(model, settings.threads, adam);
      for (let i = 0; i < 9; i++) sums[i]! += st[i]!;
      if (sparse) {
        const action = indexAction(settings.schedule, start, start + count, train.rows);
        if (action) index(action === 'rebuild');
      }
      if (pauseAt && pauseAt.epoch === epoch + 1 && pauseAt.batch === b + 1) await pauseForever(epoch + 1, b + 1);
      if (onBatch) await onBatch(b + 1, batches);
    }
    const seconds = (performance.now() - t0) / 1000;
    epochs++;
    const labelled = sums[1]! - sums[2]!;
    const queries = sums[6]!;
    return {
      epoch: epochs,
      loss: labelled > 0 ? sums[0]! / labelled : 0,
      samples: sums[1]!,
      unlabelled: sums[2]!,
      seconds,
      profile: epochProfile(addon.profile(model, false), seconds, settings.threads),
      lsh: !sparse
        ? null
        : {
            meanCandidates: queries ? sums[3]! / queries : 0,
            meanFilled: queries ? sums[4]! / queries : 0,
            meanActive: queries ? sums[5]! / queries : 0,
            labelMissRate: output.hash && train.labels.length ? sums[7]! / train.labels.length : 0,
            alnInserts: sums[8]!,
            rebuilds,
            rehashes,
            indexSeconds,
          },
    };
  }

  function evaluate(data: XcDataset, mode: 'dense' | 'sparse', sparsity = output.sparsity): EvalResult {
    const t0 = performance.now();
    const m = mode === 'sparse' && output.hash ? 'sparse' : 'dense';
    const r = addon.evaluate(model, dataHandle(data), 0, data.rows, settings.threads, MODE_CODE[m], m === 'sparse' ? sparsity : 1);
    const n = r[0]!;
    return {
      mode: m,
      sparsity: m === 'sparse' ? sparsity : 1,
      samples: n,
      'precision@1': n ? r[1]! / n : 0,
      'precision@5': n ? r[2]! / n : 0,
      'recall@5': n ? r[3]! / n : 0,
      loss: r[5]! > 0 ? r[4]! / r[5]! : null,
      meanActive: m === 'sparse' ? r[6]! / Math.max(1, data.rows) : output.dim,
      seconds: (performance.now() - t0) / 1000,
    };
  }

  const weights = (): LayerWeights[] => layers.map((_, i) => ({ w: addon.getTensor(model, i, 'w'), b: addon.getTensor(model, i, 'b') }));

  return {
    layers,
    isa: addon.isa(),
    epochsDone: () => epochs,
    adamStep: () => addon.getStep(model),
    trainEpoch,
    evaluate,
    scores(data, start, count, mode, sparsity = output.sparsity) {
      return addon.scores(
        model,
        dataHandle(data),
        start,
        count,
        settings.threads,
        MODE_CODE[mode === 'sparse' && output.hash ? 'sparse' : 'dense'],
        mode === 'sparse' ? sparsity : 1,
      );
    },
    weights,
    tensors: () =>
      layers.flatMap((_, layer) => CHECKPOINT_TENSORS.map((name) => ({ layer, name, data: addon.getTensor(model, layer, name) }))),
    restore(tensors, epochsDone, step) {
      const want = new Set(layers.flatMap((_, l) => CHECKPOINT_TENSORS.map((n) => `${l}/${n}`)));
      for (const t of tensors) {
        addon.setTensor(model, t.layer, t.name, t.data);
        want.delete(`${t.layer}/${t.name}`);
      }
      if (want.size) throw internalError(`checkpoint lacks tensors ${[...want].join(', ')}`);
      addon.setStep(model, step);
      epochs = epochsDone;
    },
    onnx: () => exportOnnx(layers, weights(), `veltair ${VERSION} train`),
    indexDump() {
      if (sparse) addon.index(model, settings.threads, true, EXPORT_ROUND);
      return layers
        .filter((l) => l.hash)
        .map((l) => ({ layer: l, hash: addon.hashInfo(model, l.index), tables: addon.tables(model, l.index) }));
    },
    native: () => ({ addon, model }),
    dataHandle,
    close: () => addon.close(model),
  };
}

/** Neurons per input the output layer computes at `sparsity` (for messages). */
export function activeAt(l: SparseLayer, sparsity: number): number {
  return activeTarget({ ...l, sparsity });
}

/** VELTAIR_TRAIN_PAUSE_AT=E:B stops training after batch B of epoch E (1-based) and waits to be killed (tests of kill -9 resume). */
function parsePauseHook(v: string | undefined): { epoch: number; batch: number } | null {
  const m = v ? /^(\d+):(\d+)$/.exec(v) : null;
  return m ? { epoch: Number(m[1]), batch: Number(m[2]) } : null;
}

async function pauseForever(epoch: number, batch: number): Promise<never> {
  process.stderr.write(`veltair train: paused after epoch ${epoch} batch ${batch} (VELTAIR_TRAIN_PAUSE_AT); waiting to be killed\n`);
  return new Promise<never>(() => {
    setInterval(() => undefined, 1 << 30);
  });
}
