/**
 * How little timing the tuner can afford: its A/A precision and its picks for each way of timing.
 *
 * Timing windows are most of a default-budget compile (bench/RESULTS.md, "where a default-budget compile
 * spends its time"), so less timing is the plainest saving, if the tuner still picks the same kernels.
 * A way of timing is a window and a number of rounds: `seq:100` times each candidate once for 100 ms,
 * one after another (the tuner today); `rr:4x25` times all of a workload's candidates for 25 ms each, four
 * times round, and takes each one's median over the rounds. On a host whose speed drifts over seconds,
 * candidates timed seconds apart are compared at different speeds; rounds spread that drift over all.
 * For each tunable workload of a model, the tuner's three preset schedules and N sampled ones (1 thread,
 * quiet) are timed once by the reference (`rr:8x50` by default), then twice by each way under test:
 *   - a look's times are read relative to the look's geometric mean, since only the order matters to a pick;
 *   - A/A: |first / second − 1| of each candidate's two relative times;
 *   - regret: the candidate the first look ranks fastest, timed by the reference, over the reference's
 *     fastest (0 = the same pick); and whether the reference's fastest is in that look's three fastest.
 * The reference never picks, so a way of timing gets no help from it. The wall time of each way's looks,
 * the harness's start and checks included, is what it costs.
 *
 *   node dist/src/bench/window-precision.js MODEL.onnx [--ways seq:100,seq:50,rr:4x25,rr:2x25] [--reference rr:8x50]
 *     [--sampled 5] [--workloads N] [--seed 7] [--json]
 * A timing: run it under the benchmark lock (`flock -x "$BENCH_LOCK" …`), nothing else on the machine.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { inferSource, modelSource } from '../compile/model-source.js';
import { lowerToLayers } from '../ir/lower.js';
import type { WorkloadShape } from '../ir/workload.js';
import { measureCandidates } from '../measure/measure-candidates.js';
import { seededRng } from '../random.js';
import { makeCandidate, type Candidate } from '../space/candidate.js';
import { repair, sampleSchedules, type Schedule } from '../space/knobs.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy } from '../space/presets.js';
import { detectTarget, type Target } from '../toolchain/target.js';
import { geometricMean, median } from '../stats.js';

/** A way of timing: each candidate `rounds` times round for `windowMs` each (rounds 1 = one after another). */
export interface TimingWay {
  readonly name: string;
  readonly rounds: number;
  readonly windowMs: number;
}

/** `seq:100` (one 100 ms window each) or `rr:4x25` (four rounds of 25 ms windows). */
export function parseWay(text: string): TimingWay {
  const seq = /^seq:(\d+(?:\.\d+)?)$/.exec(text);
  if (seq) return { name: text, rounds: 1, windowMs: Number(seq[1]) };
  const rr = /^rr:(\d+)x(\d+(?:\.\d+)?)$/.exec(text);
  if (rr && Number(rr[1]) >= 1) return { name: text, rounds: Number(rr[1]), windowMs: Number(rr[2]) };
  throw new Error(`not a way of timing: ${JSON.stringify(text)} (seq:MS or rr:ROUNDSxMS)`);
}

/** One workload's times (ms, one per candidate; NaN where a measurement failed). */
export interface WorkloadLooks {
  readonly workload: string;
  readonly reference: readonly number[];
  /** Per way of timing: its two looks. */
  readonly looks: ReadonlyMap<string, readonly [readonly number[], readonly number[]]>;
}

export interface WaySummary {
  readonly way: string;
  /** Median and 90th percentile over candidates of |first/second − 1| of relative times, as fractions. */
  readonly aaMedian: number;
  readonly aaP90: number;
  /** Over workloads: mean top-1 regret against the reference, and how many exceed 3%. */
  readonly meanRegret: number;
  readonly regretOver3: number;
  /** Workloads whose reference-fastest candidate is in the first look's three fastest. */
  readonly top3: number;
  readonly workloads: number;
}

const argmin = (xs: readonly number[]): number =>
  xs.reduce((best, x, i) => (Number.isFinite(x) && (best < 0 || x < xs[best]!) ? i : best), -1);

/** Indices of the k smallest finite values. */
function fastest(xs: readonly number[], k: number): number[] {
  return xs
    .map((x, i) => [x, i] as const)
    .filter(([x]) => Number.isFinite(x))
    .sort((a, b) => a[0] - b[0])
    .slice(0, k)
    .map(([, i]) => i);
}

/** Nearest-rank quantile of an ascending sample (NaN when empty), not stats.quantile's interpolation: each figure is one candidate's spread. */
function nearestRank(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Each time over the geometric mean of the look's finite times: a look's speed drops out, its order stays. */
export function relativeTimes(xs: readonly number[]): number[] {
  const ok = xs.filter((x) => Number.isFinite(x) && x > 0);
  if (ok.length === 0) return xs.map(() => NaN);
  const gm = geometricMean(ok);
  return xs.map((x) => (Number.isFinite(x) && x > 0 ? x / gm : NaN));
}

/** Per way of timing, its precision and its picks over a run (pure: the tests feed it fixtures). */
export function summariseWays(rows: readonly WorkloadLooks[], ways: readonly string[]): WaySummary[] {
  return ways.map((way) => {
    const spreads: number[] = [];
    const regrets: number[] = [];
    let top3 = 0;
    for (const r of rows) {
      const pair = r.looks.get(way);
      if (!pair) continue;
      const a = relativeTimes(pair[0]);
      const b = relativeTimes(pair[1]);
      a.forEach((x, i) => {
        const y = b[i]!;
        if (Number.isFinite(x) && Number.isFinite(y)) spreads.push(Math.abs(x / y - 1));
      });
      const pick = argmin(a);
      const best = argmin(r.reference);
      if (pick < 0 || best < 0 || !Number.isFinite(r.reference[pick]!)) continue;
      regrets.push(r.reference[pick]! / r.reference[best]! - 1);
      if (fastest(a, 3).includes(best)) top3++;
    }
    spreads.sort((x, y) => x - y);
    return {
      way,
      aaMedian: nearestRank(spreads, 0.5),
      aaP90: nearestRank(spreads, 0.9),
      meanRegret: regrets.length ? regrets.reduce((s, x) => s + x, 0) / regrets.length : NaN,
      regretOver3: regrets.filter((x) => x > 0.03).length,
      top3,
      workloads: regrets.length,
    };
  });
}

/**
 * Per candidate, the median over rounds of its relative time in each round: within a round the
 * candidates are timed close together, so the host's speed in that round drops out.
 */
export function combineRounds(rounds: readonly (readonly number[])[]): number[] {
  const rel = rounds.map(relativeTimes);
  const n = rounds[0]?.length ?? 0;
  return Array.from({ length: n }, (_, i) => {
    const xs = rel.map((r) => r[i]!).filter(Number.isFinite);
    return xs.length === 0 ? NaN : median(xs);
  });
}

/** The tuner's presets and `sampled` seeded draws for one workload at 1 thread, duplicates dropped. */
function candidatesFor(w: WorkloadShape, target: Target, sampled: number, seed: number): Candidate[] {
  const schedules: Schedule[] = [
    defaultTableRefresh(w, target, 1),
    localityGreedy(w, target, 1),
    parallelHeavy(w, target, 1),
    ...sampleSchedules(w, target, sampled, seededRng(seed)).map((s) => repair({ ...s, threads: 1 }, w, target)),
  ];
  const unique = [...new Map(schedules.map((s) => [JSON.stringify(s), s])).values()];
  return unique.map((s) => makeCandidate(w, s, target));
}

/** One look: every candidate, `rounds` times round, in one harness child. */
async function look(cands: readonly Candidate[], way: TimingWay): Promise<number[]> {
  const all = Array.from({ length: way.rounds }, () => cands).flat();
  const measured = await measureCandidates(all, { cores: [0], minTimeMs: way.windowMs });
  const ms = measured.map((m) => (m.measurement.status === 'ok' ? m.measurement.medianMs! : NaN));
  const rounds = Array.from({ length: way.rounds }, (_, r) => ms.slice(r * cands.length, (r + 1) * cands.length));
  return way.rounds === 1 ? rounds[0]! : combineRounds(rounds);
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      ways: { type: 'string', default: 'seq:100,seq:50,rr:4x25,rr:2x25' },
      reference: { type: 'string', default: 'rr:8x50' },
      sampled: { type: 'string', default: '5' },
      workloads: { type: 'string' },
      seed: { type: 'string', default: '7' },
      json: { type: 'boolean', default: false },
    },
  });
  const model = positionals[0];
  if (!model) throw new Error('usage: window-precision.js MODEL.onnx [--ways seq:100,rr:4x25] [--reference rr:8x50] [--sampled 5]');
  const ways = values.ways.split(',').map(parseWay);
  const reference = parseWay(values.reference);
  const target = await detectTarget();
  const graph = lowerToLayers(inferSource(modelSource(model), new Map()));
  const byKey = new Map(graph.layers.filter((l) => l.tunable).map((l) => [l.workload!.key, l.workload!]));
  const workloads = [...byKey.values()].slice(0, values.workloads ? Number(values.workloads) : undefined);
  const rows: WorkloadLooks[] = [];
  const wall = new Map<string, number>(ways.map((w) => [w.name, 0]));
  for (const [i, w] of workloads.entries()) {
    const cands = candidatesFor(w, target, Number(values.sampled), Number(values.seed) + i);
    const referenceTimes = await look(cands, reference);
    const firsts = new Map<string, number[]>();
    const looks = new Map<string, readonly [readonly number[], readonly number[]]>();
    for (const pass of [0, 1]) {
      for (const way of ways) {
        const t0 = performance.now();
        const times = await look(cands, way);
        wall.set(way.name, wall.get(way.name)! + performance.now() - t0);
        if (pass === 0) firsts.set(way.name, times);
        else looks.set(way.name, [firsts.get(way.name)!, times]);
      }
    }
    rows.push({ workload: w.key, reference: referenceTimes, looks });
    if (!values.json) process.stderr.write(`${i + 1}/${workloads.length} ${w.key}: ${cands.length} candidates\n`);
  }
  const names = ways.map((w) => w.name);
  const summary = summariseWays(rows, names);
  if (values.json) {
    console.log(
      JSON.stringify(
        {
          model,
          reference: reference.name,
          target: target.cpuModel,
          summary,
          wallMs: Object.fromEntries(wall),
          rows: rows.map((r) => ({ ...r, looks: Object.fromEntries(r.looks) })),
        },
        null,
        2,
      ),
    );
    return;
  }
  console.log(`${model}: ${rows.length} workloads, reference ${reference.name}, target ${target.cpuModel}`);
  console.log('| way | A/A median | A/A p90 | mean top-1 regret | regret > 3% | reference best in top 3 | wall of two looks |');
  console.log('|---|---|---|---|---|---|---|');
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  for (const s of summary) {
    console.log(
      `| ${s.way} | ${pct(s.aaMedian)} | ${pct(s.aaP90)} | ${pct(s.meanRegret)} | ${s.regretOver3} of ${s.workloads} | ` +
        `${s.top3} of ${s.workloads} | ${(wall.get(s.way)! / 1000).toFixed(1)} s |`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
