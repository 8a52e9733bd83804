/**
 * Family selection: from a workload's measured candidates, the ≤ maxVersions versions a layer
 * ships. Pure; every number in, every decision out.
 *
 *  1. Best measured latency at each level (over every ok candidate that has the level).
 *  2. Drop dominated candidates: B dominates A when B was measured at every level A was (so it can
 *     stand in for A everywhere), is ≤ A at each of them and < A at one. (A candidate measured at
 *     level 0 only — one using every core — therefore never knocks out one with noisy-level data.)
 *  3. Keep a subset S (|S| ≤ maxVersions) minimising the WORST regret across levels, where
 *     regret_L(S) = min over S of latency_L / best_L − 1 (a level nobody in S has: infinite).
 *     Exhaustive over subsets when the survivors are few, greedy otherwise. Among subsets within
 *     `tolerance` of the optimum, the smallest wins (then lower worst, then lower total regret):
 *     a version that buys less than the measurement noise is not worth a slot.
 *  4. Order kept versions locality-heavy → parallelism-heavy: cache-tile footprint (L2) descending,
 *     then parallel chunks ascending.
 */
import type { ScheduleFeatures } from './features.js';
import type { Schedule } from './knobs.js';

/** S: the schedule type (FP32 Schedule, or an INT8 kernel's Int8Schedule); selection reads only ids, latencies and features. */
export interface FamilyCandidate<S = Schedule> {
  readonly id: string;
  readonly schedule: S;
  readonly features: ScheduleFeatures;
  readonly symbol: string;
  /** level ("0".."4") → median latency (ms); only measured levels. */
  readonly latencyMs: Readonly<Record<string, number>>;
}

type AnyCandidate = FamilyCandidate<unknown>;

export interface Family<C extends AnyCandidate = FamilyCandidate> {
  readonly versions: readonly C[];
  /** Per level: kept family's best / best measured − 1, in percent. */
  readonly regretPercent: Readonly<Record<string, number>>;
  /** Best measured latency per level (ms). */
  readonly bestMs: Readonly<Record<string, number>>;
  readonly count: number;
  /** ok candidates considered, and how many of them were dominated. */
  readonly candidates: number;
  readonly dominated: number;
}

export interface FamilyOptions {
  readonly maxVersions?: number;
  /** Worst-regret slack (fraction) within which a smaller family is preferred; default 0. */
  readonly tolerance?: number;
  /** Subsets are enumerated exhaustively while C(n, ≤k) stays under this; greedy beyond. */
  readonly exhaustiveLimit?: number;
}

const levelsOf = (c: AnyCandidate) => Object.keys(c.latencyMs).filter((l) => Number.isFinite(c.latencyMs[l]) && c.latencyMs[l]! > 0);

export function bestPerLevel(cands: readonly AnyCandidate[]): Record<string, number> {
  const best: Record<string, number> = {};
  for (const c of cands) for (const l of levelsOf(c)) best[l] = Math.min(best[l] ?? Infinity, c.latencyMs[l]!);
  return best;
}

/** Does b dominate a (measured wherever a was, ≤ at each of those levels, < at one)? */
export function dominates(b: AnyCandidate, a: AnyCandidate): boolean {
  const mine = levelsOf(a),
    theirs = new Set(levelsOf(b));
  if (mine.length === 0 || !mine.every((l) => theirs.has(l))) return false;
  return mine.every((l) => b.latencyMs[l]! <= a.latencyMs[l]!) && mine.some((l) => b.latencyMs[l]! < a.latencyMs[l]!);
}

export function nonDominated<C extends AnyCandidate>(cands: readonly C[]): C[] {
  return cands.filter((a) => !cands.some((b) => b !== a && dominates(b, a)));
}

/** Regret per level of a kept set (fraction; Infinity where no kept version has the level). */
export function regretOf(kept: readonly AnyCandidate[], best: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(
    Object.keys(best).map((l) => {
      const min = Math.min(...kept.map((c) => c.latencyMs[l] ?? Infinity));
      return [l, min / best[l]! - 1];
    }),
  );
}

/** uncovered: levels no member has (compared first); worst/total over the covered levels. */
interface Scored {
  readonly set: readonly AnyCandidate[];
  readonly uncovered: number;
  readonly worst: number;
  readonly total: number;
  readonly ids: string;
}

function score(set: readonly AnyCandidate[], best: Readonly<Record<string, number>>): Scored {
  const all = Object.values(regretOf(set, best));
  const r = all.filter(Number.isFinite);
  return {
    set,
    uncovered: all.length - r.length,
    worst: Math.max(0, ...r),
    total: r.reduce((s, x) => s + x, 0),
    ids: set
      .map((c) => c.id)
      .sort()
      .join(','),
  };
}

const better = (a: Scored, b: Scored) =>
  a.uncovered - b.uncovered || a.worst - b.worst || a.total - b.total || (a.ids < b.ids ? -1 : a.ids > b.ids ? 1 : 0);

function choose(n: number, k: number): number {
  let c = 1;
  for (let i = 0; i < k; i++) c = (c * (n - i)) / (i + 1);
  return c;
}

/** Best subset of each size 1..k, exhaustively. */
function bestBySizeExhaustive(pool: readonly AnyCandidate[], k: number, best: Readonly<Record<string, number>>): Scored[] {
  const out: Scored[] = [];
  for (let size = 1; size <= k; size++) {
    let winner: Scored | undefined;
    const pick: AnyCandidate[] = [];
    const walk = (start: number) => {
      if (pick.length === size) {
        const s = score([...pick], best);
        if (!winner || better(s, winner) < 0) winner = s;
        return;
      }
      for (let i = start; i <= pool.length - (size - pick.length); i++) {
        pick.push(pool[i]!);
        walk(i + 1);
        pick.pop();
      }
    };
    walk(0);
    out.push(winner!);
  }
  return out;
}

/** Best subset of each size 1..k, greedily: each step adds the candidate that lowers the worst regret most. */
function bestBySizeGreedy(pool: readonly AnyCandidate[], k: number, best: Readonly<Record<string, number>>): Scored[] {
  const out: Scored[] = [];
  let set: AnyCandidate[] = [];
  for (let size = 1; size <= k; size++) {
    let winner: Scored | undefined;
    for (const c of pool) {
      if (set.includes(c)) continue;
      const s = score([...set, c], best);
      if (!winner || better(s, winner) < 0) winner = s;
    }
    set = [...winner!.set];
    out.push(winner!);
  }
  return out;
}

/** Locality-heavy first: larger cache tile, then fewer chunks; id last so the order is total. */
export function localityOrder(a: AnyCandidate, b: AnyCandidate): number {
  return (
    b.features.footprintBytes.l2 - a.features.footprintBytes.l2 ||
    a.features.parallelChunks - b.features.parallelChunks ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

export function selectFamily<C extends AnyCandidate = FamilyCandidate>(all: readonly C[], o: FamilyOptions = {}): Family<C> {
  const maxVersions = o.maxVersions ?? 5;
  if (!Number.isInteger(maxVersions) || maxVersions < 1) throw new RangeError(`maxVersions must be a positive integer, got ${maxVersions}`);
  const cands = all.filter((c) => levelsOf(c).length > 0);
  const best = bestPerLevel(cands);
  if (cands.length === 0) return { versions: [], regretPercent: {}, bestMs: {}, count: 0, candidates: 0, dominated: 0 };
  // Deterministic pool order whatever the input order.
  const pool = nonDominated(cands).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const k = Math.min(maxVersions, pool.length);
  let subsets = 0;
  for (let i = 1; i <= k; i++) subsets += choose(pool.length, i);
  const bySize = subsets <= (o.exhaustiveLimit ?? 50_000) ? bestBySizeExhaustive(pool, k, best) : bestBySizeGreedy(pool, k, best);
  const least = Math.min(...bySize.map((s) => s.uncovered));
  const optimum = Math.min(...bySize.filter((s) => s.uncovered === least).map((s) => s.worst));
  const chosen = bySize.find((s) => s.uncovered === least && s.worst <= optimum + (o.tolerance ?? 0))!;
  // every member of a scored subset is one of `all`'s candidates
  const versions = [...chosen.set].sort(localityOrder) as C[];
  const regret = regretOf(versions, best);
  return {
    versions,
    regretPercent: Object.fromEntries(Object.entries(regret).map(([l, r]) => [l, r * 100])),
    bestMs: best,
    count: versions.length,
    candidates: cands.length,
    dominated: cands.length - pool.length,
  };
}
