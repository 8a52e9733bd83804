/**
 * The output sparsity sweep: veltair alone, at the autotuned sparsity and at the sparsities given,
 * each from the same seed for the same epochs (K/L/R autotuned for each sparsity), with dense-
 * evaluation P@1/P@5 after every epoch. It says how much of a gap to dense training the sampled
 * output layer's sparsity accounts for, and what each step of sparsity costs in epoch time.
 */
import type { Optimizer } from '../sparse/native.js';
import type { BenchDataset } from './train-data.js';
import { loadBenchData, veltairTrainer } from './train-veltair.js';

export interface SparsityEpoch {
  readonly epoch: number;
  readonly seconds: number;
  readonly p1: number;
  readonly p5: number;
  readonly labelMissRate: number;
}

export interface SparsityPoint {
  readonly sparsity: number;
  readonly autotuned: boolean;
  readonly K: number;
  readonly L: number;
  readonly R: number;
  readonly curve: readonly SparsityEpoch[];
}

export interface SparsityReport {
  readonly dataset: BenchDataset;
  readonly epochs: number;
  readonly threads: number;
  readonly optimizer: Optimizer;
  /** The most frequent labels every sample computes (undefined: the trainer's default). */
  readonly frequentLabels: number | undefined;
  readonly points: readonly SparsityPoint[];
}

export async function sparsitySweep(
  dataset: BenchDataset,
  epochs: number,
  threads: number,
  sparsities: readonly number[],
  log: (m: string) => void,
  optimizer: Optimizer = 'adam',
  frequentLabels?: number,
  sampling: { readonly uniformNegatives?: number; readonly logQ?: boolean } = {},
): Promise<SparsityReport> {
  const data = await loadBenchData(dataset);
  const points: SparsityPoint[] = [];
  for (const s of [undefined, ...sparsities]) {
    const settings = { optimizer, ...(frequentLabels === undefined ? {} : { frequentLabels }), ...sampling };
    const run = await veltairTrainer(data, threads, s === undefined ? {} : { outputSparsity: s }, settings);
    const out = run.layers[run.layers.length - 1]!;
    const curve: SparsityEpoch[] = [];
    try {
      for (let e = 1; e <= epochs; e++) {
        const t = await run.trainer.trainEpoch();
        const d = run.trainer.evaluate(data.test, 'dense');
        curve.push({ epoch: e, seconds: t.seconds, p1: d['precision@1'], p5: d['precision@5'], labelMissRate: t.lsh?.labelMissRate ?? 0 });
        log(
          `${dataset.name} sparsity ${out.sparsity}${s === undefined ? ' (autotuned)' : ''} epoch ${e}: ${t.seconds.toFixed(1)} s, ` +
            `P@1 ${d['precision@1'].toFixed(4)}, P@5 ${d['precision@5'].toFixed(4)}`,
        );
      }
    } finally {
      run.trainer.close();
    }
    points.push({
      sparsity: out.sparsity,
      autotuned: s === undefined,
      K: out.hash?.K ?? 0,
      L: out.hash?.L ?? 0,
      R: out.hash?.R ?? 0,
      curve,
    });
  }
  return { dataset, epochs, threads, optimizer, frequentLabels, points };
}

export function sparsityMarkdown(r: SparsityReport): string {
  return [
    `#### ${r.dataset.name}: output sparsity sweep, veltair alone (optimizer ${r.optimizer}, frequent labels ${r.frequentLabels ?? 'default'}), ` +
      `${r.epochs} epoch(s) each, ${r.threads} threads, seed 1`,
    '',
    '| sparsity | | K | L | R | epoch | s/epoch | P@1 (dense eval) | P@5 | label miss rate |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...r.points
      .flatMap((p) =>
        p.curve.map((c) =>
          [
            p.sparsity,
            p.autotuned ? 'autotuned' : '',
            p.K,
            p.L,
            p.R,
            c.epoch,
            c.seconds.toFixed(1),
            c.p1.toFixed(4),
            c.p5.toFixed(4),
            c.labelMissRate.toFixed(3),
          ].join(' | '),
        ),
      )
      .map((c) => `| ${c} |`),
    '',
  ].join('\n');
}
