/**
 * Evidence of the locality–parallelism trade-off. For representative layers of
 * ResNet-50 and MobileNet-V2, the locality-greedy and the parallelism-heavy ends of the schedule
 * space (plus the best of a small quiet search) run on core 0, one thread, at each interference
 * level, with the noise generator on every other core.
 *
 * Protocol, per layer and level k: R rounds; each round measures every version quietly and at
 * level k back to back (phase order and version order alternate between rounds, so a linear drift
 * favours nothing). The co-runner is started — buffers touched, pressure on — before the first
 * level-k measurement of a round and stopped after its last. Reported per version and level: the
 * median latency over rounds, and the paired slowdown (level k / quiet of the same round) with its
 * spread; per level: the locality/parallel latency ratio within the level-k phases and within the
 * quiet phases of the same rounds, hence whether and by how much the winner moves. Level 0 runs
 * two quiet phases: its "slowdown" is the machine's own drift, the floor every other ratio sits on.
 *
 *   npm run build && node dist/src/bench/tradeoff.js [--quick] [--rounds R] [--levels 0,1,2,3,4] [--json]
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { LayerGraph } from '../ir/layer.js';
import { workloadMacs, type Workload } from '../ir/workload.js';
import { describeWorkload, searchSchedules } from '../compare/layers.js';
import { measureCandidates } from '../measure/measure-candidates.js';
import { availableCores } from '../toolchain/cpu.js';
import { noiseCores, startNoise, type NoiseHandle, type NoiseStats } from '../interference/generator.js';
import { median, summarizeRatios, type RatioSummary } from '../stats.js';
import { makeCandidate, type Candidate } from '../space/candidate.js';
import { scheduleFeatures } from '../space/features.js';
import { localityGreedy, parallelHeavy } from '../space/presets.js';
import type { Schedule } from '../space/knobs.js';
import { detectTarget, type Target } from '../toolchain/target.js';
import { buildBenchModels } from './models.js';

export interface TradeoffLayer {
  readonly label: string;
  readonly model: string;
  readonly index: number;
  readonly workload: Workload;
}

type Pick = { label: string; model: string; match: (w: Workload) => boolean; quick: boolean };
const conv = (w: Workload) => (w.op === 'conv2d' ? w : undefined);
const PICKS: readonly Pick[] = [
  {
    label: 'ResNet-50 layer1 3x3',
    model: 'resnet50',
    quick: true,
    match: (w) => {
      const c = conv(w);
      return !!c && c.kh === 3 && c.cin === 64 && c.cout === 64 && c.h === 56 && c.strideH === 1;
    },
  },
  {
    label: 'ResNet-50 layer1 1x1 reduce',
    model: 'resnet50',
    quick: true,
    match: (w) => {
      const c = conv(w);
      return !!c && c.kh === 1 && c.cin === 256 && c.cout === 64 && c.h === 56;
    },
  },
  {
    label: 'MobileNet-V2 depthwise',
    model: 'mobilenet_v2',
    quick: true,
    match: (w) => {
      const c = conv(w);
      return !!c && c.groups === 144 && c.cin === 144 && c.h === 56 && c.strideH === 1;
    },
  },
  {
    label: 'ResNet-50 layer3 3x3',
    model: 'resnet50',
    quick: false,
    match: (w) => {
      const c = conv(w);
      return !!c && c.kh === 3 && c.cin === 256 && c.cout === 256 && c.h === 14 && c.strideH === 1;
    },
  },
];

/** The representative layers of the models given, found in their own layer graphs (first matching layer). */
export function pickTradeoffLayers(graphs: ReadonlyMap<string, LayerGraph>, quick: boolean): TradeoffLayer[] {
  return PICKS.filter((p) => (p.quick || !quick) && graphs.has(p.model)).map((p) => {
    const layer = graphs.get(p.model)!.layers.find((l) => l.workload !== undefined && p.match(l.workload));
    if (!layer) throw new Error(`${p.model} has no layer for "${p.label}"`);
    return { label: p.label, model: p.model, index: layer.index, workload: layer.workload! };
  });
}

export interface TradeoffOptions {
  readonly levels: readonly number[];
  readonly rounds: number;
  /** Candidates in the small quiet search for the "tuned" version (0: skip it). */
  readonly tunedTrials: number;
  readonly minTimeMs?: number;
  readonly onProgress?: (message: string) => void;
}

interface Version {
  readonly name: 'locality' | 'parallel' | 'tuned';
  readonly candidate: Candidate;
}

export interface VersionAtLevel {
  readonly quietMs: number | null;
  readonly levelMs: number | null;
  /** level k / quiet per round. */
  readonly slowdown: RatioSummary | null;
  readonly failed: number;
}

export interface LevelResult {
  readonly level: number;
  readonly versions: Readonly<Record<string, VersionAtLevel>>;
  /** locality / parallel latency per round, within the level-k phases and within the quiet ones. */
  readonly localityOverParallelAtLevel: RatioSummary | null;
  readonly localityOverParallelQuiet: RatioSummary | null;
  /**
   * The faster end within the level-k phases: 'tie' unless every round agrees (the ratio's whole
   * min–max range on one side of 1).
   */
  readonly winnerAtLevel: 'locality' | 'parallel' | 'tie' | null;
  /** What the co-runner achieved while it ran (medians over the rounds' noisy phases). */
  readonly noise: { readonly streamGBps: number; readonly randomMops: number } | null;
}

export interface VersionInfo {
  readonly name: string;
  readonly schedule: Schedule;
  readonly l2FootprintKiB: number;
  readonly parallelChunks: number;
}

export interface TradeoffLayerResult {
  readonly label: string;
  readonly model: string;
  readonly index: number;
  readonly workload: string;
  readonly description: string;
  readonly macs: number;
  readonly versions: readonly VersionInfo[];
  /** Set when the search's best is one of the two ends (then it is not measured twice). */
  readonly tunedSameAs?: string;
  readonly levels: readonly LevelResult[];
  readonly loadAvgBefore: readonly number[];
  readonly loadAvgAfter: readonly number[];
}

export interface TradeoffReport {
  readonly kernelCores: readonly number[];
  readonly noiseCores: readonly number[];
  readonly rounds: number;
  readonly levels: readonly number[];
  readonly layers: readonly TradeoffLayerResult[];
}

async function chooseVersions(w: Workload, t: Target, o: TradeoffOptions): Promise<{ versions: Version[]; tunedSameAs?: string }> {
  const ends: Version[] = [
    { name: 'locality', candidate: makeCandidate(w, localityGreedy(w, t, 1), t) },
    { name: 'parallel', candidate: makeCandidate(w, parallelHeavy(w, t, 1), t) },
  ];
  if (o.tunedTrials === 0) return { versions: ends };
  const cands = searchSchedules(w, t, 1, o.tunedTrials, 1).map((s) => makeCandidate(w, s, t));
  const measured = await measureCandidates(cands, { cores: [0], minTimeMs: o.minTimeMs ?? 100 });
  const oks = measured.filter((m) => m.measurement.status === 'ok');
  if (oks.length === 0) return { versions: ends };
  const best = oks.reduce((a, b) => (b.measurement.medianMs! < a.measurement.medianMs! ? b : a));
  const same = ends.find((e) => JSON.stringify(e.candidate.schedule) === JSON.stringify(best.candidate.schedule));
  return same ? { versions: ends, tunedSameAs: same.name } : { versions: [...ends, { name: 'tuned', candidate: best.candidate }] };
}

interface Job {
  version: number;
  phase: 'quiet' | 'level';
  round: number;
}

function planJobs(versions: number, rounds: number): Job[] {
  const jobs: Job[] = [];
  for (let round = 0; round < rounds; round++) {
    const phases = round % 2 === 0 ? (['quiet', 'level'] as const) : (['level', 'quiet'] as const);
    const order = Array.from({ length: versions }, (_, i) => (round % 2 === 0 ? i : versions - 1 - i));
    for (const phase of phases) for (const version of order) jobs.push({ version, phase, round });
  }
  return jobs;
}

const ratioOrNull = (xs: number[]) => (xs.length > 0 ? summarizeRatios(xs) : null);
const medianOrNull = (xs: number[]) => (xs.length > 0 ? median(xs) : null);

async function measureLevel(
  versions: readonly Version[],
  level: number,
  o: TradeoffOptions,
  kernelCore: number,
  noiseOn: readonly number[],
): Promise<LevelResult> {
  const jobs = planJobs(versions.length, o.rounds);
  let noise: NoiseHandle | undefined;
  const noiseStats: NoiseStats[] = [];
  const stop = async () => {
    if (!noise) return;
    const n = noise;
    noise = undefined;
    noiseStats.push(await n.stop());
  };
  let measured;
  try {
    measured = await measureCandidates(
      jobs.map((j) => versions[j.version]!.candidate),
      {
        cores: [kernelCore],
        minTimeMs: o.minTimeMs ?? 100,
        beforeJob: async (i) => {
          const wantNoise = level > 0 && jobs[i]!.phase === 'level';
          if (!wantNoise) await stop();
          else if (!noise) noise = await startNoise({ level, cores: noiseOn });
        },
        afterJob: async (i) => {
          const next = jobs[i + 1];
          if (!next || next.phase !== 'level' || next.round !== jobs[i]!.round) await stop();
        },
      },
    );
  } finally {
    await stop();
  }
  const ms = (version: number, phase: Job['phase'], round: number) => {
    const k = jobs.findIndex((j) => j.version === version && j.phase === phase && j.round === round);
    const m = measured[k]!.measurement;
    return m.status === 'ok' ? m.medianMs! : null;
  };
  const rounds = Array.from({ length: o.rounds }, (_, r) => r);
  const perVersion: Record<string, VersionAtLevel> = {};
  versions.forEach((v, vi) => {
    const pairs = rounds.map((r) => [ms(vi, 'quiet', r), ms(vi, 'level', r)] as const);
    const both = pairs.filter((p): p is readonly [number, number] => p[0] !== null && p[1] !== null);
    perVersion[v.name] = {
      quietMs: medianOrNull(pairs.map((p) => p[0]).filter((x): x is number => x !== null)),
      levelMs: medianOrNull(pairs.map((p) => p[1]).filter((x): x is number => x !== null)),
      slowdown: ratioOrNull(both.map(([q, l]) => l / q)),
      failed: pairs.flat().filter((x) => x === null).length,
    };
  });
  const locOverPar = (phase: Job['phase']) =>
    ratioOrNull(
      rounds
        .map((r) => [ms(0, phase, r), ms(1, phase, r)] as const)
        .filter((p): p is readonly [number, number] => p[0] !== null && p[1] !== null)
        .map(([a, b]) => a / b),
    );
  const atLevel = locOverPar('level');
  const seconds = (s: NoiseStats) => Math.max(s.seconds, 1e-9);
  return {
    level,
    versions: perVersion,
    localityOverParallelAtLevel: atLevel,
    localityOverParallelQuiet: locOverPar('quiet'),
    winnerAtLevel: atLevel === null ? null : atLevel.maxRatio < 1 ? 'locality' : atLevel.minRatio > 1 ? 'parallel' : 'tie',
    noise:
      noiseStats.length === 0
        ? null
        : {
            streamGBps: median(noiseStats.map((s) => (s.streamBytesRead + s.streamBytesWritten) / seconds(s) / 1e9)),
            randomMops: median(noiseStats.map((s) => s.randomOps / seconds(s) / 1e6)),
          },
  };
}

export async function runTradeoff(layers: readonly TradeoffLayer[], o: TradeoffOptions): Promise<TradeoffReport> {
  const target = await detectTarget();
  const all = availableCores();
  const kernelCore = all[0]!;
  const noiseOn = noiseCores([kernelCore], all);
  if (noiseOn.length === 0 && o.levels.some((l) => l > 0)) throw new Error('interference levels need a second core for the co-runner');
  const results: TradeoffLayerResult[] = [];
  for (const layer of layers) {
    const w = layer.workload;
    o.onProgress?.(`${layer.label}: choosing versions`);
    const loadAvgBefore = loadavg();
    const { versions, tunedSameAs } = await chooseVersions(w, target, o);
    const levels: LevelResult[] = [];
    for (const level of o.levels) {
      o.onProgress?.(`${layer.label}: level ${level}`);
      levels.push(await measureLevel(versions, level, o, kernelCore, noiseOn));
    }
    results.push({
      label: layer.label,
      model: layer.model,
      index: layer.index,
      workload: w.key,
      description: describeWorkload(w),
      macs: workloadMacs(w),
      versions: versions.map((v) => {
        const f = scheduleFeatures(w, v.candidate.schedule);
        return {
          name: v.name,
          schedule: v.candidate.schedule,
          l2FootprintKiB: Math.round(f.footprintBytes.l2 / 1024),
          parallelChunks: f.parallelChunks,
        };
      }),
      ...(tunedSameAs ? { tunedSameAs } : {}),
      levels,
      loadAvgBefore,
      loadAvgAfter: loadavg(),
    });
  }
  return { kernelCores: [kernelCore], noiseCores: noiseOn, rounds: o.rounds, levels: o.levels, layers: results };
}

const f3 = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x < 1 ? x.toFixed(4) : x.toFixed(3));
const spread = (r: RatioSummary | null) =>
  r === null ? '-' : `${r.medianRatio.toFixed(2)} [${r.minRatio.toFixed(2)}–${r.maxRatio.toFixed(2)}]`;

function verdict(l: TradeoffLayerResult): string {
  const rows = l.levels.filter((x) => x.localityOverParallelAtLevel !== null);
  if (rows.length === 0) return 'no level has both ends measured';
  const describe = (x: LevelResult) => {
    const r = x.localityOverParallelAtLevel!.medianRatio;
    const lead = r <= 1 ? 'locality' : 'parallel';
    const shift = x.localityOverParallelQuiet
      ? ` (loc/par moved ×${(r / x.localityOverParallelQuiet.medianRatio).toFixed(2)} vs the same rounds' quiet phases)`
      : '';
    return `level ${x.level}: ${x.winnerAtLevel === 'tie' ? `tie, ${lead} ahead by` : `${lead} by`} ${((Math.max(r, 1 / r) - 1) * 100).toFixed(1)}%${shift}`;
  };
  const clear = new Set(rows.map((x) => x.winnerAtLevel).filter((w) => w === 'locality' || w === 'parallel'));
  const head =
    clear.size > 1
      ? 'the winner changes with the level'
      : clear.size === 1
        ? `no change of winner: ${[...clear][0]} wins wherever a winner is clear (every round agreeing)`
        : 'no clear winner at any level (the rounds disagree everywhere)';
  return `${head}; ${rows.map(describe).join('; ')}.`;
}

export function formatTradeoffMarkdown(r: TradeoffReport): string {
  const out: string[] = [];
  for (const l of r.layers) {
    const names = l.versions.map((v) => v.name);
    out.push(`#### ${l.label}: ${l.model} layer ${l.index}, ${l.description} (${(l.macs / 1e6).toFixed(1)} MMACs)`, '');
    for (const v of l.versions) {
      const s = v.schedule;
      out.push(
        `- ${v.name}: reg ${s.regOc}x${s.regCols}, tiles ic${s.tileIc} oc${s.tileOc} rows${s.tileRows} cols${s.tileCols}, ` +
          `${s.loopOrder}, parallel over ${s.parallelAxis}; L2 tile footprint ${v.l2FootprintKiB} KiB, ${v.parallelChunks} chunks`,
      );
    }
    if (l.tunedSameAs) out.push(`- tuned: the small search's best is the ${l.tunedSameAs} end itself`);
    out.push(
      `- load average before/after: ${l.loadAvgBefore.map((x) => x.toFixed(2)).join(' ')} / ${l.loadAvgAfter.map((x) => x.toFixed(2)).join(' ')}`,
      '',
    );
    const header = [
      'level',
      'noise GB/s, Mops/s',
      ...names.flatMap((n) => [`${n} ms (quiet → level)`, `${n} slowdown`]),
      'loc/par quiet',
      'loc/par at level',
      'winner',
    ];
    out.push(`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`);
    for (const x of l.levels) {
      const noise = x.noise ? `${x.noise.streamGBps.toFixed(1)}, ${x.noise.randomMops.toFixed(1)}` : 'off';
      const cells = names.flatMap((n) => {
        const v = x.versions[n]!;
        return [`${f3(v.quietMs)} → ${f3(v.levelMs)}${v.failed ? ` (${v.failed} failed)` : ''}`, spread(v.slowdown)];
      });
      out.push(
        `| ${[
          String(x.level),
          noise,
          ...cells,
          spread(x.localityOverParallelQuiet),
          spread(x.localityOverParallelAtLevel),
          x.winnerAtLevel ?? '-',
        ].join(' | ')} |`,
      );
    }
    out.push('', `Verdict: ${verdict(l)}`, '');
  }
  return out.join('\n');
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const models = await buildBenchModels(['resnet50', 'mobilenet_v2']);
  try {
    const graphs = new Map([...models.models].map(([k, m]) => [k, m.graph]));
    const report = await runTradeoff(pickTradeoffLayers(graphs, quick), {
      levels: (arg('--levels') ?? '0,1,2,3,4').split(',').map(Number),
      rounds: Number(arg('--rounds') ?? (quick ? 3 : 4)),
      tunedTrials: Number(arg('--tuned-trials') ?? (quick ? 4 : 8)),
      onProgress: (m) => process.stderr.write(`tradeoff: ${m}\n`),
    });
    if (process.argv.includes('--json')) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    else process.stdout.write(formatTradeoffMarkdown(report) + '\n');
  } finally {
    await models.dispose();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
