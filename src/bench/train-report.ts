/** Markdown for bench/RESULTS.md from the training benchmark's reports. */
import type { CompareReport } from './train-compare.js';
import { profileMarkdown } from './train-breakdown-report.js';
import type { GridReport } from './train-grid.js';
import type { ThreadsReport } from './train-threads.js';

const f = (x: number | null, d = 4) => (x === null ? '-' : x.toFixed(d));

export function compareMarkdown(r: CompareReport): string {
  return [
    `#### ${r.dataset.name}: veltair sparse training vs PyTorch dense training, ${r.threads} threads on cores ${r.cores.join(',')}`,
    '',
    `- data: \`${r.dataset.command}\` → ${r.trainRows} training, ${r.testRows} test samples`,
    ...r.layers.map((l) => `- veltair ${l}`),
    `- veltair kernels: ${r.isa}; PyTorch ${r.torch.torch} (${r.torch.threads} threads), ${r.torch.blasConfig.join(', ')}; ` +
      `BLAS mapped into the PyTorch process: ${r.torch.blasLoaded.map((p) => `\`${p}\``).join(', ') || 'none found'}`,
    '- both: batch 256, Adam (lr 0.001, β 0.9/0.999, ε 1e-8), same epochs, alternating epoch by epoch; ' +
      'P@k from dense evaluation of the whole test set after each epoch',
    '',
    '| epoch | order | veltair s | PyTorch s | speed-up | veltair P@1 | veltair P@1 (sparse eval) | PyTorch P@1 | veltair P@5 | PyTorch P@5 | ' +
      'veltair loss* | PyTorch loss |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...r.rows
      .map((x) =>
        [
          x.epoch,
          x.order,
          x.veltairSeconds.toFixed(1),
          x.torchSeconds.toFixed(1),
          `${x.speedup.toFixed(2)}x`,
          f(x.veltair.p1),
          f(x.veltair.sparseP1),
          f(x.torch.p1),
          f(x.veltair.p5),
          f(x.torch.p5),
          f(x.veltair.loss, 3),
          f(x.torch.loss, 3),
        ].join(' | '),
      )
      .map((c) => `| ${c} |`),
    '',
    `Epoch-time speed-up (PyTorch / veltair), median ${r.medianSpeedup.toFixed(2)}x [${r.minSpeedup.toFixed(2)}–${r.maxSpeedup.toFixed(2)}] ` +
      `over ${r.rows.length} paired epochs; ` +
      `P@1 after the last epoch: veltair − PyTorch = ${(r.p1Difference * 100).toFixed(2)} points. ` +
      "*veltair's training loss is the cross-entropy over each sample's active neurons (sampled softmax), PyTorch's over all classes.",
    '',
    profileMarkdown(
      `${r.dataset.name}: where veltair's epoch goes, ${r.threads} threads`,
      r.rows.map((x) => ({ label: `epoch ${x.epoch}`, profile: x.veltairProfile })),
    ),
  ].join('\n');
}

export function gridMarkdown(g: GridReport): string {
  return [
    `#### ${g.dataset.name}: K/L/R grid, output sparsity ${g.sparsity}, ${g.epochs} epoch(s) each, ${g.threads} threads, seed 1`,
    '',
    '| K | L | R | | rehashes/epoch | P@1 (dense eval) | P@5 | P@1 (sparse eval) | candidates per query | label miss rate | s/epoch | of which indexing s |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...g.points
      .map((p) =>
        [
          p.K,
          p.L,
          p.R,
          p.autotuned ? 'autotuned' : '',
          p.rehashesPerEpoch,
          f(p.p1),
          f(p.p5),
          f(p.sparseP1),
          p.meanCandidates.toFixed(0),
          f(p.labelMissRate, 3),
          p.meanEpochSeconds.toFixed(1),
          p.indexSecondsPerEpoch.toFixed(1),
        ].join(' | '),
      )
      .map((c) => `| ${c} |`),
    '',
    `Autotuned P@1 minus the best K/L of the grid (at the default schedule): ${(g.autotunedMinusBest * 100).toFixed(2)} points (target: ≥ −1). ` +
      'The last two rows vary only the rehash schedule.',
    '',
  ].join('\n');
}

export function threadsMarkdown(t: ThreadsReport): string {
  return [
    `#### ${t.dataset.name}: 1 thread vs ${t.threads} threads (training epochs, alternating)`,
    '',
    '| pair | 1 thread s | ' + `${t.threads} threads s | speed-up |`,
    '|---|---|---|---|',
    ...t.pairs.map((p, i) => `| ${i + 1} | ${p.oneThread.toFixed(1)} | ${p.nThreads.toFixed(1)} | ${p.speedup.toFixed(2)}x |`),
    '',
    `Median ${t.medianSpeedup.toFixed(2)}x [${t.minSpeedup.toFixed(2)}–${t.maxSpeedup.toFixed(2)}] (target: ≥ 1.7x on 2 threads).`,
    '',
    profileMarkdown(
      `${t.dataset.name}: where the epoch goes, 1 thread vs ${t.threads} (pair 1)`,
      t.pairs.slice(0, 1).flatMap((p) => [
        { label: '1 thread', profile: p.oneThreadProfile },
        { label: `${t.threads} threads`, profile: p.nThreadsProfile },
      ]),
    ),
  ].join('\n');
}
