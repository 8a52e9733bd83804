/**
 * The K/L/R grid: the autotuned setting against a small grid around it on one data set, each
 * trained the same number of epochs from the same seed, judged by dense-evaluation precision@1
 * (what training achieved) and by sparse-evaluation precision@1 at the training sparsity.
 */
import { bucketCap } from '../sparse/autotune.js';
import { REHASHES_PER_EPOCH, rehashEveryFor } from '../sparse/table-refresh.js';
import type { BenchDataset } from './train-data.js';
import { loadBenchData, veltairTrainer } from './train-veltair.js';

export interface GridPoint {
  readonly K: number;
  readonly L: number;
  readonly R: number;
  readonly autotuned: boolean;
  readonly p1: number;
  readonly p5: number;
  readonly sparseP1: number | null;
  readonly meanEpochSeconds: number;
  readonly meanCandidates: number;
  readonly labelMissRate: number;
  /** Rehashes of the updated neurons per epoch (the default is REHASHES_PER_EPOCH). */
  readonly rehashesPerEpoch: number;
  readonly indexSecondsPerEpoch: number;
}

export interface GridReport {
  readonly dataset: BenchDataset;
  readonly epochs: number;
  readonly threads: number;
  readonly sparsity: number;
  readonly points: readonly GridPoint[];
  /** Autotuned P@1 minus the best P@1 of the grid (≥ −0.01 meets the target). */
  readonly autotunedMinusBest: number;
}

/** The grid also varies the rehash schedule at the autotuned K/L (none, and 8 per epoch), for the schedule's defaults. */
/** K from autoK-3 to autoK+2 at the autotuned L, and the autotuned K at L/4 and L/2 (at least 1). */
export function gridAround(K: number, L: number, d: number): { K: number; L: number }[] {
  const ks = [K - 3, K - 1, K + 1, K + 2].filter((k) => k >= 1 && 2 ** k <= d);
  const ls = [Math.floor(L / 4), Math.floor(L / 2)].filter((l) => l >= 1 && l !== L);
  return [...ks.map((k) => ({ K: k, L })), ...ls.map((l) => ({ K, L: l }))];
}

export async function klrGrid(dataset: BenchDataset, epochs: number, threads: number, log: (m: string) => void): Promise<GridReport> {
  const data = await loadBenchData(dataset);
  const auto = await veltairTrainer(data, threads);
  const out = auto.layers[auto.layers.length - 1]!;
  if (!out.hash) throw new Error(`${dataset.name}: the output layer is dense, there is no K/L/R to tune`);
  const batch = auto.settings.batch;
  const every = (perEpoch: number) => rehashEveryFor(data.train.rows, batch, perEpoch);
  const settings = [
    { K: out.hash.K, L: out.hash.L, auto: true, rehashes: REHASHES_PER_EPOCH },
    ...gridAround(out.hash.K, out.hash.L, out.dim).map((g) => ({ ...g, auto: false, rehashes: REHASHES_PER_EPOCH })),
    ...[0, 8].map((r) => ({ K: out.hash!.K, L: out.hash!.L, auto: false, rehashes: r })),
  ];
  const points: GridPoint[] = [];
  for (const s of settings) {
    const run = s.auto
      ? auto
      : await veltairTrainer(data, threads, { K: s.K, L: s.L }, { schedule: { rehashEvery: every(s.rehashes), rebuildEvery: 0 } });
    let seconds = 0,
      cand = 0,
      miss = 0,
      index = 0;
    for (let e = 0; e < epochs; e++) {
      const t = await run.trainer.trainEpoch();
      seconds += t.seconds;
      cand += t.lsh?.meanCandidates ?? 0;
      miss += t.lsh?.labelMissRate ?? 0;
      index += t.lsh?.indexSeconds ?? 0;
    }
    const dense = run.trainer.evaluate(data.test, 'dense');
    const sparse = run.trainer.evaluate(data.test, 'sparse');
    run.trainer.close();
    points.push({
      K: s.K,
      L: s.L,
      R: bucketCap(out.dim, s.K),
      autotuned: s.auto,
      p1: dense['precision@1'],
      p5: dense['precision@5'],
      sparseP1: sparse['precision@1'],
      meanEpochSeconds: seconds / epochs,
      meanCandidates: cand / epochs,
      labelMissRate: miss / epochs,
      rehashesPerEpoch: s.rehashes,
      indexSecondsPerEpoch: index / epochs,
    });
    log(
      `${dataset.name} grid K=${s.K} L=${s.L} rehash ${s.rehashes}/epoch${s.auto ? ' (autotuned)' : ''}: P@1 ${dense['precision@1'].toFixed(4)}, ` +
        `sparse P@1 ${sparse['precision@1'].toFixed(4)}, ${(seconds / epochs).toFixed(1)} s/epoch`,
    );
  }
  const best = Math.max(...points.filter((p) => p.rehashesPerEpoch === REHASHES_PER_EPOCH).map((p) => p.p1));
  return { dataset, epochs, threads, sparsity: out.sparsity, points, autotunedMinusBest: points[0]!.p1 - best };
}
