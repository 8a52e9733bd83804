/**
 * `veltair bench-layers MODEL.onnx [--layers i,j,…] [--trials N] [--threads N] [--rounds N]
 * [--input-shape NAME=DIMS]… [--json]`: per tunable layer, a small schedule search, then the best
 * kernel and ONNX Runtime's single-op model of the same layer measured alternately, beside the FMA
 * peak measured in the same run. The logic is measure/layer-bench.ts; this file parses and prints.
 */
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { lowerToLayers } from '../ir/lower.js';
import { loadModel } from '../onnx/load.js';
import { detectTarget } from '../toolchain/target.js';
import { benchLayers, selectBenchLayers, type LayerBenchReport, type LayerBenchResult } from '../bench/layer-bench.js';
import { collectInputShape } from './inspect.js';
import { formatTable, printJson, printLine, progressBar } from './output.js';

interface BenchLayersCliOptions {
  layers?: string;
  trials: string;
  threads: string;
  rounds: string;
  seed: string;
  inputShape: Map<string, readonly number[]>;
  json?: boolean;
}

/** `3,5,10-12` → [3, 5, 10, 11, 12]. */
export function parseLayerList(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m || (m[2] !== undefined && Number(m[2]) < Number(m[1]))) {
      throw userError('BAD_ARGUMENT', `--layers ${JSON.stringify(text.slice(0, 80))}: ${JSON.stringify(part.slice(0, 20))} is not a layer index or range`,
        'give comma-separated layer indices as `veltair inspect` prints them, e.g. --layers 3,7,10-12');
    }
    const lo = Number(m[1]), hi = m[2] === undefined ? lo : Number(m[2]);
    for (let i = lo; i <= hi; i++) out.push(i);
  }
  return out;
}

function parsePositiveInt(text: string, flag: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) {
    throw userError('BAD_ARGUMENT', `${flag} ${JSON.stringify(text.slice(0, 40))} is not a positive integer`, `e.g. ${flag} 4`);
  }
  return Number(text);
}

const ms = (x: number | null) => (x === null ? '-' : x < 1 ? x.toFixed(4) : x.toFixed(3));
const fixed = (x: number | null, d: number) => (x === null ? '-' : x.toFixed(d));

function ratioCell(l: LayerBenchResult): string {
  if (l.ratio === null) return '-';
  const p = l.pairedRatio;
  return p && p.ratios.length > 1 ? `${l.ratio.toFixed(2)} [${p.minRatio.toFixed(2)}-${p.maxRatio.toFixed(2)}]` : l.ratio.toFixed(2);
}

export function formatBenchLayersReport(r: LayerBenchReport): string {
  const header = ['#', 'layer', 'MMACs', 'veltair ms', 'ORT ms', 'ratio [paired min-max]', 'GFLOP/s', '% peak', 'ok/cands'];
  const rows = r.layers.map((l) => [
    l.alsoIndices.length > 0 ? `${l.index} (+${l.alsoIndices.length})` : String(l.index),
    l.description,
    (l.macs / 1e6).toFixed(2),
    l.status === 'failed' ? 'FAILED' : ms(l.veltairMs),
    ms(l.ortMs),
    ratioCell(l),
    fixed(l.gflops, 1),
    fixed(l.peakPercent, 0),
    `${l.candidates - l.failed}/${l.candidates}`,
  ]);
  const s = r.summary;
  const lines = [
    `target  ${r.target.cpuModel}, ${r.target.cores} cores | ${r.threads} thread(s) on core(s) ${r.cores.join(',')}` +
      `${r.ortPinned ? '' : ' (ONNX Runtime not pinned: taskset unavailable)'}`,
    `peak    ${r.peakGflops.toFixed(1)} GFLOP/s FMA (${r.peak.isa}; best repetition of ${r.peak.probes} probes around the layers, whose medians ranged ${r.peak.minMedianGflops.toFixed(1)}-${r.peak.maxMedianGflops.toFixed(1)})`,
    `search  ${r.trials} candidates per layer; then ${r.rounds} alternating rounds of the best kernel and ONNX Runtime`,
    '',
    formatTable([header, ...rows], new Set([2, 3, 4, 6, 7, 8])),
    '',
  ];
  for (const l of r.layers.filter((x) => x.status === 'failed')) {
    lines.push(`FAILED layer ${l.index} (${l.description}): all ${l.candidates} candidates failed — ${l.failureReasons.join('; ')}`);
  }
  for (const l of r.layers.filter((x) => x.ortError)) lines.push(`ONNX Runtime could not run layer ${l.index}: ${l.ortError}`);
  lines.push(s.geomeanRatio === null
    ? `no layer has both a veltair and an ONNX Runtime figure (${s.layersFailed} failed)`
    : `geometric mean veltair/ORT ${s.geomeanRatio.toFixed(3)}x over ${s.layersCompared} layers; ` +
      `${s.layersAtOrBelowOrt} of ${s.layersCompared} at or below 1.0x ORT` + (s.layersFailed > 0 ? `; ${s.layersFailed} failed` : ''));
  return lines.join('\n');
}

export function registerBenchLayersCommand(program: Command): void {
  program
    .command('bench-layers')
    .description('tune each tunable layer briefly and time it against ONNX Runtime and the FMA peak, in one run')
    .argument('<model>', 'path to an .onnx file')
    .option('--layers <list>', 'layer indices as `veltair inspect` prints them, e.g. 3,7,10-12 (default: every unique tunable workload)')
    .option('--trials <n>', 'candidates searched per layer', '16')
    .option('--threads <n>', 'threads for veltair and ONNX Runtime alike, pinned to cores 0..n-1', '1')
    .option('--rounds <n>', 'alternating veltair/ONNX Runtime measurement rounds per layer', '3')
    .option('--seed <n>', 'seed of the schedule sampler', '1')
    .option('--input-shape <name=dims>', 'pin an input shape, e.g. input=1x3x224x224 (repeatable)', collectInputShape, new Map<string, readonly number[]>())
    .option('--json', 'machine-readable output on stdout')
    .action(async (modelPath: string, opts: BenchLayersCliOptions) => {
      const trials = parsePositiveInt(opts.trials, '--trials');
      const threads = parsePositiveInt(opts.threads, '--threads');
      const rounds = parsePositiveInt(opts.rounds, '--rounds');
      const seed = parsePositiveInt(opts.seed, '--seed');
      const requested = opts.layers === undefined ? undefined : parseLayerList(opts.layers);
      const inferred = await loadModel(modelPath, { inputShapes: opts.inputShape });
      const selected = selectBenchLayers(lowerToLayers(inferred), requested);
      const target = await detectTarget();
      const bar = progressBar(opts.json === true);
      let started = false;
      const report = await benchLayers(selected, {
        target, threads, trials, rounds, seed,
        onProgress: (done, total, label) => {
          if (!started) bar.start(total, label);
          started = true;
          bar.update(done, label);
        },
      }).finally(() => bar.stop());
      if (opts.json) printJson(report);
      else printLine(formatBenchLayersReport(report));
    });
}
