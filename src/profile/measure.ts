/**
 * `veltair profile`'s measurement: a bundle's per-step times with the real runtime, at each core
 * count and interference level this machine can run, every version of every tunable step.
 *
 * Protocol (DESIGN "measurement protocol", adapted to whole-model runs):
 *  - conditions = (cores c, level l): level 0 at every requested c, noisy levels only where a
 *    core is left for the co-runner (c < cores of this machine);
 *  - version vectors: vector j runs version min(j, n−1) of every tunable step, so each version
 *    of each step is timed in some vector; non-tunable steps are timed in every vector;
 *  - each round visits every condition and, inside it, every vector (orders reversed on odd
 *    rounds: a drift biases no arm); a visit is one untimed warm-up run and `runs` timed runs
 *    with per-step timing on (executor.setProfiling: two clock reads per step);
 *  - figures are medians over all timed runs of all rounds, with their quartiles and counts;
 *  - the co-runners are started once, before the runtime loads (the runtime pins its threads to
 *    the first cores), stopped, and only the level being measured runs (tune/levels.ts's bank);
 *    each co-runner's own traffic is measured alone first, for the simulator's calibration;
 *  - claim/release: at level 0, the step times of a run whose steps alternate between the
 *    smallest and largest core count, against the same steps' times in uniform runs just before:
 *    the median over steps of a step's excess is the cost of re-forming the thread team.
 * Nothing here writes files; the caller does.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { basename, join } from 'node:path';
import { readBundle } from '../bundle/read.js';
import { internalError, userError } from '../errors.js';
import { loadBundle, type Session } from '../runtime/session.js';
import {
  PROFILE_FORMAT,
  PROFILE_FORMAT_VERSION,
  checkProfile,
  type LatencyFigure,
  type Profile,
  type ProfileLevel,
  type ProfileStep,
} from '../schedule/scheduling-profile.js';
import { availableCores, levelSpec, openLevelBank, planCores, profileCoRunners, readL3Bytes, type LevelBank } from './co-runners.js';
import { mapSteps, type MappedStep } from './step-map.js';

export interface ProfileOptions {
  readonly bundleDir: string;
  readonly cores: readonly number[];
  readonly levels: readonly number[];
  readonly rounds: number;
  readonly runs: number;
  readonly name?: string;
  readonly onProgress?: (message: string) => void;
}

export interface ProfileRun {
  readonly profile: Profile;
  readonly conditions: readonly { readonly cores: number; readonly level: number }[];
  readonly skipped: readonly { readonly cores: number; readonly level: number }[];
  readonly vectors: number;
  readonly timedRuns: number;
}

const DTYPE_BYTES: Readonly<Record<string, number>> = {
  float32: 4,
  float64: 8,
  int32: 4,
  int64: 8,
  int8: 1,
  uint8: 1,
  bool: 1,
  int16: 2,
  uint16: 2,
};

/** Seeded inputs (an LCG in [−1, 1) for floats, zeros for integers: valid indices and masks). */
function feedsFor(session: Session): ArrayBufferView[] {
  let state = 12345;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  };
  return session.inputs.map((t) => {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (t.dtype === 'float32') return Float32Array.from({ length: n }, next);
    if (t.dtype === 'float64') return Float64Array.from({ length: n }, next);
    const bytes = DTYPE_BYTES[t.dtype];
    if (bytes === undefined)
      throw userError(
        'BAD_BUNDLE',
        `model input ${JSON.stringify(t.name)} has dtype ${t.dtype}, which the profiler cannot feed`,
        'profile a model whose inputs are float or integer tensors',
      );
    return new Uint8Array(n * bytes);
  });
}

function quartiles(xs: readonly number[]): { median: number; q1: number; q3: number } {
  const s = [...xs].sort((a, b) => a - b);
  const q = (f: number) => {
    const pos = (s.length - 1) * f,
      lo = Math.floor(pos),
      hi = Math.ceil(pos);
    return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
  };
  return { median: q(0.5), q1: q(0.25), q3: q(0.75) };
}

const r3 = (x: number) => Number(x.toFixed(3));

function figureOf(samplesNs: readonly number[]): LatencyFigure {
  const { median, q1, q3 } = quartiles(samplesNs);
  return {
    us: Math.max(0.001, r3(median / 1000)),
    source: 'measured',
    repeats: samplesNs.length,
    q1Us: r3(q1 / 1000),
    q3Us: r3(q3 / 1000),
  };
}

export function checkConditions(
  o: ProfileOptions,
  all: readonly number[],
): { run: { cores: number; level: number }[]; skipped: { cores: number; level: number }[] } {
  for (const c of o.cores) {
    if (c > all.length) {
      throw userError(
        'BAD_ARGUMENT',
        `--cores ${c}: this process may use ${all.length} core(s)`,
        `profile at core counts from 1 to ${all.length}; other counts are modelled by the simulator's scaling model`,
      );
    }
  }
  for (const l of o.levels) if (l !== 0) levelSpec(l);
  const run: { cores: number; level: number }[] = [],
    skipped: { cores: number; level: number }[] = [];
  for (const c of o.cores) for (const l of o.levels) (l === 0 || c < all.length ? run : skipped).push({ cores: c, level: l });
  if (run.length === 0)
    throw userError(
      'BAD_ARGUMENT',
      'no condition left to measure',
      'include level 0, or a core count that leaves a core for the co-runner',
    );
  return { run, skipped };
}

export async function measureProfile(o: ProfileOptions): Promise<ProfileRun> {
  const say = o.onProgress ?? (() => undefined);
  const all = availableCores();
  const { run: conditions, skipped } = checkConditions(o, all);
  const bundle = await readBundle(o.bundleDir);
  const manifestSha = createHash('sha256')
    .update(readFileSync(join(bundle.paths.dir, 'manifest.json')))
    .digest('hex');
  const noisy = [...new Set(conditions.map((c) => c.level).filter((l) => l > 0))].sort((a, b) => a - b);
  const corePlan = planCores(o.cores, all);
  // Co-runners first: their traffic alone, then the stopped bank, all before the runtime pins this thread.
  say(noisy.length > 0 ? `measuring the co-runners of level(s) ${noisy.join(',')} alone` : 'no noisy level');
  const gbps = noisy.length > 0 ? await profileCoRunners(noisy, corePlan.noiseCores) : new Map<number, number>();
  const l3 = await readL3Bytes();
  let bank: LevelBank | undefined;
  let session: Session | undefined;
  try {
    if (noisy.length > 0) bank = await openLevelBank({ levels: noisy, plan: corePlan });
    session = await loadBundle(bundle.paths.dir, { threads: Math.max(...o.cores), pinThreads: true });
    for (const w of session.warnings) say(`warning: ${w}`);
    const steps = mapSteps(
      session.manifest,
      session.stepOfPlan,
      session.executor.stepCount,
      session.tunableLayers.map((t) => t.step),
    );
    const measured = await measureAll(session, steps, conditions, bank, o, say);
    const levels: ProfileLevel[] = [
      { level: 0, summary: 'quiet: no co-runner', coRunnerGBps: 0, coRunnerBytes: 0, source: 'measured' },
      ...noisy.map((l) => {
        const s = bank!.runners.get(l)!.settings;
        return {
          level: l,
          summary: levelSpec(l).summary,
          coRunnerGBps: r3(gbps.get(l) ?? 0),
          coRunnerBytes: s.randomBytes + s.streamBytes,
          source: 'measured' as const,
        };
      }),
    ];
    const name =
      o.name ?? (basename(bundle.manifest.model.path).replace(/\.onnx$/i, '') || basename(bundle.paths.dir).replace(/\.bundle$/, ''));
    const cpu = cpus()[0]?.model?.trim() ?? 'unknown CPU';
    const profile = checkProfile(
      {
        format: PROFILE_FORMAT,
        formatVersion: PROFILE_FORMAT_VERSION,
        model: { name, sha256: bundle.manifest.model.sha256, manifestSha256: manifestSha },
        machine: {
          description: `${cpu}, ${all.length} cores available (${cpus().length} online), L3 ${(l3.bytes / 2 ** 20).toFixed(0)} MiB (${l3.source})`,
          cores: all.length,
          l3Bytes: l3.bytes,
          source: 'measured',
        },
        method:
          `veltair profile: ${o.rounds} interleaved round(s), ${o.runs} timed run(s) per visit after one warm-up, ${measured.vectors} version ` +
          `vector(s); medians of per-step times (executor.setProfiling); ` +
          `kernel threads on cores ${corePlan.allCores.slice(0, Math.max(...o.cores)).join(',')}, co-runners on ` +
          `${corePlan.noiseCores.join(',') || 'none'}; ${new Date().toISOString()}`,
        coreCounts: [...o.cores].sort((a, b) => a - b),
        levels,
        claimCost: measured.claim,
        steps: measured.steps,
      } satisfies Profile,
      'the measured profile',
    );
    return { profile, conditions, skipped, vectors: measured.vectors, timedRuns: measured.timedRuns };
  } finally {
    session?.close();
    await bank?.close();
  }
}

interface Measured {
  readonly steps: ProfileStep[];
  readonly claim: Profile['claimCost'];
  readonly vectors: number;
  readonly timedRuns: number;
}

async function measureAll(
  session: Session,
  steps: readonly MappedStep[],
  conditions: readonly { cores: number; level: number }[],
  bank: LevelBank | undefined,
  o: ProfileOptions,
  say: (m: string) => void,
): Promise<Measured> {
  const ex = session.executor;
  const feeds = feedsFor(session);
  const outs = ex.run(feeds);
  const V = Math.max(1, ...session.tunableLayers.map((t) => t.versions.length));
  const vectors = Array.from({ length: V }, (_, j) => session.tunableLayers.map((t) => Math.min(j, t.versions.length - 1)));
  const S = ex.stepCount;
  // samples[condition][vector][step] → ns per timed run
  const samples = conditions.map(() => vectors.map(() => Array.from({ length: S }, () => [] as number[])));
  const claimSamples: number[] = [];
  const counts = [...new Set(conditions.map((c) => c.cores))].sort((a, b) => a - b);
  const lo = counts[0]!,
    hi = counts[counts.length - 1]!;
  let timedRuns = 0;
  const timedRun = (into: number[][] | undefined): Float64Array => {
    ex.run(feeds, outs);
    const t = Float64Array.from(ex.stepTimesNs());
    if (t.length !== S) throw internalError(`profiling returned ${t.length} step times for ${S} steps`);
    if (into) t.forEach((ns, s) => into[s]!.push(ns));
    timedRuns++;
    return t;
  };
  ex.setProfiling(true);
  try {
    for (let round = 0; round < o.rounds; round++) {
      const order = round % 2 === 0 ? conditions.map((_, i) => i) : conditions.map((_, i) => conditions.length - 1 - i);
      for (const ci of order) {
        const c = conditions[ci]!;
        say(`round ${round + 1}/${o.rounds}: ${c.cores} core(s), level ${c.level}`);
        await bank?.activate(c.level);
        const vorder = round % 2 === 0 ? vectors.map((_, j) => j) : vectors.map((_, j) => V - 1 - j);
        for (const j of vorder) {
          session.useVersions(vectors[j]!);
          session.setThreads(c.cores);
          timedRun(undefined);
          for (let r = 0; r < o.runs; r++) timedRun(samples[ci]![j]!);
          // Let the event loop in between visits: a signal's handler (which stops the co-runners) must get to run.
          await new Promise((resolve) => setImmediate(resolve));
        }
        if (c.level === 0 && c.cores === hi && lo !== hi)
          claimSamples.push(...measureClaim(session, vectors[0]!, lo, hi, o.runs, timedRun));
      }
      await bank?.quiesce();
    }
  } finally {
    ex.setProfiling(false);
    await bank?.quiesce();
  }
  const profileSteps = steps.map((st, index): ProfileStep => {
    const latencyFor = (pick: (ci: number) => number[]) => {
      const out: Record<string, Record<string, LatencyFigure>> = {};
      conditions.forEach((c, ci) => {
        const xs = pick(ci);
        if (xs.length === 0) return;
        (out[String(c.cores)] ??= {})[String(c.level)] = figureOf(xs);
      });
      return out;
    };
    const base = {
      index,
      name: st.name,
      op: st.op,
      kind: st.kind,
      layer: st.layer,
      flops: st.flops,
      bytes: st.bytes,
      footprintBytes: st.footprintBytes,
    };
    if (st.kind === 'tunable') {
      return {
        ...base,
        versions: st.versions.map((v, k) => ({
          id: v.id,
          symbol: v.symbol,
          tunedThreads: v.threads,
          parallelChunks: v.features.parallelChunks,
          latencyUs: latencyFor((ci) => vectors.flatMap((vec, j) => (vec[st.tunableIndex] === k ? samples[ci]![j]![st.native]! : []))),
        })),
      };
    }
    return {
      ...base,
      versions: [
        {
          id: st.kind,
          symbol: null,
          tunedThreads: null,
          parallelChunks: null,
          latencyUs: latencyFor((ci) => samples[ci]!.flatMap((byStep) => byStep[st.native]!)),
        },
      ],
    };
  });
  const claim =
    claimSamples.length > 0
      ? {
          us: Math.max(0, r3(quartiles(claimSamples).median / 1000)),
          threads: hi,
          source: 'measured' as const,
          repeats: claimSamples.length,
        }
      : null;
  return { steps: profileSteps, claim, vectors: V, timedRuns };
}

/**
 * Runs with steps alternating lo / hi threads, each against the uniform runs just before: the
 * median excess step time per thread-count switch (ns), one sample per run.
 */
function measureClaim(
  session: Session,
  vector: readonly number[],
  lo: number,
  hi: number,
  runs: number,
  timedRun: (into: undefined) => Float64Array,
): number[] {
  const ex = session.executor;
  session.useVersions(vector);
  const S = ex.stepCount;
  const uniform = (t: number) => {
    session.setThreads(t);
    timedRun(undefined);
    return Array.from({ length: runs }, () => timedRun(undefined));
  };
  const atLo = uniform(lo),
    atHi = uniform(hi);
  const med = (rows: Float64Array[], s: number) => quartiles(rows.map((r) => r[s]!)).median;
  const threadsOf = (s: number) => (s % 2 === 0 ? lo : hi);
  for (let s = 0; s < S; s++) ex.setThreads(s, threadsOf(s));
  timedRun(undefined);
  const out: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t = timedRun(undefined);
    // Median over steps of each step's excess over its uniform-run median: one disturbed step
    // (another tenant on the core) moves a sum, not a median.
    const excess: number[] = [];
    for (let s = 1; s < S; s++) excess.push(t[s]! - med(threadsOf(s) === lo ? atLo : atHi, s));
    if (excess.length > 0) out.push(quartiles(excess).median);
  }
  session.setThreads(hi);
  return out;
}
