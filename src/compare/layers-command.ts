/**
 * `veltair bench-layers` (registered in src/cli/bench-layers.ts, loaded only when the command runs):
 * per tunable layer, a small schedule search, then the best kernel and ONNX Runtime's single-op
 * model of the same layer measured alternately, beside the FMA peak measured in the same run. The
 * logic is layer-bench.ts; this file parses and prints.
 */
import { userError } from '../errors.js';
import { lowerToLayers } from '../ir/lower.js';
import { loadModel } from '../onnx/load.js';
import { detectTarget, targetNotes } from '../toolchain/target.js';
import { benchLayers, selectBenchLayers, type LayerBenchReport, type LayerBenchResult } from './layers.js';
import { parsePositiveInt } from '../terminal/args.js';
import { formatTable, note, printJson, printLine, progressBar } from '../terminal/output.js';

export interface BenchLayersCliOptions {
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
      throw userError(
        'BAD_ARGUMENT',
        `--layers ${JSON.stringify(text.slice(0, 80))}: ${JSON.stringify(part.slice(0, 20))} is not a layer index or range`,
        'give comma-separated layer indices as `veltair inspect` prints them, e.g. --layers 3,7,10-12',
      );
    }
    const lo = Number(m[1]),
      hi = m[2] === undefined ? lo : Number(m[2]);
    for (let i = lo; i <= hi; i++) out.push(i);
  }
  return out;
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
    `peak    ${r.peakGflops.toFixed(1)} GFLOP/s FMA (${r.peak.isa}; best repetition of ${r.peak.probes} probes around the layers, ` +
      `whose medians ranged ${r.peak.minMedianGflops.toFixed(1)}-${r.peak.maxMedianGflops.toFixed(1)})`,
    `search  ${r.trials} candidates per layer; then ${r.rounds} alternating rounds of the best kernel and ONNX Runtime`,
    '',
    formatTable([header, ...rows], new Set([2, 3, 4, 6, 7, 8])),
    '',
  ];
  for (const l of r.layers.filter((x) => x.status === 'failed')) {
    lines.push(`FAILED layer ${l.index} (${l.description}): all ${l.candidates} candidates failed — ${l.failureReasons.join('; ')}`);
  }
  for (const l of r.layers.filter((x) => x.ortError)) lines.push(`ONNX Runtime could not run layer ${l.index}: ${l.ortError}`);
  lines.push(
    s.geomeanRatio === null
      ? `no layer has both a veltair and an ONNX Runtime figure (${s.layersFailed} failed)`
      : `geometric mean veltair/ORT ${s.geomeanRatio.toFixed(3)}x over ${s.layersCompared} layers; ` +
          `${s.layersAtOrBelowOrt} of ${s.layersCompared} at or below 1.0x ORT` +
          (s.layersFailed > 0 ? `; ${s.layersFailed} failed` : ''),
  );
  return lines.join('\n');
}

export async function benchLayersAction(modelPath: string, opts: BenchLayersCliOptions): Promise<void> {
  const trials = parsePositiveInt('--trials', opts.trials);
  const threads = parsePositiveInt('--threads', opts.threads);
  const rounds = parsePositiveInt('--rounds', opts.rounds);
  const seed = parsePositiveInt('--seed', opts.seed);
  const requested = opts.layers === undefined ? undefined : parseLayerList(opts.layers);
  const inferred = await loadModel(modelPath, { inputShapes: opts.inputShape });
  const selected = selectBenchLayers(lowerToLayers(inferred), requested);
  const target = await detectTarget();
  for (const guess of await targetNotes()) note(`warning: ${guess}`);
  const bar = progressBar(opts.json === true);
  let started = false;
  const report = await benchLayers(selected, {
    target,
    threads,
    trials,
    rounds,
    seed,
    onProgress: (done, total, label) => {
      if (!started) bar.start(total, label);
      started = true;
      bar.update(done, label);
    },
  }).finally(() => bar.stop());
  if (opts.json) printJson(report);
  else printLine(formatBenchLayersReport(report));
}
