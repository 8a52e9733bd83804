/** The veltair side of the training benchmark: a trainer with `veltair train`'s defaults, in this process. */
import { execa } from 'execa';
import { describeLayer, resolveLayers, type LayerOptions, type SparseLayer } from '../sparse/layers.js';
import { defaultTableRefresh } from '../sparse/table-refresh.js';
import { readNetworkSpec, type NetworkSpec } from '../sparse/spec.js';
import { TRAIN_DEFAULTS, createTrainer, type Trainer, type TrainSettings } from '../sparse/trainer.js';
import { readXc, type XcDataset } from '../sparse/xc-reader.js';
import type { BenchDataset } from './train-data.js';

export interface LoadedBenchData {
  readonly spec: NetworkSpec;
  readonly train: XcDataset;
  readonly test: XcDataset;
}

export async function loadBenchData(d: BenchDataset): Promise<LoadedBenchData> {
  const spec = await readNetworkSpec(d.spec);
  const limits = { inputDim: spec.input, outputDim: spec.layers[spec.layers.length - 1]!.dim };
  return { spec, train: await readXc(d.train, limits), test: await readXc(d.test, limits) };
}

export interface VeltairRun {
  readonly layers: readonly SparseLayer[];
  readonly settings: TrainSettings;
  readonly trainer: Trainer;
  readonly description: string[];
}

export async function veltairTrainer(
  data: LoadedBenchData,
  threads: number,
  hash: Partial<LayerOptions> = {},
  o: Partial<TrainSettings> = {},
): Promise<VeltairRun> {
  const layers = resolveLayers(data.spec, { family: TRAIN_DEFAULTS.hash, ...hash });
  const batch = o.batch ?? TRAIN_DEFAULTS.batch;
  const settings: TrainSettings = {
    epochs: 1,
    batch,
    lr: TRAIN_DEFAULTS.lr,
    threads,
    seed: TRAIN_DEFAULTS.seed,
    hash: layers.find((l) => l.hash)?.hash?.family ?? TRAIN_DEFAULTS.hash,
    aln: false,
    beta1: TRAIN_DEFAULTS.beta1,
    beta2: TRAIN_DEFAULTS.beta2,
    eps: TRAIN_DEFAULTS.eps,
    schedule: defaultTableRefresh(data.train.rows, batch),
    ...o,
  };
  return { layers, settings, trainer: await createTrainer(layers, settings, data.train), description: layers.map(describeLayer) };
}

/** Pin every thread of this process (and the OpenMP threads it starts later) to `cores`. */
export async function pinSelf(cores: readonly number[]): Promise<boolean> {
  try {
    await execa('taskset', ['-a', '-p', '-c', cores.join(','), String(process.pid)]);
    return true;
  } catch {
    return false;
  }
}
