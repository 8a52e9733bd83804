/**
 * The neuron-major batch against the per-sample (HOGWILD) one, in one run: the same network, seed,
 * data and threads trained twice, epochs alternating (sample first on odd epochs), each pass's
 * epoch time, dense-evaluation P@1 after each epoch, and where its epochs went (the profile).
 */
import type { EpochProfile } from '../sparse/epoch-breakdown.js';
import type { Pass } from '../sparse/native.js';
import { median } from '../stats.js';
import type { BenchDataset } from './train-data.js';
import { profileMarkdown } from './train-breakdown-report.js';
import { loadBenchData, veltairTrainer } from './train-veltair.js';

interface Side {
  readonly seconds: number;
  readonly p1: number;
  readonly p5: number;
  readonly profile: EpochProfile;
}

export interface PassesReport {
  readonly dataset: BenchDataset;
  readonly threads: number;
  readonly passes: readonly [Pass, Pass];
  readonly rows: readonly { readonly epoch: number; readonly first: Pass; readonly a: Side; readonly b: Side; readonly speedup: number }[];
  readonly medianSpeedup: number;
  readonly minSpeedup: number;
  readonly maxSpeedup: number;
}

export async function passComparison(
  dataset: BenchDataset,
  epochs: number,
  threads: number,
  log: (m: string) => void,
  passes: readonly [Pass, Pass] = ['sample', 'neuron-adam'],
): Promise<PassesReport> {
  const data = await loadBenchData(dataset);
  const runs = [
    await veltairTrainer(data, threads, {}, { pass: passes[0] }),
    await veltairTrainer(data, threads, {}, { pass: passes[1] }),
  ] as const;
  const epoch = async (k: 0 | 1): Promise<Side> => {
    const t = await runs[k].trainer.trainEpoch();
    const d = runs[k].trainer.evaluate(data.test, 'dense');
    return { seconds: t.seconds, p1: d['precision@1'], p5: d['precision@5'], profile: t.profile };
  };
  const rows: PassesReport['rows'][number][] = [];
  try {
    for (let e = 1; e <= epochs; e++) {
      const aFirst = e % 2 === 1;
      const x = await epoch(aFirst ? 0 : 1);
      const y = await epoch(aFirst ? 1 : 0);
      const [a, b] = aFirst ? [x, y] : [y, x];
      rows.push({ epoch: e, first: passes[aFirst ? 0 : 1], a, b, speedup: a.seconds / b.seconds });
      log(
        `${dataset.name} passes epoch ${e}: ${passes[0]} ${a.seconds.toFixed(1)} s (P@1 ${a.p1.toFixed(4)}), ` +
          `${passes[1]} ${b.seconds.toFixed(1)} s (P@1 ${b.p1.toFixed(4)})`,
      );
    }
  } finally {
    for (const r of runs) r.trainer.close();
  }
  const s = rows.map((r) => r.speedup);
  return { dataset, threads, passes, rows, medianSpeedup: median(s), minSpeedup: Math.min(...s), maxSpeedup: Math.max(...s) };
}

export function passesMarkdown(r: PassesReport): string {
  const [pa, pb] = r.passes;
  return [
    `#### ${r.dataset.name}: the ${pb} pass against the ${pa} pass, ${r.threads} threads (epochs alternating)`,
    '',
    `| epoch | first | ${pa} s | ${pb} s | speed-up | ${pa} P@1 | ${pb} P@1 | ${pa} P@5 | ${pb} P@5 |`,
    '|---|---|---|---|---|---|---|---|---|',
    ...r.rows.map(
      (x) =>
        `| ${x.epoch} | ${x.first} | ${x.a.seconds.toFixed(1)} | ${x.b.seconds.toFixed(1)} | ${x.speedup.toFixed(2)}x | ` +
        `${x.a.p1.toFixed(4)} | ${x.b.p1.toFixed(4)} | ${x.a.p5.toFixed(4)} | ${x.b.p5.toFixed(4)} |`,
    ),
    '',
    `Median ${r.medianSpeedup.toFixed(2)}x [${r.minSpeedup.toFixed(2)}–${r.maxSpeedup.toFixed(2)}] over ${r.rows.length} paired epochs.`,
    '',
    profileMarkdown(
      `${r.dataset.name}: where the epoch goes, ${pa} vs ${pb} (last epoch)`,
      r.rows.slice(-1).flatMap((x) => [
        { label: pa, profile: x.a.profile },
        { label: pb, profile: x.b.profile },
      ]),
    ),
  ].join('\n');
}
