/**
 * What a simulated run measures, per model and in total:
 *  - QoS satisfaction: requests arriving in the window [warmup, duration) that finished within
 *    their model's QoS, over all that arrived there (unfinished ones count as late);
 *  - mean and p99 latency of the window's finished requests;
 *  - conflicts (blocks whose claim found too few free cores) per request and per block, claims;
 *  - core waste against the per-layer minimum: Σ max(0, granted − requirement) × time over
 *    Σ granted × time, per layer of every block (a claim's own time counts as waste);
 *  - blocks per request and where blocks start (for the light/heavy block plot);
 *  - Little's law inputs over the whole run: ∫ requests-in-system dt, arrivals, Σ sojourn times.
 * Pure bookkeeping; the engine calls it.
 */
import type { ModelPlan } from '../schedule/requirement.js';
import type { Decision, SchedulerStats } from '../schedule/scheduler.js';

export interface ModelMetrics {
  readonly model: string;
  readonly qosMs: number;
  readonly requests: number;
  readonly completed: number;
  readonly withinQos: number;
  readonly satisfaction: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly blocks: number;
  readonly conflicts: number;
  readonly claims: number;
  readonly blocksPerRequest: number;
  readonly conflictsPerRequest: number;
  readonly waste: number;
  /** Per unit: share of the window's requests whose block started there. */
  readonly blockStarts: readonly number[];
}

export interface RunMetrics {
  readonly models: readonly ModelMetrics[];
  readonly requests: number;
  readonly satisfaction: number;
  readonly meanMs: number;
  readonly p99Ms: number;
  readonly conflictsPerRequest: number;
  readonly conflictsPerBlock: number;
  readonly blocksPerRequest: number;
  readonly waste: number;
  /** Mean busy cores / N over the run. */
  readonly utilisation: number;
  readonly little: {
    readonly meanInSystem: number;
    readonly arrivalsPerMs: number;
    readonly meanSojournMs: number;
    readonly arrivals: number;
  };
  readonly scheduler: SchedulerStats;
}

class PerModel {
  requests = 0;
  completed = 0;
  within = 0;
  late = 0;
  latencies: number[] = [];
  blocks = 0;
  conflicts = 0;
  claims = 0;
  wasteNum = 0;
  heldNum = 0;
  blockStarts: Float64Array;
  constructor(units: number) {
    this.blockStarts = new Float64Array(units);
  }
}

const round = (x: number, digits = 4) => (Number.isFinite(x) ? Number(x.toFixed(digits)) : x);

function quantileSorted(s: readonly number[], q: number): number {
  if (s.length === 0) return NaN;
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos),
    hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export class Metrics {
  private readonly per: PerModel[];
  private arrivalOf: number[] = [];
  private inWindow: boolean[] = [];
  private area = 0;
  private busyArea = 0;
  private arrivals = 0;
  private sojournSum = 0;
  private sojourns = 0;
  /** Late-request allowance per model (1% of its expected window requests), for failed-early. */
  private readonly allowance: number[];

  constructor(
    private readonly plans: readonly ModelPlan[],
    private readonly cores: number,
    private readonly warmupMs: number,
    private readonly durationMs: number,
    expectedWindowRequests: readonly number[] = [],
  ) {
    this.per = plans.map((p) => new PerModel(p.table.units.length));
    this.allowance = plans.map((_, i) => 0.01 * (expectedWindowRequests[i] ?? Infinity));
  }

  advance(from: number, to: number, inSystem: number, busyCores: number): void {
    this.area += inSystem * (to - from);
    this.busyArea += busyCores * (to - from);
  }

  arrived(id: number, model: number, now: number): void {
    this.arrivalOf[id] = now;
    const w = now >= this.warmupMs && now < this.durationMs;
    this.inWindow[id] = w;
    this.arrivals++;
    if (w) this.per[model]!.requests++;
  }

  blockStarted(d: Decision, _now: number): void {
    if (!this.inWindow[d.request]) return;
    const m = this.per[d.model]!;
    m.blocks++;
    if (d.conflict) m.conflicts++;
    if (d.claim) m.claims++;
    m.blockStarts[d.first]!++;
  }

  blockFinished(d: Decision, startMs: number, endMs: number, claimMs: number, unitMs: Float64Array): void {
    if (!this.inWindow[d.request]) return;
    const p = this.plans[d.model]!;
    const m = this.per[d.model]!;
    const g = d.cores.length;
    const duration = endMs - startMs;
    let nominal = claimMs;
    for (const t of unitMs) nominal += t;
    if (!(nominal > 0) || !(duration > 0)) return;
    const scale = duration / nominal;
    m.wasteNum += g * claimMs * scale;
    m.heldNum += g * duration;
    unitMs.forEach((t, i) => {
      m.wasteNum += Math.max(0, g - p.requirement[d.first + i]!) * t * scale;
    });
  }

  completed(id: number, model: number, now: number): void {
    const latency = now - this.arrivalOf[id]!;
    this.sojournSum += latency;
    this.sojourns++;
    if (!this.inWindow[id]) return;
    const m = this.per[model]!;
    m.completed++;
    m.latencies.push(latency);
    // A relative 1e-9 for floating-point sums: a block sized to end at the deadline must not miss it by rounding.
    if (latency <= this.plans[model]!.qosMs * (1 + 1e-9)) m.within++;
    else m.late++;
  }

  anyModelFailed(): boolean {
    return this.per.some((m, i) => m.late > this.allowance[i]!);
  }

  summary(endMs: number, stats: SchedulerStats): RunMetrics {
    const models = this.per.map((m, i): ModelMetrics => {
      const p = this.plans[i]!;
      const s = [...m.latencies].sort((a, b) => a - b);
      const mean = s.length > 0 ? s.reduce((a, b) => a + b, 0) / s.length : NaN;
      const requests = Math.max(1, m.requests);
      return {
        model: p.table.name,
        qosMs: p.qosMs,
        requests: m.requests,
        completed: m.completed,
        withinQos: m.within,
        satisfaction: round(m.requests > 0 ? m.within / m.requests : 1, 6),
        meanMs: round(mean),
        p50Ms: round(quantileSorted(s, 0.5)),
        p99Ms: round(quantileSorted(s, 0.99)),
        blocks: m.blocks,
        conflicts: m.conflicts,
        claims: m.claims,
        blocksPerRequest: round(m.blocks / requests),
        conflictsPerRequest: round(m.conflicts / requests),
        waste: round(m.heldNum > 0 ? m.wasteNum / m.heldNum : 0),
        blockStarts: Array.from(m.blockStarts, (x) => round(x / requests)),
      };
    });
    const all = this.per.flatMap((m) => m.latencies).sort((a, b) => a - b);
    const requests = this.per.reduce((s, m) => s + m.requests, 0);
    const within = this.per.reduce((s, m) => s + m.within, 0);
    const blocks = this.per.reduce((s, m) => s + m.blocks, 0);
    const conflicts = this.per.reduce((s, m) => s + m.conflicts, 0);
    const wasteNum = this.per.reduce((s, m) => s + m.wasteNum, 0),
      heldNum = this.per.reduce((s, m) => s + m.heldNum, 0);
    return {
      models,
      requests,
      satisfaction: round(requests > 0 ? within / requests : 1, 6),
      meanMs: round(all.length > 0 ? all.reduce((a, b) => a + b, 0) / all.length : NaN),
      p99Ms: round(quantileSorted(all, 0.99)),
      conflictsPerRequest: round(conflicts / Math.max(1, requests)),
      conflictsPerBlock: round(conflicts / Math.max(1, blocks)),
      blocksPerRequest: round(blocks / Math.max(1, requests)),
      waste: round(heldNum > 0 ? wasteNum / heldNum : 0),
      utilisation: round(endMs > 0 ? this.busyArea / (endMs * this.cores) : 0),
      little: {
        meanInSystem: round(endMs > 0 ? this.area / endMs : 0, 6),
        arrivalsPerMs: round(endMs > 0 ? this.arrivals / endMs : 0, 8),
        meanSojournMs: round(this.sojourns > 0 ? this.sojournSum / this.sojourns : 0, 6),
        arrivals: this.arrivals,
      },
      scheduler: stats,
    };
  }
}
