/**
 * The discrete-event simulator: Poisson arrivals per model onto a machine of N cores, driving the
 * scheduler library (src/schedule/scheduler.ts) exactly as the live server does — arrive(),
 * blockFinished(), with simulated time passed in.
 *
 * Execution: a running block progresses at rate 1 / T(level), T = its claim/release (when its
 * core set changed) + Σ of its layers' latency at the granted cores, chosen versions and the
 * current interference level. Whenever the set of running blocks changes, every block's level is
 * recomputed from the others' traffic and footprint (interference.ts) and its finish time moved;
 * so interference is felt for exactly as long as the co-runners run.
 *
 * Chained dispatch (option `chain`, default true: what the live server does, dispatcher.ts): the
 * scheduler may hand a request a chain of blocks on one core set (Decision.chainLast). It is
 * simulated as one run over all its units, paying the per-block charge (calibration.ts: dispatch
 * and hand-back) once. When the scheduler asks a chain to stop (takePreemptions), the run ends at
 * the first layer boundary past the committed block that it has not yet reached, in its progress
 * at level 0 proportions; blockFinished then hears where it stopped. `chain: false` simulates the
 * block-by-block path (every block a hand-off).
 *
 * Bounds: arrivals stop at durationMs; the run ends when every request has left (`drained`), or at
 * maxSimMs of simulated time (`time-bound`), or after maxEvents events (`event-bound`), or, when
 * asked, as soon as a model has more late requests than its 1% allowance (`failed-early`, used by
 * the max-QPS search). Deterministic given the seed: no clock is read except, optionally, the
 * process's high-resolution timer around scheduler calls, and that goes only into `timing`.
 */
import { internalError } from '../errors.js';
import { LEVEL_COUNT, latAt } from '../schedule/model-table.js';
import type { ModelPlan } from '../schedule/requirement.js';
import { Heap } from '../schedule/heap.js';
import type { Policy } from '../schedule/policies.js';
import { Scheduler, type ConflictRule, type Decision } from '../schedule/scheduler.js';
import type { Charges } from './calibration.js';
import type { InterferenceModel } from './interference.js';
import type { Uniform } from '../random.js';
import { exponential, streamFor } from './rng.js';
import { Metrics, type RunMetrics } from './metrics.js';

export interface SimModel {
  readonly plan: ModelPlan;
  /** Offered load (queries per second of simulated time). */
  readonly qps: number;
}

export interface SimOptions {
  readonly models: readonly SimModel[];
  readonly cores: number;
  readonly policy: Policy;
  readonly seed: number;
  readonly durationMs: number;
  /** Requests arriving before this are not counted (the system fills up). */
  readonly warmupMs: number;
  readonly maxSimMs: number;
  readonly maxEvents: number;
  readonly interference: InterferenceModel;
  readonly onConflict?: ConflictRule;
  /** Stop as soon as a model exceeds its 1% allowance of late requests. */
  readonly stopWhenFailed?: boolean;
  /** Called after every event with the running blocks (tests check invariants there). */
  readonly onEvent?: (view: EventView) => void;
  /** Time each scheduler call with process.hrtime (real time, kept apart from the simulated output). */
  readonly timeDecisions?: boolean;
  /** What live serving pays per request and per block (calibration.ts); none: only the profiles' costs. */
  readonly charges?: Charges;
  /** Simulate chained dispatch (default true, as the server); false: every block returns to the scheduler. */
  readonly chain?: boolean;
}

export interface RunningView {
  readonly request: number;
  readonly model: number;
  readonly cores: readonly number[];
}

export interface EventView {
  readonly now: number;
  readonly running: readonly RunningView[];
  readonly scheduler: Scheduler;
}

export type StopReason = 'drained' | 'time-bound' | 'event-bound' | 'failed-early';

export interface DecisionTiming {
  readonly calls: number;
  readonly totalNs: number;
  /** Per scheduler call (ns): all samples, for quantiles. */
  readonly samplesNs: Float64Array;
}

export interface RunResult {
  readonly stop: StopReason;
  readonly events: number;
  readonly endMs: number;
  readonly metrics: RunMetrics;
  readonly timing: DecisionTiming | null;
}

interface Running {
  readonly d: Decision;
  readonly startMs: number;
  /** Block time at each integer level (ms), claim included. */
  readonly atLevel: Float64Array;
  readonly claimMs: number;
  /** Nominal per-unit times at level 0 (for splitting the block's duration over its layers). */
  readonly unitMs: Float64Array;
  /** Share of the run done at the end of each unit (level 0 proportions, claim first). */
  readonly unitEnd: Float64Array;
  /** Share of the run at which it ends (1, or a preempted chain's stop) and the unit it stops before. */
  endShare: number;
  stopUnit: number | undefined;
  readonly gbps: number;
  readonly footprint: number;
  remaining: number;
  rate: number;
  level: number;
  version: number;
}

interface Event {
  readonly t: number;
  readonly seq: number;
  readonly kind: 0 | 1; // 0 arrival, 1 finish
  readonly ref: number; // model index or request id
  readonly version: number;
}

const eventOrder = (a: Event, b: Event) => a.t < b.t || (a.t === b.t && a.seq < b.seq);

export function simulate(o: SimOptions): RunResult {
  const N = o.cores;
  const plans = o.models.map((m) => m.plan);
  const running = new Map<number, Running>();
  const events = new Heap<Event>(eventOrder);
  let seq = 0;
  let now = 0;
  let nextId = 0;
  const metrics = new Metrics(
    plans,
    N,
    o.warmupMs,
    o.durationMs,
    o.models.map((m) => (m.qps * Math.max(0, o.durationMs - o.warmupMs)) / 1000),
  );
  const rngs: Uniform[] = o.models.map((_, i) => streamFor(o.seed, i));
  let gSum = 0,
    fSum = 0;
  const predictLevel = (_cores: readonly number[], _model: number) => o.interference.levelFor(gSum, fSum);
  const scheduler = new Scheduler({
    policy: o.policy,
    models: plans,
    cores: N,
    ...(o.onConflict ? { onConflict: o.onConflict } : {}),
    predictLevel,
    // The offered rates are the declared load a static partition is sized for.
    loadShares: o.models.map((m) => m.qps),
    chain: o.chain ?? true,
  });
  const timing = o.timeDecisions ? { calls: 0, totalNs: 0, samples: [] as number[] } : null;
  // Only calls inside the counted window are timed: the first ones also pay V8's compilation.
  const timed = <T>(f: () => T): T => {
    if (!timing || now < o.warmupMs || now >= o.durationMs) return f();
    const t0 = process.hrtime.bigint();
    const r = f();
    const ns = Number(process.hrtime.bigint() - t0);
    timing.calls++;
    timing.totalNs += ns;
    if (timing.samples.length < 2_000_000) timing.samples.push(ns);
    return r;
  };

  // The front end's CPU time at the offered rates slows every block alike (calibration.ts).
  const stretch = o.charges
    ? 1 /
      (1 -
        o.charges.share(
          o.models.map((m) => m.qps),
          N,
        ))
    : 1;
  const frontEndMs = o.models.map((_, i) => o.charges?.frontEndMs[i] ?? 0);

  o.models.forEach((m, i) => {
    if (m.qps > 0) events.push({ t: exponential(rngs[i]!, m.qps / 1000), seq: seq++, kind: 0, ref: i, version: 0 });
  });

  const advance = (t: number) => {
    const dt = t - now;
    if (dt > 0) for (const b of running.values()) b.remaining -= dt * b.rate;
    metrics.advance(now, t, scheduler.inSystem, N - scheduler.pool.free);
    now = t;
  };

  const startBlock = (d: Decision) => {
    const p = plans[d.model]!;
    const units = p.table.units;
    const g = d.cores.length;
    const claimMs = (d.claim ? p.table.claimMs[g]! : 0) + (o.charges ? o.charges.blockMs(g) : 0);
    const atLevel = new Float64Array(LEVEL_COUNT).fill(claimMs);
    const unitMs = new Float64Array(d.chainLast - d.first + 1);
    let bytes = 0,
      footprint = 0;
    for (let u = d.first; u <= d.chainLast; u++) {
      const unit = units[u]!;
      const v = d.versions[u - d.first]!;
      for (let l = 0; l < LEVEL_COUNT; l++) atLevel[l]! += latAt(unit, p.table.maxCores, v, g, l);
      unitMs[u - d.first] = latAt(unit, p.table.maxCores, v, g, 0);
      bytes += unit.bytes;
      footprint = Math.max(footprint, unit.footprintBytes);
    }
    if (stretch !== 1) for (let l = 0; l < LEVEL_COUNT; l++) atLevel[l]! *= stretch;
    const gbps = atLevel[0]! > 0 ? bytes / (atLevel[0]! * 1e6) : 0;
    const unitEnd = new Float64Array(unitMs.length);
    let sum = claimMs;
    const total = unitMs.reduce((a, t) => a + t, claimMs);
    unitMs.forEach((t, i) => {
      sum += t;
      unitEnd[i] = total > 0 ? sum / total : 1;
    });
    running.set(d.request, {
      d,
      startMs: now,
      atLevel,
      claimMs,
      unitMs,
      unitEnd,
      endShare: 1,
      stopUnit: undefined,
      gbps,
      footprint,
      remaining: 1,
      rate: 0,
      level: 0,
      version: 0,
    });
    gSum += gbps;
    fSum += footprint;
    metrics.blockStarted(d, now);
  };

  /** Recompute every running block's level, rate and finish event (the running set changed). */
  const reschedule = () => {
    for (const [id, b] of running) {
      const level = o.interference.levelFor(gSum - b.gbps, fSum - b.footprint);
      const lo = Math.min(LEVEL_COUNT - 1, Math.floor(level)),
        f = level - lo;
      const t = f === 0 || lo === LEVEL_COUNT - 1 ? b.atLevel[lo]! : b.atLevel[lo]! + (b.atLevel[lo + 1]! - b.atLevel[lo]!) * f;
      const rate = t > 0 ? 1 / t : Infinity;
      if (rate === b.rate && level === b.level) continue;
      b.rate = rate;
      b.level = level;
      b.version++;
      const left = Math.max(0, b.remaining - (1 - b.endShare)) / rate;
      events.push({ t: now + (Number.isFinite(left) ? left : 0), seq: seq++, kind: 1, ref: id, version: b.version });
    }
  };

  /** A chain asked to stop ends at the first layer boundary past its committed block that it has not reached. */
  const preempt = (id: number): boolean => {
    const b = running.get(id);
    if (!b || b.stopUnit !== undefined) return false;
    const done = 1 - b.remaining;
    for (let u = b.d.last + 1; u <= b.d.chainLast; u++) {
      const at = b.unitEnd[u - 1 - b.d.first]!;
      if (at + 1e-12 < done) continue;
      b.endShare = at;
      b.stopUnit = u;
      b.rate = -1; // its finish time moves: reschedule recomputes it
      return true;
    }
    return false;
  };
  let processed = 0;
  let stop: StopReason = 'drained';
  const view = (): EventView => ({
    now,
    running: [...running.values()].map((b) => ({ request: b.d.request, model: b.d.model, cores: b.d.cores })),
    scheduler,
  });

  for (;;) {
    const e = events.pop();
    if (!e) break;
    if (e.kind === 1) {
      const b = running.get(e.ref);
      if (!b || b.version !== e.version) continue; // superseded finish time
    }
    if (e.t > o.maxSimMs) {
      advance(o.maxSimMs);
      stop = 'time-bound';
      break;
    }
    if (processed >= o.maxEvents) {
      stop = 'event-bound';
      break;
    }
    processed++;
    advance(e.t);
    let decisions: Decision[];
    if (e.kind === 0) {
      const m = e.ref;
      const id = nextId++;
      metrics.arrived(id, m, now);
      decisions = timed(() => scheduler.arrive({ id, model: m, arrivalMs: now }, now));
      const gap = exponential(rngs[m]!, o.models[m]!.qps / 1000);
      if (now + gap < o.durationMs) events.push({ t: now + gap, seq: seq++, kind: 0, ref: m, version: 0 });
    } else {
      const b = running.get(e.ref)!;
      running.delete(e.ref);
      gSum -= b.gbps;
      fSum -= b.footprint;
      const ran = b.stopUnit === undefined ? b.unitMs : b.unitMs.subarray(0, b.stopUnit - b.d.first);
      metrics.blockFinished(b.d, b.startMs, now, b.claimMs, ran);
      const r = timed(() => scheduler.blockFinished(e.ref, now, b.stopUnit));
      if (r.completed) metrics.completed(e.ref, b.d.model, now + frontEndMs[b.d.model]!);
      decisions = r.decisions;
    }
    for (const d of decisions) startBlock(d);
    let stopped = false;
    for (const id of scheduler.takePreemptions()) stopped = preempt(id) || stopped;
    if (running.size === 0) {
      gSum = 0;
      fSum = 0;
    } // no drift from float sums
    if (decisions.length > 0 || e.kind === 1 || stopped) reschedule();
    if (o.onEvent) o.onEvent(view());
    if (o.stopWhenFailed && metrics.anyModelFailed()) {
      stop = 'failed-early';
      break;
    }
  }
  if (stop === 'drained' && scheduler.inSystem > 0)
    throw internalError(`simulation ended with ${scheduler.inSystem} requests in the system and no event pending`);
  return {
    stop,
    events: processed,
    endMs: now,
    metrics: metrics.summary(now, scheduler.stats),
    timing: timing ? { calls: timing.calls, totalNs: timing.totalNs, samplesNs: Float64Array.from(timing.samples) } : null,
  };
}

/** How the simulated server hands blocks to its workers (dispatcher.ts), as every simulated figure states it. */
export function dispatchLabel(chain: boolean): string {
  return chain
    ? 'dispatch simulated as the server runs it: chained (one hand-off per uninterrupted request, preemption at layer boundaries)'
    : 'dispatch simulated block by block (a hand-off per block; the server chains by default)';
}
