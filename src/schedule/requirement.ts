/**
 * Per-layer core requirement from a profile and a QoS budget (VELTAIR §scheduling), computed once
 * per model when it is registered:
 *
 *  - the budget is split over the units by their share of the model's single-core quiet latency
 *    (best version): a unit's share of the *work*, independent of how many cores it will get, so
 *    a layer that scales badly needs more cores to meet its share — which is what makes the
 *    requirement jagged. (MACs would miss the non-tunable ops and the memory-bound layers.)
 *  - a unit that meets its share at no core count is given its fastest latency as its share and
 *    runs at the core count where it is fastest; the budget left is split again over the others,
 *    by the same rule, until every share can be met (water-filling). Without this, every
 *    request of a model with such a layer would miss its QoS by that layer's overrun. When even
 *    the fastest latencies do not fit the budget, `qosReachable` is false: no policy can meet it.
 *  - a unit's requirement is the fewest cores at which its best quiet version, at its slowest
 *    over the measured interference levels, plus one claim/release, meets its share: a requirement interference cannot
 *    break, taken from the measurements rather than from a safety margin. (Interference-aware
 *    policies size their claims at the predicted level with the versions chosen for it instead,
 *    blocks.ts flatClaim.) Water-filling uses the same latencies.
 *  - the model's average requirement is time-weighted: Σ requirement × share / budget, i.e. the
 *    cores it holds on average when every unit runs at its requirement.
 *
 * Prefix sums of the best latency per core count and level make any block's summed latency
 * O(1), so forming a block and its claim stays a linear scan. Pure.
 */
import { bestVersion, latAt, LEVEL_COUNT, type ModelTable } from './model-table.js';

export interface ModelPlan {
  readonly table: ModelTable;
  readonly qosMs: number;
  /** Per unit: QoS share (ms), requirement (cores), met at a core count of its own (not water-filled). */
  readonly shareMs: Float64Array;
  readonly requirement: Int32Array;
  readonly feasible: readonly boolean[];
  /** The fastest latencies (heaviest level) of all units fit the QoS (else no allocation can be sure to meet it). */
  readonly qosReachable: boolean;
  readonly averageRequirement: number;
  readonly peakRequirement: number;
  /** Best quiet latency (ms) of unit u at c cores: bestQuietMs[u · (N + 1) + c]. */
  readonly bestQuietMs: Float64Array;
  /** Per integer level l: unit u's best version at c cores, bestVersionAt[l][u · (N + 1) + c], and its latency, bestMsAt[l][…]. */
  readonly bestVersionAt: readonly Int32Array[];
  readonly bestMsAt: readonly Float64Array[];
  /** prefixMs[l][c · (U + 1) + i] = Σ_{u < i} best latency of unit u at c cores and level l. */
  readonly prefixMs: readonly Float64Array[];
  /**
   * The same for the versions an interference-oblivious policy runs (best quiet at c cores) at
   * their slowest over the levels: what such a policy must plan with to be safe under interference.
   */
  readonly prefixQuietVersionsWorstMs: Float64Array;
  /** prefixShareMs[i] = Σ_{u < i} shareMs[u]. */
  readonly prefixShareMs: Float64Array;
  /** The core count at which the whole model is fastest alone, and that latency (ms, with one claim). */
  readonly fastestCores: number;
  readonly fastestMs: number;
  /** Fewest core·ms one request can cost (each unit at its most core-efficient count). */
  readonly minCoreMs: number;
  /** Latency alone when every unit runs at its requirement (best quiet versions, ms): what the plan expects a request to take. */
  readonly plannedMs: number;
}

/** Water-filled shares (see the header): returns shares and which units met theirs at no core count. */
function splitBudget(qosMs: number, work: readonly number[], fastestMs: readonly number[]): { share: Float64Array; capped: boolean[] } {
  const U = work.length;
  const capped = Array.from({ length: U }, () => false);
  const share = new Float64Array(U);
  for (let round = 0; round <= U; round++) {
    const fixed = capped.reduce((s, c, u) => s + (c ? fastestMs[u]! : 0), 0);
    const freeWork = work.reduce((s, w, u) => s + (capped[u] ? 0 : w), 0);
    const left = Math.max(0, qosMs - fixed);
    let changed = false;
    for (let u = 0; u < U; u++) {
      share[u] = capped[u] ? fastestMs[u]! : freeWork > 0 ? (left * work[u]!) / freeWork : 0;
      if (!capped[u] && fastestMs[u]! > share[u]!) {
        capped[u] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  for (let u = 0; u < U; u++) if (capped[u]) share[u] = fastestMs[u]!;
  return { share, capped };
}

export function planModel(table: ModelTable, qosMs: number): ModelPlan {
  const N = table.maxCores;
  const U = table.units.length;
  const best = Array.from({ length: LEVEL_COUNT }, () => new Float64Array(U * (N + 1)));
  const bestVersionAt = Array.from({ length: LEVEL_COUNT }, () => new Int32Array(U * (N + 1)));
  const quietVersionsWorst = new Float64Array(U * (N + 1));
  table.units.forEach((u, i) => {
    for (let c = 1; c <= N; c++) {
      for (let l = 0; l < LEVEL_COUNT; l++) {
        const b = bestVersion(u, N, c, l);
        best[l]![i * (N + 1) + c] = b.ms;
        bestVersionAt[l]![i * (N + 1) + c] = b.v;
      }
      const v = bestVersionAt[0]![i * (N + 1) + c]!;
      let w = 0;
      for (let l = 0; l < LEVEL_COUNT; l++) w = Math.max(w, latAt(u, N, v, c, l));
      quietVersionsWorst[i * (N + 1) + c] = w;
    }
  });
  const bestQuietMs = best[0]!;
  // Requirements: the versions every policy may run (the best quiet ones) at the heaviest level.
  const worst = quietVersionsWorst;
  const quiet = (u: number, c: number) => bestQuietMs[u * (N + 1) + c]!;
  const q = (u: number, c: number) => worst[u * (N + 1) + c]!;
  const work = Array.from({ length: U }, (_, u) => quiet(u, 1));
  // A unit's fastest, claim included: as a block of its own it pays one claim/release.
  const fastestOf = Array.from({ length: U }, (_, u) => {
    let m = Infinity;
    for (let c = 1; c <= N; c++) m = Math.min(m, q(u, c) + table.claimMs[c]!);
    return m;
  });
  const qosReachable = fastestOf.reduce((s, x) => s + x, 0) <= qosMs;
  const { share: shareMs, capped } = splitBudget(qosMs, work, fastestOf);
  const requirement = new Int32Array(U);
  for (let u = 0; u < U; u++) {
    let need = 0,
      fastest = 1;
    const t = (c: number) => q(u, c) + table.claimMs[c]!;
    for (let c = 1; c <= N; c++) {
      if (t(c) < t(fastest)) fastest = c;
      if (need === 0 && t(c) <= shareMs[u]!) need = c;
    }
    requirement[u] = need > 0 ? need : fastest;
  }
  const averageRequirement =
    U === 0 || !(qosMs > 0)
      ? 0
      : requirement.reduce((s, r, u) => s + r * shareMs[u]!, 0) /
        Math.max(
          qosMs,
          shareMs.reduce((s, x) => s + x, 0),
        );
  const prefixMs = best.map((b) => {
    const pre = new Float64Array((N + 1) * (U + 1));
    for (let c = 1; c <= N; c++) for (let u = 0; u < U; u++) pre[c * (U + 1) + u + 1] = pre[c * (U + 1) + u]! + b[u * (N + 1) + c]!;
    return pre;
  });
  const prefixQuietVersionsWorstMs = new Float64Array((N + 1) * (U + 1));
  for (let c = 1; c <= N; c++) {
    for (let u = 0; u < U; u++) {
      prefixQuietVersionsWorstMs[c * (U + 1) + u + 1] = prefixQuietVersionsWorstMs[c * (U + 1) + u]! + quietVersionsWorst[u * (N + 1) + c]!;
    }
  }
  const prefixShareMs = new Float64Array(U + 1);
  for (let u = 0; u < U; u++) prefixShareMs[u + 1] = prefixShareMs[u]! + shareMs[u]!;
  let fastestCores = 1,
    fastestMs = Infinity;
  for (let c = 1; c <= N; c++) {
    const t = prefixMs[0]![c * (U + 1) + U]! + table.claimMs[c]!;
    if (t < fastestMs) {
      fastestMs = t;
      fastestCores = c;
    }
  }
  let minCoreMs = 0;
  for (let u = 0; u < U; u++) {
    let m = Infinity;
    for (let c = 1; c <= N; c++) m = Math.min(m, c * quiet(u, c));
    minCoreMs += m;
  }
  let plannedMs = 0;
  for (let u = 0; u < U; u++) plannedMs += quiet(u, requirement[u]!);
  return {
    table,
    qosMs,
    shareMs,
    requirement,
    feasible: capped.map((c) => !c),
    qosReachable,
    averageRequirement,
    peakRequirement: Math.max(0, ...requirement),
    bestQuietMs,
    bestVersionAt,
    bestMsAt: best,
    prefixMs,
    prefixQuietVersionsWorstMs,
    prefixShareMs,
    fastestCores,
    fastestMs,
    minCoreMs,
    plannedMs,
  };
}

/**
 * Unit u's best version at c cores and the predicted level, and its latency: bestVersion's answer,
 * read from the plan's tables at an integer level (what a live decision pays per unit), computed
 * between levels.
 */
export function unitBestVersion(p: ModelPlan, u: number, cores: number, level: number): number {
  const N = p.table.maxCores;
  return Number.isInteger(level) && level >= 0 && level < LEVEL_COUNT
    ? p.bestVersionAt[level]![u * (N + 1) + cores]!
    : bestVersion(p.table.units[u]!, N, cores, level).v;
}

export function unitBestMs(p: ModelPlan, u: number, cores: number, level: number): number {
  const N = p.table.maxCores;
  return Number.isInteger(level) && level >= 0 && level < LEVEL_COUNT
    ? p.bestMsAt[level]![u * (N + 1) + cores]!
    : bestVersion(p.table.units[u]!, N, cores, level).ms;
}

/** Σ best latency of units [first, last] at c cores and (possibly fractional) level l (ms). */
export function blockMs(p: ModelPlan, first: number, last: number, cores: number, level = 0): number {
  const U = p.table.units.length;
  const at = (l: number) => p.prefixMs[l]![cores * (U + 1) + last + 1]! - p.prefixMs[l]![cores * (U + 1) + first]!;
  if (level <= 0) return at(0);
  const lo = Math.min(LEVEL_COUNT - 1, Math.floor(level)),
    f = level - lo;
  return f === 0 || lo === LEVEL_COUNT - 1 ? at(lo) : at(lo) + (at(lo + 1) - at(lo)) * f;
}

/** Σ latency of the best quiet versions of units [first, last] at c cores, each at its slowest level (ms). */
export function blockQuietVersionsWorstMs(p: ModelPlan, first: number, last: number, cores: number): number {
  const U = p.table.units.length;
  return p.prefixQuietVersionsWorstMs[cores * (U + 1) + last + 1]! - p.prefixQuietVersionsWorstMs[cores * (U + 1) + first]!;
}

/** Σ best quiet latency of units [first, last] at c cores (ms). */
export function blockQuietMs(p: ModelPlan, first: number, last: number, cores: number): number {
  return blockMs(p, first, last, cores, 0);
}

export function blockShareMs(p: ModelPlan, first: number, last: number): number {
  return p.prefixShareMs[last + 1]! - p.prefixShareMs[first]!;
}
