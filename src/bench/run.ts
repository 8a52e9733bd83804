/**
 * `npm run bench`: the benchmarks behind bench/RESULTS.md, in one run, printed as markdown.
 *  1. bench-layers on the zoo's ResNet-50 and MobileNet-V2 (every unique tunable workload; with
 *     --quick a representative subset): best of a small search vs ONNX Runtime's single-op model of
 *     the same layer, same thread count, measured alternately, beside the FMA peak of the same run;
 *  2. the interference trade-off (tradeoff.ts);
 *  3. sparse training against PyTorch, the K/L/R grid and thread scaling (train-run.ts; about an
 *     hour here, so opt in with --train, or run it alone: node dist/src/bench/train-run.js).
 *   npm run bench -- [--quick] [--models resnet50,mobilenet_v2] [--threads N] [--trials N] [--rounds N]
 *                    [--skip-layers] [--skip-tradeoff] [--train] [--json-out FILE]
 * A full run takes about 10–15 minutes on 2 cores; --quick about 4.
 */
import { writeFile } from 'node:fs/promises';
import { benchLayers, selectBenchLayers, type LayerBenchReport, type LayerBenchResult } from '../compare/layers.js';
import { geometricMean, median } from '../stats.js';
import { detectTarget } from '../toolchain/target.js';
import type { Workload } from '../ir/workload.js';
import type { LayerGraph } from '../ir/layer.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { buildBenchModels } from './models.js';
import { formatTradeoffMarkdown, pickTradeoffLayers, runTradeoff, type TradeoffReport } from './tradeoff.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const flag = (name: string) => process.argv.includes(name);
const t0 = Date.now();
const log = (m: string) => process.stderr.write(`bench [${((Date.now() - t0) / 1000).toFixed(0)} s]: ${m}\n`);

/** The class a layer is judged in (targets are set per class). */
export function layerClass(w: Workload): string {
  if (w.op !== 'conv2d') return w.op;
  if (w.groups > 1 && w.groups === w.cin && w.groups === w.cout) return 'depthwise';
  if (w.kh === 1 && w.kw === 1) return '1x1';
  if (w.kh === 3 && w.kw === 3) return '3x3';
  return `${w.kh}x${w.kw}`;
}

/** --quick: a few layers per class, spread over the network's stages. */
const QUICK_PICKS: Record<string, (w: Workload) => boolean> = {
  resnet50: (w) =>
    w.op === 'conv2d' &&
    w.strideH === 1 &&
    ((w.kh === 3 && (w.cin === 64 || w.cin === 256)) ||
      (w.kh === 1 && ((w.cin === 256 && w.cout === 64 && w.h === 56) || (w.cin === 1024 && w.cout === 256)))),
  mobilenet_v2: (w) =>
    w.op === 'conv2d' &&
    ((w.groups === 144 && w.strideH === 1) ||
      w.groups === 384 ||
      (w.kh === 1 &&
        w.groups === 1 &&
        ((w.cin === 24 && w.cout === 144) || (w.cin === 384 && w.cout === 64 && !w.epilogue.includes('residual_add'))))),
};

function chooseLayers(name: string, graph: LayerGraph, quick: boolean): number[] | undefined {
  if (!quick) return undefined;
  const pick = QUICK_PICKS[name]!;
  return graph.layers.filter((l) => l.tunable && l.workload && pick(l.workload)).map((l) => l.index);
}

const f = (x: number | null, d = 3) => (x === null ? '-' : x < 1 && d === 3 ? x.toFixed(4) : x.toFixed(d));

function layerRow(l: LayerBenchResult): string {
  const p = l.pairedRatio;
  const ratio =
    l.ratio === null
      ? '-'
      : `${l.ratio.toFixed(2)}${p && p.ratios.length > 1 ? ` [${p.minRatio.toFixed(2)}–${p.maxRatio.toFixed(2)}]` : ''}`;
  const index = l.alsoIndices.length > 0 ? `${l.index} (+${l.alsoIndices.length})` : String(l.index);
  return (
    `| ${index} | ${l.description} | ${(l.macs / 1e6).toFixed(2)} | ${l.status === 'failed' ? 'FAILED' : f(l.veltairMs)} | ${f(l.ortMs)} | ` +
    `${ratio} | ${f(l.gflops, 1)} | ${f(l.peakPercent, 0)} | ${l.candidates - l.failed}/${l.candidates} |`
  );
}

function classSummary(r: LayerBenchReport, classOf: Map<number, string>): string[] {
  const classes = [...new Set(r.layers.map((l) => classOf.get(l.index)!))];
  return classes.map((c) => {
    const ls = r.layers.filter((l) => classOf.get(l.index) === c);
    const ratios = ls.map((l) => l.ratio).filter((x): x is number => x !== null);
    const peaks = ls.map((l) => l.peakPercent).filter((x): x is number => x !== null);
    return (
      `- ${c}: ${ls.length} unique layers; geometric mean veltair/ORT ${ratios.length ? geometricMean(ratios).toFixed(3) : '-'}, ` +
      `${ratios.filter((x) => x <= 1).length} of ${ratios.length} at or below 1.0x ORT; ` +
      `median ${peaks.length ? median(peaks).toFixed(0) : '-'}% of FMA peak (min ${peaks.length ? Math.min(...peaks).toFixed(0) : '-'}%)` +
      (ls.some((l) => l.status === 'failed') ? `; ${ls.filter((l) => l.status === 'failed').length} FAILED` : '')
    );
  });
}

export function formatLayerBenchMarkdown(model: string, r: LayerBenchReport, classOf: Map<number, string>): string {
  const s = r.summary;
  return [
    `#### ${model}: ${r.layers.length} unique tunable workloads, ${r.threads} thread(s) on core(s) ${r.cores.join(',')}`,
    '',
    `FMA peak measured in this run: ${r.peakGflops.toFixed(1)} GFLOP/s (${r.peak.isa}; ` +
      `the best repetition of ${r.peak.probes} probes taken around the layers, ` +
      `whose medians ranged ${r.peak.minMedianGflops.toFixed(1)}–${r.peak.maxMedianGflops.toFixed(1)}). ` +
      `${r.trials} candidates searched per layer, then ${r.rounds} alternating rounds (veltair, ORT, ORT, veltair, …). ` +
      `ONNX Runtime ${r.ortPinned ? 'pinned to the same core(s)' : 'NOT pinned (no taskset)'}, malloc tunables \`${r.ortMallocTunables}\`.`,
    '',
    '| # (+same workload) | layer | MMACs | veltair ms | ORT ms | veltair/ORT [paired min–max] | GFLOP/s | % peak | ok/cands |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.layers.map(layerRow),
    '',
    s.geomeanRatio === null
      ? 'No layer has both figures.'
      : `Geometric mean veltair/ORT ${s.geomeanRatio.toFixed(3)}x over ${s.layersCompared} layers; ` +
        `${s.layersAtOrBelowOrt} of ${s.layersCompared} at or below 1.0x ORT` +
        (s.layersFailed ? `; ${s.layersFailed} layers FAILED.` : '.'),
    '',
    ...classSummary(r, classOf),
    ...r.layers
      .filter((l) => l.status === 'failed')
      .map((l) => `- FAILED layer ${l.index} (${l.description}): ${l.failureReasons.join('; ')}`),
    ...r.layers.filter((l) => l.ortError).map((l) => `- ONNX Runtime could not run layer ${l.index}: ${l.ortError}`),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const quick = flag('--quick');
  const threads = Number(arg('--threads') ?? 1);
  const trials = Number(arg('--trials') ?? (quick ? 4 : 6));
  const rounds = Number(arg('--rounds') ?? (quick ? 2 : 3));
  const started = Date.now();
  const machine = await machineInfo();
  // What `npm run bench -- ARGS` runs after building (the tree it ran from is the caller's to state).
  const command = `node dist/src/bench/run.js${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
  const out: string[] = [`### Run of ${machine.dateUtc}`, '', `- machine: ${machineLine(machine)}`, `- command: \`${command}\``, ''];
  const json: {
    machine: typeof machine;
    command: string;
    layers: Record<string, LayerBenchReport>;
    tradeoff?: TradeoffReport;
    minutes?: number;
  } = { machine, command, layers: {} };
  const models = await buildBenchModels((arg('--models') ?? 'resnet50,mobilenet_v2').split(','));
  try {
    const target = await detectTarget();
    if (!flag('--skip-layers')) {
      for (const [name, m] of models.models) {
        const selected = selectBenchLayers(m.graph, chooseLayers(name, m.graph, quick));
        log(`${name}: ${selected.length} layers, ${trials} candidates each`);
        const report = await benchLayers(selected, {
          target,
          threads,
          trials,
          rounds,
          onProgress: (done, total, label) => log(`${name} ${done}/${total} ${label}`),
        });
        json.layers[name] = report;
        const classOf = new Map(selected.map((s) => [s.index, layerClass(s.workload)]));
        out.push(formatLayerBenchMarkdown(name, report, classOf));
      }
    }
    const graphs = new Map([...models.models].map(([k, m]) => [k, m.graph]));
    const tradeoffLayers = pickTradeoffLayers(graphs, quick);
    if (!flag('--skip-tradeoff') && tradeoffLayers.length > 0) {
      const tradeoff = await runTradeoff(tradeoffLayers, {
        levels: [0, 1, 2, 3, 4],
        rounds: quick ? 3 : 4,
        tunedTrials: quick ? 4 : 8,
        onProgress: (m) => log(`tradeoff ${m}`),
      });
      json.tradeoff = tradeoff;
      out.push(
        `#### Interference trade-off: kernel on core(s) ${tradeoff.kernelCores.join(',')} (1 thread), ` +
          `noise on core(s) ${tradeoff.noiseCores.join(',')}, ${tradeoff.rounds} rounds per level`,
        '',
        formatTradeoffMarkdown(tradeoff),
      );
    }
  } finally {
    await models.dispose();
  }
  if (flag('--train')) {
    const { runTrainBench } = await import('./train-run.js');
    const { availableParallelism } = await import('node:os');
    out.push(
      (
        await runTrainBench({
          sections: ['compare', 'grid', 'threads'],
          datasets: ['planted', 'words'],
          epochs: 3,
          gridEpochs: 2,
          threads: availableParallelism(),
          log: (m) => log(`train ${m}`),
        })
      ).markdown,
    );
  }
  json.minutes = (Date.now() - started) / 60000;
  out.push(`(run took ${json.minutes.toFixed(1)} min; load average at the end ${(await machineInfo()).loadAvg.join(' ')})`, '');
  process.stdout.write(out.join('\n') + '\n');
  const jsonOut = arg('--json-out');
  if (jsonOut) await writeFile(jsonOut, JSON.stringify(json, null, 2) + '\n');
}

await main();
