/**
 * Per-layer benchmark: for each chosen tunable layer, a small search over the schedule space
 * (the three presets plus seeded samples), then the best candidate re-measured alternately with
 * ONNX Runtime running the same layer as a single-op model (veltair, ORT, ORT, veltair, …), so
 * the two figures are always taken seconds apart on the same cores with the same thread count.
 * The harness pins the kernel's threads; ORT runs in a child pinned the same way (src/ort/layer-child.ts).
 * The FMA peak is measured in the same run, before and after the layers. `veltair bench-layers`
 * is a thin CLI over benchLayers(); run.ts calls it on the zoo models.
 */
import { userError } from '../errors.js';
import type { Layer, LayerGraph } from '../ir/layer.js';
import { workloadMacs, type Workload } from '../ir/workload.js';
import { makeCandidate, type Candidate } from '../space/candidate.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy } from '../space/presets.js';
import { seededRng } from '../random.js';
import { repair, sampleSchedules, type Schedule } from '../space/knobs.js';
import type { Target } from '../toolchain/target.js';
import { measureCandidates } from '../measure/measure-candidates.js';
import { availableCores } from '../toolchain/cpu.js';
import { startOrtChild, type OrtChild } from '../ort/layer-child.js';
import { MALLOC_KEEP_TUNABLES } from '../toolchain/malloc-tunables.js';
import { measurePeakGflops, type PeakResult } from '../measure/peak.js';
import type { MeasureStatus } from '../measure/run-candidate.js';
import { geometricMean, interleave, median, summarizeRatios, type RatioSummary } from '../stats.js';

/** One unique workload to benchmark, and every chosen layer index that computes it. */
export interface SelectedLayer {
  readonly index: number;
  readonly alsoIndices: readonly number[];
  readonly layer: Layer;
  readonly workload: Workload;
}

/**
 * The layers to benchmark, deduplicated by workload key (first index wins). `requested`: layer
 * indices as `veltair inspect` prints them; a missing or non-tunable one is a user error.
 */
export function selectBenchLayers(graph: LayerGraph, requested?: readonly number[]): SelectedLayer[] {
  const tunable = graph.layers.filter((l) => l.tunable && l.workload !== undefined);
  if (requested !== undefined) {
    const bad = requested.find((i) => !tunable.some((l) => l.index === i));
    if (bad !== undefined) {
      const what = graph.layers[bad]
        ? `is a ${graph.layers[bad]!.op} layer, which veltair does not tune`
        : `is out of range (0..${graph.layers.length - 1})`;
      throw userError(
        'BAD_ARGUMENT',
        `--layers: layer ${bad} ${what}`,
        `tunable layer indices: ${compactRanges(tunable.map((l) => l.index))} (see \`veltair inspect MODEL\`)`,
      );
    }
  }
  const chosen = requested === undefined ? tunable : [...new Set(requested)].map((i) => tunable.find((l) => l.index === i)!);
  const byKey = new Map<string, { first: Layer; also: number[] }>();
  for (const l of chosen) {
    const entry = byKey.get(l.workload!.key);
    if (entry) entry.also.push(l.index);
    else byKey.set(l.workload!.key, { first: l, also: [] });
  }
  return [...byKey.values()].map(({ first, also }) => ({ index: first.index, alsoIndices: also, layer: first, workload: first.workload! }));
}

/** "0-3,5,7-9": keeps the hint of a 50-layer model on one line. */
export function compactRanges(xs: readonly number[]): string {
  const s = [...new Set(xs)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < s.length;) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j]! + 1) j++;
    parts.push(j > i ? `${s[i]}-${s[j]}` : String(s[i]));
    i = j + 1;
  }
  return parts.join(',');
}

const EPILOGUE_SHORT: Readonly<Record<string, string>> = { residual_add: 'res', channel_mul: 'cmul', hard_swish: 'hswish' };

/** A short human description: `conv 3x3 64>64 s1 56x56 +relu`, `dw 3x3 144 s2 112x112 +clip`, … (bias not shown). */
export function describeWorkload(w: Workload): string {
  const epilogue = w.epilogue
    .filter((k) => k !== 'bias')
    .map((k) => `+${EPILOGUE_SHORT[k] ?? k}`)
    .join('');
  return epilogue ? `${describeCore(w)} ${epilogue}` : describeCore(w);
}

function describeCore(w: Workload): string {
  switch (w.op) {
    case 'conv2d': {
      const dw = w.groups === w.cin && w.groups === w.cout && w.groups > 1;
      const ch = dw ? `${w.cin}` : `${w.cin}>${w.cout}${w.groups > 1 ? ` g${w.groups}` : ''}`;
      return `${dw ? 'dw' : 'conv'} ${w.kh}x${w.kw} ${ch} s${w.strideH} ${w.h}x${w.w}`;
    }
    case 'dense':
      return `dense ${w.m}x${w.k}>${w.n}`;
    case 'batch_matmul':
      return `bmm ${w.batch}x${w.m}x${w.k}x${w.n}${w.transB ? ' tB' : ''}`;
  }
}

/**
 * The schedules a layer's search measures: balanced default, locality-greedy and
 * parallelism-heavy ends, then seeded samples, all at the benchmark's thread count, deduplicated,
 * at most `trials` of them.
 */
export function searchSchedules(w: Workload, t: Target, threads: number, trials: number, seed: number): Schedule[] {
  const presets = [defaultTableRefresh(w, t, threads), localityGreedy(w, t, threads), parallelHeavy(w, t, threads)];
  const samples = sampleSchedules(w, t, Math.max(trials * 3, 8), seededRng(seed)).map((s) => repair({ ...s, threads }, w, t));
  const unique = new Map<string, Schedule>();
  for (const s of [...presets, ...samples]) {
    if (unique.size >= trials) break;
    unique.set(JSON.stringify(s), s);
  }
  return [...unique.values()];
}

export interface LayerBenchOptions {
  readonly target: Target;
  readonly threads: number;
  readonly trials: number;
  /** Alternating veltair/ORT rounds after the search (default 3). */
  readonly rounds?: number;
  readonly seed?: number;
  /** Minimum timed milliseconds per measurement (default 100, the protocol's floor). */
  readonly minTimeMs?: number;
  readonly cacheDir?: string;
  readonly onProgress?: (done: number, total: number, label: string) => void;
}

export type FailedStatus = Exclude<MeasureStatus, 'ok'>;

export interface LayerBenchResult {
  readonly index: number;
  readonly alsoIndices: readonly number[];
  readonly workload: string;
  readonly op: string;
  readonly description: string;
  readonly macs: number;
  readonly status: 'ok' | 'failed';
  /** Median over rounds of the best candidate's median latency; null when every candidate failed. */
  readonly veltairMs: number | null;
  /** Median over rounds of ORT's median latency; null when ORT could not run the layer. */
  readonly ortMs: number | null;
  /** veltairMs / ortMs. */
  readonly ratio: number | null;
  /** Per round veltair/ORT of back-to-back measurements: the drift-free comparison. */
  readonly pairedRatio: RatioSummary | null;
  readonly gflops: number | null;
  readonly peakPercent: number | null;
  readonly candidates: number;
  readonly failed: number;
  readonly failures: Readonly<Partial<Record<FailedStatus | 'error', number>>>;
  /** First distinct failure messages (at most 3), for a failed layer's report. */
  readonly failureReasons: readonly string[];
  readonly bestSchedule: Schedule | null;
  /** ORT's per-call overhead (upper bound) measured beside it: a Relu over the output. */
  readonly ortOverheadMs: number | null;
  readonly ortError?: string;
  readonly rounds: { readonly veltairMs: readonly (number | null)[]; readonly ortMs: readonly (number | null)[] };
}

export interface LayerBenchReport {
  readonly peakGflops: number;
  /** Best repetition of all FMA probes (= peakGflops); each probe's median, lowest and highest. */
  readonly peak: { readonly isa: string; readonly probes: number; readonly minMedianGflops: number; readonly maxMedianGflops: number };
  readonly threads: number;
  readonly cores: readonly number[];
  /** Whether ORT's process was pinned to `cores` (taskset) from its start. */
  readonly ortPinned: boolean;
  /** GLIBC_TUNABLES ORT ran under (see src/toolchain/malloc-tunables.ts for why). */
  readonly ortMallocTunables: string;
  readonly target: { readonly cpuModel: string; readonly cores: number; readonly cc: string };
  readonly trials: number;
  readonly rounds: number;
  readonly layers: readonly LayerBenchResult[];
  readonly summary: LayerBenchSummary;
}

export interface LayerBenchSummary {
  /** Geometric mean of veltair/ORT over layers with both figures; null when there are none. */
  readonly geomeanRatio: number | null;
  readonly layersCompared: number;
  readonly layersAtOrBelowOrt: number;
  readonly layersFailed: number;
}

function countFailures(statuses: readonly { status: string; message?: string }[]) {
  const failures: Partial<Record<FailedStatus | 'error', number>> = {};
  const reasons: string[] = [];
  for (const m of statuses) {
    if (m.status === 'ok') continue;
    const k = m.status as FailedStatus | 'error';
    failures[k] = (failures[k] ?? 0) + 1;
    const why = `${m.status}: ${(m.message ?? '').split('\n')[0]!.slice(0, 160)}`.trim();
    if (reasons.length < 3 && !reasons.includes(why)) reasons.push(why);
  }
  return { failures, reasons };
}

async function measureBest(c: Candidate, o: LayerBenchOptions, cores: readonly number[]): Promise<number | null> {
  const [r] = await measureCandidates([c], { cores, minTimeMs: o.minTimeMs ?? 100, ...(o.cacheDir ? { cacheDir: o.cacheDir } : {}) });
  return r?.measurement.status === 'ok' ? r.measurement.medianMs! : null;
}

interface OrtSample {
  ms: number | null;
  overheadMs: number | null;
  error?: string;
}

async function measureOrt(ort: OrtChild, w: Workload, o: LayerBenchOptions): Promise<OrtSample> {
  try {
    const t = await ort.measure(w, o.threads, o.minTimeMs ?? 100);
    return { ms: t.medianMs, overheadMs: t.overheadMs };
  } catch (e) {
    return { ms: null, overheadMs: null, error: (e instanceof Error ? e.message : String(e)).split('\n')[0]! };
  }
}

const medianOrNull = (xs: readonly (number | null)[]) => {
  const ok = xs.filter((x): x is number => x !== null);
  return ok.length > 0 ? median(ok) : null;
};

/** Search, then alternate the best candidate with ORT; never throws for a failing candidate. */
export async function benchOneLayer(
  sel: SelectedLayer,
  o: LayerBenchOptions,
  cores: readonly number[],
  ort: OrtChild,
  peakGflops: number,
  step: (label: string) => void = () => {},
): Promise<LayerBenchResult> {
  const w = sel.workload;
  const macs = workloadMacs(w);
  const schedules = searchSchedules(w, o.target, o.threads, o.trials, o.seed ?? 1);
  const statuses: { status: string; message?: string; medianMs?: number; schedule?: Schedule; candidate?: Candidate }[] = [];
  const candidates: Candidate[] = [];
  for (const s of schedules) {
    try {
      candidates.push(makeCandidate(w, s, o.target));
    } catch (e) {
      statuses.push({ status: 'error', message: (e as Error).message });
    }
  }
  step('search');
  try {
    const measured = await measureCandidates(candidates, {
      cores,
      minTimeMs: o.minTimeMs ?? 100,
      ...(o.cacheDir ? { cacheDir: o.cacheDir } : {}),
    });
    for (const m of measured) statuses.push({ ...m.measurement, candidate: m.candidate });
  } catch (e) {
    for (let i = 0; i < candidates.length; i++) statuses.push({ status: 'error', message: (e as Error).message });
  }
  const oks = statuses.filter((s) => s.status === 'ok' && s.medianMs !== undefined);
  const best = oks.reduce<(typeof oks)[number] | undefined>((a, b) => (a === undefined || b.medianMs! < a.medianMs! ? b : a), undefined);
  const { failures, reasons } = countFailures(statuses);
  const rounds = o.rounds ?? 3;

  const ortSamples: OrtSample[] = [];
  const veltairSamples: (number | null)[] = [];
  const arms = best ? (['veltair', 'ort'] as const) : (['ort'] as const);
  await interleave<'veltair' | 'ort', void>(
    arms,
    best ? rounds : 1,
    async (arm) => {
      step(arm);
      if (arm === 'veltair') veltairSamples.push(await measureBest(best!.candidate!, o, cores));
      else {
        ortSamples.push(await measureOrt(ort, w, o));
      }
    },
    { alternate: true },
  );

  const veltairMs = medianOrNull(veltairSamples);
  const ortMs = medianOrNull(ortSamples.map((s) => s.ms));
  const paired = veltairSamples
    .map((v, r) => (v !== null && ortSamples[r]?.ms ? v / ortSamples[r]!.ms! : null))
    .filter((x): x is number => x !== null);
  const gflops = veltairMs !== null ? (2 * macs) / (veltairMs * 1e6) : null;
  const ortError = ortSamples.find((s) => s.error)?.error;
  return {
    index: sel.index,
    alsoIndices: sel.alsoIndices,
    workload: w.key,
    op: sel.layer.op,
    description: describeWorkload(w),
    macs,
    status: veltairMs === null ? 'failed' : 'ok',
    veltairMs,
    ortMs,
    ratio: veltairMs !== null && ortMs !== null ? veltairMs / ortMs : null,
    pairedRatio: paired.length > 0 ? summarizeRatios(paired) : null,
    gflops,
    peakPercent: gflops !== null ? (100 * gflops) / peakGflops : null,
    candidates: schedules.length,
    failed: statuses.length - oks.length,
    failures,
    failureReasons: veltairMs === null && best ? [...reasons, 'the best candidate failed every re-measurement'] : reasons,
    bestSchedule: best?.candidate?.schedule ?? null,
    ortOverheadMs: medianOrNull(ortSamples.map((s) => s.overheadMs)),
    ...(ortError ? { ortError } : {}),
    rounds: { veltairMs: veltairSamples, ortMs: ortSamples.map((s) => s.ms) },
  };
}

export function summarizeLayerBench(layers: readonly LayerBenchResult[]): LayerBenchSummary {
  const ratios = layers.map((l) => l.ratio).filter((r): r is number => r !== null);
  return {
    geomeanRatio: ratios.length > 0 ? geometricMean(ratios) : null,
    layersCompared: ratios.length,
    layersAtOrBelowOrt: ratios.filter((r) => r <= 1).length,
    layersFailed: layers.filter((l) => l.status === 'failed').length,
  };
}

/** The whole benchmark over the selected layers, the FMA peak probed around every layer on the same cores. */
export async function benchLayers(selected: readonly SelectedLayer[], o: LayerBenchOptions): Promise<LayerBenchReport> {
  const all = availableCores();
  if (!Number.isInteger(o.threads) || o.threads < 1 || o.threads > all.length) {
    throw userError(
      'BAD_ARGUMENT',
      `--threads ${o.threads} is not between 1 and the ${all.length} available cores`,
      `e.g. --threads 1 (kernel and ONNX Runtime then both run on core 0)`,
    );
  }
  if (!Number.isInteger(o.trials) || o.trials < 1) {
    throw userError('BAD_ARGUMENT', `--trials ${o.trials} is not a positive integer`, 'e.g. --trials 16');
  }
  const cores = all.slice(0, o.threads);
  // The peak is a ceiling: other tenants can only lower a reading. So it is probed before, between
  // and after the layers, and the best repetition of all stands for the machine's peak.
  const probes: PeakResult[] = [];
  const probePeak = async () => {
    probes.push(await measurePeakGflops({ cores, threads: o.threads, reps: 5, ms: 20, ...(o.cacheDir ? { cacheDir: o.cacheDir } : {}) }));
    return Math.max(...probes.flatMap((p) => p.samples.map((x) => x.total)));
  };
  let peakSoFar = await probePeak();
  const stepsPerLayer = 1 + 2 * (o.rounds ?? 3);
  const total = selected.length * stepsPerLayer;
  let done = 0;
  const layers: LayerBenchResult[] = [];
  const ort = await startOrtChild(cores);
  try {
    for (const [i, sel] of selected.entries()) {
      const label = `layer ${sel.index} ${describeWorkload(sel.workload)}`;
      layers.push(await benchOneLayer(sel, o, cores, ort, peakSoFar, (what) => o.onProgress?.(done++, total, `${label}: ${what}`)));
      done = (i + 1) * stepsPerLayer;
      peakSoFar = await probePeak();
    }
  } finally {
    await ort.close();
  }
  o.onProgress?.(total, total, 'peak');
  const peakGflops = peakSoFar;
  const rescaled = layers.map((l) => ({ ...l, peakPercent: l.gflops !== null ? (100 * l.gflops) / peakGflops : null }));
  const medians = probes.map((p) => p.gflops);
  return {
    peakGflops,
    peak: { isa: probes[0]!.isa, probes: probes.length, minMedianGflops: Math.min(...medians), maxMedianGflops: Math.max(...medians) },
    threads: o.threads,
    cores,
    ortPinned: ort.pinned,
    ortMallocTunables: MALLOC_KEEP_TUNABLES,
    target: { cpuModel: o.target.cpuModel, cores: o.target.cores, cc: o.target.cc },
    trials: o.trials,
    rounds: o.rounds ?? 3,
    layers: rescaled,
    summary: summarizeLayerBench(rescaled),
  };
}
