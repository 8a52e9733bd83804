/**
 * veltair's sparse training against PyTorch's dense training of the same network, in one run:
 * same data, threads, cores, batch size, optimiser (Adam, lr 0.001) and epochs. The two alternate
 * epoch by epoch (V T, T V, V T, …) so drift on this shared machine hits both alike; each
 * trainer's evaluation runs while the other waits, and is not part of its epoch time.
 */
import { median } from '../stats.js';
import type { EpochProfile } from '../sparse/epoch-breakdown.js';
import { TRAIN_DEFAULTS } from '../sparse/trainer.js';
import type { BenchDataset } from './train-data.js';
import { startTorch, type TorchInfo } from './train-torch.js';
import { loadBenchData, veltairTrainer } from './train-veltair.js';

export interface CompareRow {
  readonly epoch: number;
  readonly order: 'veltair first' | 'torch first';
  readonly veltairSeconds: number;
  readonly torchSeconds: number;
  readonly speedup: number;
  readonly veltair: {
    readonly p1: number;
    readonly p5: number;
    readonly r5: number;
    readonly sparseP1: number | null;
    readonly loss: number;
  };
  readonly torch: { readonly p1: number; readonly p5: number; readonly r5: number; readonly loss: number };
  /** Where veltair's epoch went. */
  readonly veltairProfile: EpochProfile;
}

export interface CompareReport {
  readonly dataset: BenchDataset;
  readonly trainRows: number;
  readonly testRows: number;
  readonly layers: readonly string[];
  readonly threads: number;
  readonly cores: readonly number[];
  readonly isa: string;
  readonly torch: TorchInfo;
  readonly rows: readonly CompareRow[];
  readonly medianSpeedup: number;
  readonly minSpeedup: number;
  readonly maxSpeedup: number;
  /** veltair's dense-evaluation P@1 minus PyTorch's, after the last epoch. */
  readonly p1Difference: number;
}

export async function compareWithTorch(
  dataset: BenchDataset,
  epochs: number,
  threads: number,
  cores: readonly number[],
  log: (m: string) => void,
): Promise<CompareReport> {
  const data = await loadBenchData(dataset);
  const v = await veltairTrainer(data, threads);
  const torch = await startTorch({
    spec: dataset.spec,
    train: dataset.train,
    test: dataset.test,
    epochs,
    batch: v.settings.batch,
    lr: v.settings.lr,
    threads,
    seed: TRAIN_DEFAULTS.seed,
    cores,
  });
  log(`${dataset.name}: torch ${torch.info.torch}, BLAS ${torch.info.blasLoaded.join(' ')}`);
  const rows: CompareRow[] = [];
  try {
    for (let e = 1; e <= epochs; e++) {
      const veltairFirst = e % 2 === 1;
      const runV = async () => {
        const t = await v.trainer.trainEpoch();
        const dense = v.trainer.evaluate(data.test, 'dense');
        const sparse = v.layers[v.layers.length - 1]!.hash ? v.trainer.evaluate(data.test, 'sparse') : null;
        return { t, dense, sparse };
      };
      const a = veltairFirst ? await runV() : undefined;
      const te = await torch.epoch();
      const b = a ?? (await runV());
      rows.push({
        epoch: e,
        order: veltairFirst ? 'veltair first' : 'torch first',
        veltairSeconds: b.t.seconds,
        torchSeconds: te.epochSeconds,
        speedup: te.epochSeconds / b.t.seconds,
        veltair: {
          p1: b.dense['precision@1'],
          p5: b.dense['precision@5'],
          r5: b.dense['recall@5'],
          sparseP1: b.sparse ? b.sparse['precision@1'] : null,
          loss: b.t.loss,
        },
        torch: { p1: te['precision@1'] ?? 0, p5: te['precision@5'] ?? 0, r5: te['recall@5'] ?? 0, loss: te.loss },
        veltairProfile: b.t.profile,
      });
      log(
        `${dataset.name} epoch ${e}: veltair ${b.t.seconds.toFixed(1)} s (P@1 ${b.dense['precision@1'].toFixed(4)}), ` +
          `torch ${te.epochSeconds.toFixed(1)} s (P@1 ${(te['precision@1'] ?? 0).toFixed(4)})`,
      );
    }
  } finally {
    await torch.close();
    v.trainer.close();
  }
  const speedups = rows.map((r) => r.speedup);
  const last = rows[rows.length - 1]!;
  return {
    dataset,
    trainRows: data.train.rows,
    testRows: data.test.rows,
    layers: v.description,
    threads,
    cores,
    isa: v.trainer.isa,
    torch: torch.info,
    rows,
    medianSpeedup: median(speedups),
    minSpeedup: Math.min(...speedups),
    maxSpeedup: Math.max(...speedups),
    p1Difference: last.veltair.p1 - last.torch.p1,
  };
}
