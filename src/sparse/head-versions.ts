/**
 * A sparse head's versions: one per sparsity s, scoring at most ⌈s·n⌉ neurons per input (s = 1:
 * every neuron, the dense path), of which `always` are the head's always list (head-always.ts) and
 * the rest its buckets' candidates. Each is checked against the dense version and measured on the
 * calibration inputs — recall@1 / recall@5 of the dense top-k, precision@1 where labels exist —
 * and timed (one input per call, as the runtime calls it; versions interleaved round by round,
 * DESIGN.md's protocol: one warm-up, repeats until ≥ 100 ms each). The family kept is the versions
 * no other beats on both latency and recall@1 (frontier.ts-style harvest, at most MAX_KEPT).
 */
import { internalError, userError } from '../errors.js';
import type { HeadVersion } from '../sparse-head/format.js';
import type { QueryPlan } from './head-always.js';
import type { SparseHeadAddon } from '../sparse-head/native-head.js';

export const DEFAULT_SPARSITIES: readonly number[] = [1, 0.05, 0.01, 0.005];
export const MAX_KEPT = 5;
const MIN_TOTAL_MS = 100;
const MIN_REPEATS = 5;

export function parseSparsities(text: string): number[] {
  const parts = text.split(',').map((p) => p.trim());
  const values = parts.map(Number);
  const bad = parts.find((p, i) => p === '' || !Number.isFinite(values[i]!) || values[i]! <= 0 || values[i]! > 1);
  if (bad !== undefined) {
    throw userError(
      'BAD_ARGUMENT',
      `--sparsities: ${JSON.stringify(bad)} is not a sparsity in (0, 1]`,
      'a sparsity is the fraction of output neurons scored per input: e.g. --sparsities 1,0.05,0.01,0.005 (1 = dense; 0 would score nothing)',
    );
  }
  const unique = [...new Set(values)].sort((a, b) => b - a);
  return unique[0] === 1 ? unique : [1, ...unique];
}

export const versionId = (s: number): string => `s${s}`;

/** Neurons a version may score per input: 0 means all (dense). Never fewer than k, so k answers exist. */
export function budgetFor(sparsity: number, n: number, k: number): number {
  return sparsity >= 1 ? 0 : Math.min(n, Math.max(k, Math.ceil(sparsity * n)));
}

export interface Calibration {
  /** The head's inputs, rows × d (what the layers before it produce on the calibration inputs). */
  readonly hidden: Float32Array;
  readonly rows: number;
  /** Per row, its labels (the classes that are right), when the set has them. */
  readonly labels: readonly (readonly number[])[] | null;
}

export interface Accuracy {
  readonly recallAt1: number;
  readonly recallAt5: number;
  readonly precisionAt1: number | null;
  readonly scoredMean: number;
}

const NO_PLAN: QueryPlan = { always: 0, tables: 0 };

function topKOf(addon: SparseHeadAddon, head: object, c: Calibration, k: number, budget: number, plan: QueryPlan) {
  return addon.headTopK(head, c.hidden, c.rows, k, budget, plan.always, plan.tables);
}

/**
 * Recall of each budget (scoring `always[i]` of the head's always list first) against the dense
 * top-k. Also the correctness check: every neuron a sparse version returns that the dense version
 * also returns must carry the dense score bit for bit (the same dot product), and its list must be
 * sorted; a violation is a veltair bug.
 */
export function measureAccuracy(
  addon: SparseHeadAddon,
  head: object,
  c: Calibration,
  k: number,
  budgets: readonly number[],
  plans: readonly QueryPlan[] = budgets.map(() => NO_PLAN),
): Accuracy[] {
  const kk = Math.max(k, 5);
  const dense = topKOf(addon, head, c, kk, 0, NO_PLAN);
  return budgets.map((budget, i) => {
    const got = budget === 0 ? dense : topKOf(addon, head, c, kk, budget, plans[i]!);
    let hit1 = 0,
      hit5 = 0,
      right = 0;
    for (let r = 0; r < c.rows; r++) {
      const base = r * kk;
      const denseTop = new Map<number, number>();
      for (let j = 0; j < kk; j++) denseTop.set(dense.indices[base + j]!, dense.values[base + j]!);
      for (let j = 0; j < kk; j++) {
        const id = got.indices[base + j]!,
          v = got.values[base + j]!;
        const want = denseTop.get(id);
        if (id >= 0 && want !== undefined && !Object.is(want, v))
          throw internalError(`sparse head: budget ${budget} scores neuron ${id} ${v}, dense ${want}`);
        if (j > 0 && v > got.values[base + j - 1]!) throw internalError(`sparse head: budget ${budget} returned an unsorted top-k`);
      }
      if (got.indices[base] === dense.indices[base]) hit1++;
      const dense5 = new Set(Array.from(dense.indices.subarray(base, base + 5)));
      for (let j = 0; j < 5; j++) if (dense5.has(got.indices[base + j]!)) hit5++;
      if (c.labels && c.labels[r]!.includes(got.indices[base]!)) right++;
    }
    return {
      recallAt1: hit1 / c.rows,
      recallAt5: hit5 / (5 * c.rows),
      precisionAt1: c.labels ? right / c.rows : null,
      scoredMean: got.scored / c.rows,
    };
  });
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** ms per input of each budget (with its always count): interleaved rounds of one pass over the rows, one call per input. */
export function timeBudgets(
  addon: SparseHeadAddon,
  head: object,
  c: Calibration,
  d: number,
  k: number,
  budgets: readonly number[],
  plans: readonly QueryPlan[] = budgets.map(() => NO_PLAN),
): number[][] {
  const rows = Math.min(c.rows, 64);
  const inputs = Array.from({ length: rows }, (_, r) => c.hidden.subarray(r * d, (r + 1) * d));
  const pass = (i: number) => {
    const t0 = performance.now();
    for (const x of inputs) addon.headTopK(head, x, 1, k, budgets[i]!, plans[i]!.always, plans[i]!.tables);
    return (performance.now() - t0) / rows;
  };
  budgets.forEach((_, i) => pass(i)); // warm-up
  const repeats = budgets.map(() => [] as number[]);
  const total = budgets.map(() => 0);
  while (repeats[0]!.length < MIN_REPEATS || total.some((t) => t < MIN_TOTAL_MS)) {
    budgets.forEach((_, i) => {
      const ms = pass(i);
      repeats[i]!.push(ms);
      total[i]! += ms * rows;
    });
    if (repeats[0]!.length > 10_000) break;
  }
  return repeats;
}

/** Versions no other beats on latency (level 0) and recall@1 at once; at most MAX_KEPT (the dense one and the fastest). */
export function keptVersions(vs: readonly { latencyMs: number; recallAt1: number; dense: boolean }[]): boolean[] {
  const dominated = (i: number) =>
    vs.some(
      (u, j) =>
        j !== i &&
        u.latencyMs <= vs[i]!.latencyMs &&
        u.recallAt1 >= vs[i]!.recallAt1 &&
        (u.latencyMs < vs[i]!.latencyMs || u.recallAt1 > vs[i]!.recallAt1),
    );
  const front = vs
    .map((_, i) => i)
    .filter((i) => vs[i]!.dense || !dominated(i))
    .sort((a, b) => vs[a]!.latencyMs - vs[b]!.latencyMs);
  const dense = front.filter((i) => vs[i]!.dense);
  const keep = new Set([...dense, ...front.filter((i) => !vs[i]!.dense).slice(0, MAX_KEPT - dense.length)]);
  return vs.map((_, i) => keep.has(i));
}

/** Measure every sparsity (with its query plan: always-list count and tables) and mark the family. */
export function measureVersions(
  addon: SparseHeadAddon,
  head: object,
  c: Calibration,
  n: number,
  d: number,
  k: number,
  sparsities: readonly number[],
  plans: readonly QueryPlan[] = sparsities.map(() => NO_PLAN),
): HeadVersion[] {
  const budgets = sparsities.map((s) => budgetFor(s, n, k));
  const accuracy = measureAccuracy(addon, head, c, k, budgets, plans);
  const repeats = timeBudgets(addon, head, c, d, k, budgets, plans);
  const latency = repeats.map(median);
  const kept = keptVersions(sparsities.map((s, i) => ({ latencyMs: latency[i]!, recallAt1: accuracy[i]!.recallAt1, dense: s >= 1 })));
  return sparsities.map((s, i) => ({
    id: versionId(s),
    sparsity: s,
    budget: budgets[i]!,
    always: plans[i]!.always,
    ...(plans[i]!.tables ? { tables: plans[i]!.tables } : {}),
    latencyMs: { 0: latency[i]! },
    repeatsMs: repeats[i]!,
    ...accuracy[i]!,
    kept: kept[i]!,
  }));
}
