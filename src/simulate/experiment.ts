/**
 * One `veltair simulate` invocation as data: models (with their QoS and share of the load), the
 * machine, the policies, and the loads to run — given as total QPS, as fractions of the machine's
 * capacity, or found by binary search (the highest QPS at which every model has ≥ 99% of its
 * requests within QoS, MLPerf's server-scenario rule).
 *
 * Capacity: cores × 1 s over the fewest core-seconds a request of the mix can cost (every layer
 * at its most core-efficient count). No policy can serve more, so a --qps above it is refused and
 * it is the binary search's upper end. A load of 0.75 means 75% of it.
 *
 * Every run of every policy uses the same seed, hence the same arrival sequence: policies are
 * compared on identical traffic. Pure apart from the optional decision-time measurement.
 */
import { quoteForMessage, userError } from '../errors.js';
import type { Policy } from '../schedule/policies.js';
import type { ModelPlan } from '../schedule/requirement.js';
import type { ConflictRule } from '../schedule/scheduler.js';
import { simulate, type EventView, type RunResult, type StopReason } from './engine.js';
import type { Charges } from './calibration.js';
import type { InterferenceModel } from './interference.js';
import type { RunMetrics } from './metrics.js';

export interface ExperimentModel {
  readonly plan: ModelPlan;
  /** Share of the total QPS (the shares sum to 1). */
  readonly weight: number;
}

export type LoadSpec =
  | { readonly kind: 'qps'; readonly values: readonly number[] }
  | { readonly kind: 'load'; readonly values: readonly number[] }
  | { readonly kind: 'find-max' };

export interface ExperimentOptions {
  readonly models: readonly ExperimentModel[];
  readonly cores: number;
  readonly policies: readonly Policy[];
  readonly seed: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly maxSimMs: number;
  readonly maxEvents: number;
  readonly interference: InterferenceModel;
  readonly onConflict?: ConflictRule;
  readonly loads: LoadSpec;
  readonly timeDecisions?: boolean;
  /** Simulate chained dispatch, as the server runs it (default true); false: block by block. */
  readonly chain?: boolean;
  /** Live serving's per-request and per-block costs, charged by the engine (calibration.ts). */
  readonly charges?: Charges;
  /** Binary-search steps (default 14) for find-max. */
  readonly searchSteps?: number;
  readonly onEvent?: (view: EventView) => void;
  readonly onProgress?: (message: string) => void;
}

export interface PointResult {
  readonly policy: string;
  readonly qps: number;
  /** qps / capacity. */
  readonly load: number;
  readonly stop: StopReason;
  readonly events: number;
  readonly endMs: number;
  readonly metrics: RunMetrics;
}

export interface MaxResult {
  readonly policy: string;
  readonly maxQps: number;
  readonly load: number;
  readonly probes: readonly { readonly qps: number; readonly pass: boolean; readonly satisfaction: number; readonly stop: StopReason }[];
}

export interface PolicyTiming {
  readonly policy: string;
  readonly calls: number;
  readonly requests: number;
  readonly perCallMedianUs: number;
  readonly perCallP99Us: number;
  readonly perRequestMeanUs: number;
}

export interface ExperimentResult {
  readonly capacityQps: number;
  readonly points: readonly PointResult[];
  readonly maxQps: readonly MaxResult[] | null;
  /** Every policy at one common QPS (FCFS's max when searched, else none). */
  readonly reference: { readonly qps: number; readonly points: readonly PointResult[] } | null;
  readonly timing: readonly PolicyTiming[] | null;
}

export function capacityQps(models: readonly ExperimentModel[], cores: number): number {
  const coreMsPerRequest = models.reduce((s, m) => s + m.weight * m.plan.minCoreMs, 0);
  return coreMsPerRequest > 0 ? (cores * 1000) / coreMsPerRequest : Infinity;
}

/** Refuse a --qps no policy can hold (more core-time per second than the machine has). */
export function checkHoldable(qps: number, capacity: number, cores: number): void {
  if (qps > capacity) {
    throw userError(
      'BAD_ARGUMENT',
      `--qps ${qps} needs at least ${((qps / capacity) * cores).toFixed(1)} cores busy every second, the machine has ${cores}: no policy can hold this load`,
      `the mix's capacity on ${cores} cores is ${capacity.toFixed(1)} QPS (every layer at its most efficient core count); ask for less, or use --find-max`,
    );
  }
}

const passes = (r: RunResult) => r.stop === 'drained' && r.metrics.models.every((m) => m.satisfaction >= 0.99);

export function runExperiment(o: ExperimentOptions): ExperimentResult {
  const capacity = capacityQps(o.models, o.cores);
  const say = o.onProgress ?? (() => undefined);
  const timingNs = new Map<string, { calls: number; totalNs: number; samples: number[]; requests: number }>();
  const run = (policy: Policy, qps: number, stopWhenFailed: boolean): RunResult => {
    const r = simulate({
      models: o.models.map((m) => ({ plan: m.plan, qps: qps * m.weight })),
      cores: o.cores,
      policy,
      seed: o.seed,
      durationMs: o.durationMs,
      warmupMs: o.warmupMs,
      maxSimMs: o.maxSimMs,
      maxEvents: o.maxEvents,
      interference: o.interference,
      stopWhenFailed,
      timeDecisions: o.timeDecisions === true,
      ...(o.onConflict ? { onConflict: o.onConflict } : {}),
      ...(o.onEvent ? { onEvent: o.onEvent } : {}),
      ...(o.charges ? { charges: o.charges } : {}),
      ...(o.chain === undefined ? {} : { chain: o.chain }),
    });
    if (r.timing) {
      const t = timingNs.get(policy.name) ?? { calls: 0, totalNs: 0, samples: [], requests: 0 };
      t.calls += r.timing.calls;
      t.totalNs += r.timing.totalNs;
      for (const x of r.timing.samplesNs) if (t.samples.length < 4_000_000) t.samples.push(x);
      t.requests += r.metrics.requests;
      timingNs.set(policy.name, t);
    }
    return r;
  };
  const point = (policy: Policy, qps: number): PointResult => {
    say(`simulating ${policy.name} at ${qps.toFixed(1)} QPS`);
    const r = run(policy, qps, false);
    return {
      policy: policy.name,
      qps: round(qps, 3),
      load: round(qps / capacity, 4),
      stop: r.stop,
      events: r.events,
      endMs: round(r.endMs, 3),
      metrics: r.metrics,
    };
  };

  const points: PointResult[] = [];
  let maxQps: MaxResult[] | null = null;
  let reference: ExperimentResult['reference'] = null;
  if (o.loads.kind === 'find-max') {
    maxQps = o.policies.map((policy) => {
      say(`searching the max QPS of ${policy.name}`);
      return findMax(policy, capacity, o.searchSteps ?? 14, (q) => run(policy, q, true));
    });
    const fcfs = maxQps.find((m) => m.policy === 'fcfs');
    const refQps = fcfs && fcfs.maxQps > 0 ? fcfs.maxQps : undefined;
    if (refQps !== undefined) reference = { qps: round(refQps, 3), points: o.policies.map((p) => point(p, refQps)) };
  } else {
    const qpsList = o.loads.kind === 'qps' ? o.loads.values : o.loads.values.map((f) => f * capacity);
    for (const q of qpsList) {
      checkHoldable(q, capacity, o.cores);
      for (const p of o.policies) points.push(point(p, q));
    }
  }
  const timing = o.timeDecisions
    ? [...timingNs].map(([policy, t]): PolicyTiming => {
        const s = t.samples.sort((a, b) => a - b);
        const q = (f: number) => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(f * (s.length - 1)))]!);
        return {
          policy,
          calls: t.calls,
          requests: t.requests,
          perCallMedianUs: round(q(0.5) / 1000, 3),
          perCallP99Us: round(q(0.99) / 1000, 3),
          perRequestMeanUs: round(t.totalNs / Math.max(1, t.requests) / 1000, 3),
        };
      })
    : null;
  return { capacityQps: round(capacity, 3), points, maxQps, reference, timing };
}

function findMax(policy: Policy, capacity: number, steps: number, probe: (qps: number) => RunResult): MaxResult {
  const probes: MaxResult['probes'][number][] = [];
  const test = (q: number) => {
    const r = probe(q);
    const pass = passes(r);
    probes.push({ qps: round(q, 3), pass, satisfaction: r.metrics.satisfaction, stop: r.stop });
    return pass;
  };
  let hi = capacity;
  if (!test(capacity * 0.01)) return { policy: policy.name, maxQps: 0, load: 0, probes };
  let lo = capacity * 0.01;
  for (let i = 0; i < steps && hi - lo > 0.002 * capacity; i++) {
    const mid = (lo + hi) / 2;
    if (test(mid)) lo = mid;
    else hi = mid;
  }
  return { policy: policy.name, maxQps: round(lo, 3), load: round(lo / capacity, 4), probes };
}

function round(x: number, digits: number): number {
  return Number.isFinite(x) ? Number(x.toFixed(digits)) : x;
}

/** A model list's weights: equal shares unless given. */
export function equalWeights(n: number): number[] {
  if (n < 1) throw userError('BAD_ARGUMENT', 'no models to simulate', 'give --models A,B or --mix NAME');
  return Array.from({ length: n }, () => 1 / n);
}

export function unknownModel(name: string, known: readonly string[]): never {
  throw userError(
    'BAD_ARGUMENT',
    `the mix names model ${quoteForMessage(name)}, which no profile given with --profiles describes (profiles: ` +
      `${known.map((k) => quoteForMessage(k)).join(', ') || 'none'})`,
    'profile the model (veltair profile BUNDLE) and pass it with --profiles, or drop it from --models',
  );
}
