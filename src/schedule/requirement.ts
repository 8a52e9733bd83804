/**
 * Per-layer core requirement from a profile and a QoS budget (VELTAIR §scheduling), computed once
 * per model when it is registered:
 *
 *  - the budget is split over the units by their share of the model's single-core quiet latency
 *    (best version): a unit's share of the *work*, independent of how many cores it will get, so
 *    a layer that scales badly needs more cores to meet its share — which is what makes the
 *    requirement jagged. (MACs would miss the non-tunable ops and the memory-bound layers.)
 *  - a unit's requirement is the fewest cores whose best quiet latency meets its share; a unit
 *    that meets it at no core count needs the count where it is fastest (and is `infeasible`).
 *  - the model's average requirement is time-weighted: Σ requirement × share / budget, i.e. the
 *    cores it holds on average when every unit runs at its requirement.
 *
 * Prefix sums of the best quiet latency per core count make any block's summed latency O(1), so
 * forming a block and its claim stays a linear scan. Pure.
 */
import { bestVersion, type ModelTable } from './model-table.js';

export interface ModelPlan {
  readonly table: ModelTable;
  readonly qosMs: number;
  /** Per unit: QoS share (ms), requirement (cores), feasible at its requirement. */
  readonly shareMs: Float64Array;
  readonly requirement: Int32Array;
  readonly feasible: readonly boolean[];
  readonly averageRequirement: number;
  readonly peakRequirement: number;
  /** Best quiet latency (ms) of unit u at c cores: bestQuietMs[u · (N + 1) + c]. */
  readonly bestQuietMs: Float64Array;
  /** prefixMs[c · (U + 1) + i] = Σ_{u < i} bestQuietMs(u, c). */
  readonly prefixMs: Float64Array;
  /** prefixShareMs[i] = Σ_{u < i} shareMs[u]. */
  readonly prefixShareMs: Float64Array;
  /** The core count at which the whole model is fastest alone, and that latency (ms, with one claim). */
  readonly fastestCores: number;
  readonly fastestMs: number;
  /** Fewest core·ms one request can cost (each unit at its most efficient core count). */
  readonly minCoreMs: number;
}

export function planModel(table: ModelTable, qosMs: number): ModelPlan {
  const N = table.maxCores;
  const U = table.units.length;
  const bestQuietMs = new Float64Array(U * (N + 1));
  table.units.forEach((u, i) => {
    for (let c = 1; c <= N; c++) bestQuietMs[i * (N + 1) + c] = bestVersion(u, N, c, 0).ms;
  });
  const q = (u: number, c: number) => bestQuietMs[u * (N + 1) + c]!;
  const work = Array.from({ length: U }, (_, u) => q(u, 1));
  const total = work.reduce((s, x) => s + x, 0);
  const shareMs = Float64Array.from(work, (w) => (total > 0 ? qosMs * w / total : qosMs / U));
  const requirement = new Int32Array(U);
  const feasible: boolean[] = [];
  for (let u = 0; u < U; u++) {
    let need = 0, fastest = 1;
    for (let c = 1; c <= N; c++) {
      if (q(u, c) < q(u, fastest)) fastest = c;
      if (need === 0 && q(u, c) <= shareMs[u]!) need = c;
    }
    feasible.push(need > 0);
    requirement[u] = need > 0 ? need : fastest;
  }
  const averageRequirement = U === 0 ? 0 : requirement.reduce((s, r, u) => s + r * shareMs[u]!, 0) / qosMs;
  const prefixMs = new Float64Array((N + 1) * (U + 1));
  for (let c = 1; c <= N; c++) for (let u = 0; u < U; u++) prefixMs[c * (U + 1) + u + 1] = prefixMs[c * (U + 1) + u]! + q(u, c);
  const prefixShareMs = new Float64Array(U + 1);
  for (let u = 0; u < U; u++) prefixShareMs[u + 1] = prefixShareMs[u]! + shareMs[u]!;
  let fastestCores = 1, fastestMs = Infinity;
  for (let c = 1; c <= N; c++) {
    const t = prefixMs[c * (U + 1) + U]! + table.claimMs[c]!;
    if (t < fastestMs) { fastestMs = t; fastestCores = c; }
  }
  let minCoreMs = 0;
  for (let u = 0; u < U; u++) {
    let m = Infinity;
    for (let c = 1; c <= N; c++) m = Math.min(m, c * q(u, c));
    minCoreMs += m;
  }
  return {
    table, qosMs, shareMs, requirement, feasible, averageRequirement, peakRequirement: Math.max(0, ...requirement),
    bestQuietMs, prefixMs, prefixShareMs, fastestCores, fastestMs, minCoreMs,
  };
}

/** Σ best quiet latency of units [first, last] at c cores (ms). */
export function blockQuietMs(p: ModelPlan, first: number, last: number, cores: number): number {
  const U = p.table.units.length;
  return p.prefixMs[cores * (U + 1) + last + 1]! - p.prefixMs[cores * (U + 1) + first]!;
}

export function blockShareMs(p: ModelPlan, first: number, last: number): number {
  return p.prefixShareMs[last + 1]! - p.prefixShareMs[first]!;
}
