/**
 * Spatial partition or time sharing: from the models' plans (their profiled latency per core
 * count) and each model's share of the load, the best static partition of the cores and the
 * predicted capacity of both ways of serving the mix, by one rule, so the two are comparable. Pure.
 *
 * A request as veltair runs it on a set of `span` cores: every unit at its requirement
 * (requirement.ts), at most `span` cores, best quiet version; its latency L is the sum, its cost
 * K the core·ms it holds (Σ cores × latency), plus its claims/releases: one per block.
 *  - partitioned: a model keeps its own contiguous cores, so its blocks never move; it pays one
 *    claim per request, and queues only behind its own requests;
 *  - time-shared: blocks are cut to the tightest other tenant's wait budget (blocks.ts
 *    blockCaps), so a request runs as ⌈one-core time / cap⌉ blocks, each charged a claim (cores
 *    move between blocks), and a request of any model queues behind blocks of every model.
 *
 * Capacity rule (both modes): a set of c cores serving some models is one pool of c servers
 * (cores) that requests occupy for their core·ms; at a total rate λ and a fixed mix (λ_m = w_m λ)
 * it is busy a = Σ λ_m K_m cores on average. A request waits only when every core is busy, with
 * probability Erlang C(c, a) (M/M/c), and then until the next core frees, i.e. until a piece of
 * work in service ends (time-shared: a block, cut to the wait-budget cap; partitioned: its own
 * model's whole requests); that wait is taken as exponential with mean x / (c − a), x the pieces'
 * mean length weighted by work. Model m keeps up within QoS when a ≤ MAX_UTILISATION · c and
 * P(wait > QoS_m − L_m) = C(c, a) · exp(−(c − a) (QoS_m − L_m) / x) ≤ LATE_SHARE: the same 99%
 * within QoS that a served rate is judged by. The capacity λ* is the highest total rate where
 * every model keeps up (bisection; both sides grow with λ). A partition's capacity is the lowest
 * over its models (each alone on its set); the time-shared one is that of all models on all cores.
 *
 * What the rule captures: pooling (time sharing lets a request take any free core, so it waits
 * less often), head-of-line blocking (a tight model waits behind a heavy model's blocks when they
 * share, behind only its own requests when partitioned), and the claims that moving blocks pay.
 * It is a prediction for choosing, not a promise.
 *
 * Split search: exhaustive over compositions of the cores (≥ 1 core each, contiguous ids in model
 * order) while there are at most MAX_EXHAUSTIVE_SPLITS of them, C(cores − 1, models − 1); beyond
 * that, greedy: start from one core each and give each further core to the model that bounds the
 * capacity (O(cores · models)). Either reads one table of each model's capacity alone on each core
 * count (models × cores bisections, each O(cores)), so a split costs O(models) to judge. With more models than cores no partition is offered: the models
 * share the cores by time sharing.
 */
import { blockCaps } from './blocks.js';
import type { ModelPlan } from './requirement.js';

/** The share of a model's requests that may miss QoS (the 99% rule every served rate is judged by). */
export const LATE_SHARE = 0.01;
/** No queue is planned busier than this: near 1 the wait grows without bound and noise decides. */
export const MAX_UTILISATION = 0.9;
/** Splits enumerated before the greedy search takes over. */
export const MAX_EXHAUSTIVE_SPLITS = 20_000;

export interface Partition {
  /** Cores per model, in model order; model m's core ids are first[m] .. first[m] + cores[m] − 1. */
  readonly cores: readonly number[];
  readonly first: readonly number[];
  /** Predicted capacity: total requests/s at the given mix that every model's own cores keep up with. */
  readonly capacityQps: number;
}

export interface ModeComparison {
  /** The best static partition, or null when there are more models than cores (or one model). */
  readonly partition: Partition | null;
  /** Predicted capacity of time sharing all cores, by the same rule (requests/s). */
  readonly timeSharedQps: number;
  /** How the split was searched. */
  readonly search: 'exhaustive' | 'greedy' | 'none';
}

/** One model's request as the rule sees it on `span` cores: latency, core·ms and how many blocks. */
export interface RequestCost {
  readonly latencyMs: number;
  readonly coreMs: number;
  readonly blocks: number;
}

export function requestCost(p: ModelPlan, span: number, blockCapMs: number): RequestCost {
  const N = p.table.maxCores;
  const U = p.table.units.length;
  let latencyMs = 0,
    coreMs = 0,
    widest = 1,
    blocks = 1,
    blockOneCoreMs = 0;
  for (let u = 0; u < U; u++) {
    const c = Math.max(1, Math.min(span, p.requirement[u]!));
    const ms = p.bestQuietMs[u * (N + 1) + c]!;
    latencyMs += ms;
    coreMs += c * ms;
    widest = Math.max(widest, c);
    // Blocks as formBlock cuts them at the cap (one-core time; every block takes at least one unit).
    const one = p.bestQuietMs[u * (N + 1) + 1]!;
    if (u > 0 && blockOneCoreMs + one > blockCapMs) {
      blocks++;
      blockOneCoreMs = 0;
    }
    blockOneCoreMs += one;
  }
  const claim = p.table.claimMs[widest]!;
  return { latencyMs: latencyMs + blocks * claim, coreMs: coreMs + blocks * claim * widest, blocks };
}

interface Member {
  readonly cost: RequestCost;
  /** Share of the total rate. */
  readonly weight: number;
  readonly qosMs: number;
}

/** Erlang C: the probability that a request finds all `c` servers busy at an offered load of `a` servers. */
export function erlangC(c: number, a: number): number {
  if (!(a > 0)) return 0;
  if (a >= c) return 1;
  let b = 1; // Erlang B by its recursion, B(0) = 1
  for (let k = 1; k <= c; k++) b = (a * b) / (k + a * b);
  return (c * b) / (c - a * (1 - b));
}

/** Bisection steps for the capacity: the relative error is 2^−steps of the utilisation bound. */
const CAPACITY_STEPS = 40;

/** The highest total rate (requests/ms) at which every member keeps up on `cores` cores (header rule). */
export function queueCapacityPerMs(members: readonly Member[], cores: number): number {
  let work = 0, // busy cores per unit of total rate
    pieceWork = 0; // Σ w K x, for the work-weighted piece length
  for (const m of members) {
    if (m.weight <= 0) continue;
    work += m.weight * m.cost.coreMs;
    pieceWork += m.weight * m.cost.coreMs * (m.cost.latencyMs / m.cost.blocks);
  }
  if (!(work > 0)) return Infinity;
  const piece = pieceWork / work;
  const active = members.filter((m) => m.weight > 0);
  if (active.some((m) => !(m.qosMs - m.cost.latencyMs > 0))) return 0;
  const keepsUp = (rate: number) => {
    const a = rate * work;
    const waits = erlangC(cores, a);
    return active.every((m) => waits * Math.exp((-(cores - a) * (m.qosMs - m.cost.latencyMs)) / piece) <= LATE_SHARE);
  };
  let lo = 0,
    hi = (MAX_UTILISATION * cores) / work;
  if (keepsUp(hi)) return hi;
  for (let i = 0; i < CAPACITY_STEPS; i++) {
    const mid = (lo + hi) / 2;
    if (keepsUp(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

const normalised = (weights: readonly number[]): number[] => {
  const sum = weights.reduce((s, w) => s + Math.max(0, w), 0);
  return weights.map((w) => (sum > 0 ? Math.max(0, w) / sum : 1 / weights.length));
};

/** Predicted capacity (requests/s) of time sharing all `cores` between the models at this mix. */
export function timeSharedCapacityQps(plans: readonly ModelPlan[], weights: readonly number[], cores: number): number {
  const caps = blockCaps(plans);
  const w = normalised(weights);
  const members = plans.map((p, m) => ({ cost: requestCost(p, cores, caps[m]!), weight: w[m]!, qosMs: p.qosMs }));
  return queueCapacityPerMs(members, cores) * 1000;
}

/** Predicted capacity (requests/s) of a split: the lowest over the models, each alone on its cores. */
export function partitionCapacityQps(plans: readonly ModelPlan[], weights: readonly number[], split: readonly number[]): number {
  const w = normalised(weights);
  let best = Infinity;
  plans.forEach((p, m) => {
    best = Math.min(best, ownCapacityQps(p, w[m]!, split[m]!));
  });
  return best;
}

/** Model `p`, carrying `weight` of the total rate, alone on `cores` cores: the total rate (requests/s) it keeps up with. */
function ownCapacityQps(p: ModelPlan, weight: number, cores: number): number {
  return queueCapacityPerMs([{ cost: requestCost(p, cores, Infinity), weight, qosMs: p.qosMs }], cores) * 1000;
}

/**
 * Every model's own capacity at every core count a split can give it (1 .. cores − models + 1):
 * computed once per comparison, so a split costs O(models) to judge.
 */
function ownCapacityTable(plans: readonly ModelPlan[], weights: readonly number[], cores: number): Float64Array[] {
  const w = normalised(weights);
  const most = cores - plans.length + 1;
  return plans.map((p, m) => {
    const row = new Float64Array(most + 1);
    for (let c = 1; c <= most; c++) row[c] = ownCapacityQps(p, w[m]!, c);
    return row;
  });
}

const splitCapacity = (table: readonly Float64Array[], split: readonly number[]) =>
  split.reduce((low, c, m) => Math.min(low, table[m]![c]!), Infinity);

function firstIds(split: readonly number[]): number[] {
  const first: number[] = [];
  let at = 0;
  for (const c of split) {
    first.push(at);
    at += c;
  }
  return first;
}

function splitCount(cores: number, models: number): number {
  // C(cores − 1, models − 1), stopping once past the limit.
  let n = 1;
  for (let i = 1; i <= models - 1; i++) {
    n = (n * (cores - models + i)) / i;
    if (n > MAX_EXHAUSTIVE_SPLITS) return Infinity;
  }
  return Math.round(n);
}

/** Every composition of `cores` into `models` parts ≥ 1, in lexicographic order. */
function* compositions(cores: number, models: number): Generator<number[]> {
  const part = new Array<number>(models).fill(1);
  function* fill(m: number, left: number): Generator<number[]> {
    if (m === models - 1) {
      part[m] = left;
      yield part.slice();
      return;
    }
    for (let c = 1; c <= left - (models - 1 - m); c++) {
      part[m] = c;
      yield* fill(m + 1, left - c);
    }
  }
  yield* fill(0, cores);
}

function greedySplit(table: readonly Float64Array[], cores: number): number[] {
  const split = table.map(() => 1);
  for (let left = cores - table.length; left > 0; left--) {
    let worst = 0;
    for (let m = 1; m < table.length; m++) if (table[m]![split[m]!]! < table[worst]![split[worst]!]!) worst = m;
    split[worst]!++;
  }
  return split;
}

/**
 * The best static partition of `cores` between the models at this mix (ties: the earlier split in
 * lexicographic order), beside time sharing's capacity by the same rule.
 */
export function compareModes(plans: readonly ModelPlan[], weights: readonly number[], cores: number): ModeComparison {
  const timeSharedQps = timeSharedCapacityQps(plans, weights, cores);
  const M = plans.length;
  if (M < 2 || M > cores) return { partition: null, timeSharedQps, search: 'none' };
  let bestSplit: number[] | null = null;
  let bestQps = -1;
  const table = ownCapacityTable(plans, weights, cores);
  const count = splitCount(cores, M);
  if (Number.isFinite(count)) {
    for (const split of compositions(cores, M)) {
      const q = splitCapacity(table, split);
      if (q > bestQps) {
        bestQps = q;
        bestSplit = split;
      }
    }
  } else {
    bestSplit = greedySplit(table, cores);
    bestQps = splitCapacity(table, bestSplit);
  }
  const split = bestSplit!;
  return {
    partition: { cores: split, first: firstIds(split), capacityQps: bestQps },
    timeSharedQps,
    search: Number.isFinite(count) ? 'exhaustive' : 'greedy',
  };
}
