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
 * Capacity rule (both modes): a set of cores C serving some models is one work-conserving queue
 * (M/G/1 over the pool: a request's service is X = K / |C|; the pool is busy ρ = Σ λ_m X_m).
 * Pollaczek–Khinchine with non-preemptible pieces: a request waits W = Σ λ_m X_m x_m / (2 (1 − ρ)),
 * where x_m is the piece others must wait for (time-shared: one block, X_m / blocks; partitioned:
 * the whole request). Model m keeps up within QoS when ρ ≤ MAX_UTILISATION and
 * L_m + TAIL_FACTOR · W ≤ QoS_m. At a fixed mix (λ_m = w_m λ) every term is linear in λ, so the
 * highest total rate λ* has a closed form. A partition's capacity is the lowest over its models
 * (each alone on its set); the time-shared one is that of all models on all cores.
 *
 * What the rule captures: pooling (time sharing lets a model use the cores another leaves idle),
 * head-of-line blocking (a tight model waits behind a heavy model's blocks when they share), and
 * the claims that moving blocks pay. It is a prediction for choosing, not a promise.
 *
 * Split search: exhaustive over compositions of the cores (≥ 1 core each, contiguous ids in model
 * order) while there are at most MAX_EXHAUSTIVE_SPLITS of them, C(cores − 1, models − 1); beyond
 * that, greedy: start from one core each and give each further core to the model that bounds the
 * capacity (O(cores · models)). With more models than cores no partition is offered: the models
 * share the cores by time sharing.
 */
import { blockCaps } from './blocks.js';
import type { ModelPlan } from './requirement.js';

/** The waiting time's tail over its mean that QoS must leave room for (a p99 of a few means). */
export const TAIL_FACTOR = 3;
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

/** The highest total rate (requests/ms) at which every member keeps up on `cores` cores (header rule). */
export function queueCapacityPerMs(members: readonly Member[], cores: number): number {
  let load = 0, // ρ per unit of total rate
    wait = 0; // 2 (1 − ρ) W per unit of total rate
  for (const m of members) {
    if (m.weight <= 0) continue;
    const x = m.cost.coreMs / cores;
    load += m.weight * x;
    wait += m.weight * x * (x / m.cost.blocks);
  }
  if (!(load > 0)) return Infinity;
  let best = MAX_UTILISATION / load;
  for (const m of members) {
    if (m.weight <= 0) continue;
    const slack = m.qosMs - m.cost.latencyMs;
    if (!(slack > 0)) return 0;
    // L + T · λ wait / (2 (1 − λ load)) ≤ QoS  ⇔  λ ≤ 2 slack / (T wait + 2 slack load)
    best = Math.min(best, (2 * slack) / (TAIL_FACTOR * wait + 2 * slack * load));
  }
  return best;
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
    const c = split[m]!;
    const member = { cost: requestCost(p, c, Infinity), weight: w[m]!, qosMs: p.qosMs };
    best = Math.min(best, queueCapacityPerMs([member], c) * 1000);
  });
  return best;
}

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

function greedySplit(plans: readonly ModelPlan[], weights: readonly number[], cores: number): number[] {
  const split = plans.map(() => 1);
  const w = normalised(weights);
  const capOf = (m: number) =>
    queueCapacityPerMs([{ cost: requestCost(plans[m]!, split[m]!, Infinity), weight: w[m]!, qosMs: plans[m]!.qosMs }], split[m]!);
  for (let left = cores - plans.length; left > 0; left--) {
    let worst = 0;
    for (let m = 1; m < plans.length; m++) if (capOf(m) < capOf(worst)) worst = m;
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
  const count = splitCount(cores, M);
  if (Number.isFinite(count)) {
    for (const split of compositions(cores, M)) {
      const q = partitionCapacityQps(plans, weights, split);
      if (q > bestQps) {
        bestQps = q;
        bestSplit = split;
      }
    }
  } else {
    bestSplit = greedySplit(plans, weights, cores);
    bestQps = partitionCapacityQps(plans, weights, bestSplit);
  }
  const split = bestSplit!;
  return {
    partition: { cores: split, first: firstIds(split), capacityQps: bestQps },
    timeSharedQps,
    search: Number.isFinite(count) ? 'exhaustive' : 'greedy',
  };
}

/** A split from core counts (model order, contiguous ids), its capacity at the given mix. */
export function partitionOf(plans: readonly ModelPlan[], weights: readonly number[], split: readonly number[]): Partition {
  return { cores: split.slice(), first: firstIds(split), capacityQps: partitionCapacityQps(plans, weights, split) };
}
