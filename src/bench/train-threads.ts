/**
 * Does training use every core? The same network, seed and data trained with 1 thread and with
 * N threads, epochs alternating (1, N, N, 1, …) in this process, pinned to the same cores; the
 * figure is the paired ratio of epoch times (training only, evaluation excluded).
 */
import type { EpochProfile } from '../sparse/epoch-breakdown.js';
import { median } from '../stats.js';
import type { BenchDataset } from './train-data.js';
import { loadBenchData, veltairTrainer } from './train-veltair.js';

export interface ThreadsReport {
  readonly dataset: BenchDataset;
  readonly threads: number;
  readonly pairs: readonly {
    readonly oneThread: number;
    readonly nThreads: number;
    readonly speedup: number;
    readonly oneThreadProfile: EpochProfile;
    readonly nThreadsProfile: EpochProfile;
  }[];
  readonly medianSpeedup: number;
  readonly minSpeedup: number;
  readonly maxSpeedup: number;
}

export async function threadScaling(
  dataset: BenchDataset,
  threads: number,
  epochs: number,
  log: (m: string) => void,
): Promise<ThreadsReport> {
  const data = await loadBenchData(dataset);
  const one = await veltairTrainer(data, 1);
  const many = await veltairTrainer(data, threads);
  const pairs: ThreadsReport['pairs'][number][] = [];
  for (let e = 0; e < epochs; e++) {
    const first = e % 2 === 0 ? one : many,
      second = e % 2 === 0 ? many : one;
    const a = await first.trainer.trainEpoch();
    const b = await second.trainer.trainEpoch();
    const [r1, rn] = e % 2 === 0 ? [a, b] : [b, a];
    const t1 = r1.seconds,
      tn = rn.seconds;
    pairs.push({ oneThread: t1, nThreads: tn, speedup: t1 / tn, oneThreadProfile: r1.profile, nThreadsProfile: rn.profile });
    log(
      `${dataset.name} threads: epoch ${e + 1}: 1 thread ${t1.toFixed(1)} s, ${threads} threads ${tn.toFixed(1)} s (${(t1 / tn).toFixed(2)}x)`,
    );
  }
  one.trainer.close();
  many.trainer.close();
  const s = pairs.map((p) => p.speedup);
  return { dataset, threads, pairs, medianSpeedup: median(s), minSpeedup: Math.min(...s), maxSpeedup: Math.max(...s) };
}
