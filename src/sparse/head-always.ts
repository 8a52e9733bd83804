/**
 * The always list of a sparse head: neurons a sparse version scores for every input, before the
 * candidates its hash buckets return. Why: on real data a few hundred labels are the dense top-1
 * of most inputs (the frequent ones), and an angle-based hash rarely returns them for a foreign
 * input (measured on the wordnet and debian-packages models: the buckets held the dense top-1 of
 * 58–60% of held-out inputs, however large the budget). The list is ranked from the calibration
 * inputs' dense answers: how often a neuron is the top-1, then how often in the top-kk, then id.
 *
 * Each sparse version then scores `always` = share × budget of the list (the rest of its budget
 * goes to the buckets); the share is chosen per version by two-fold cross-validation on the
 * calibration rows (a list ranked on the even rows scored on the odd rows and back), so the choice
 * does not reward a list for the rows it was ranked from.
 */
import type { HeadTopK, SparseHeadAddon } from './native-head.js';

/** The shares of a version's budget tried for the always list (0: the buckets alone, as before). */
export const ALWAYS_SHARES: readonly number[] = [0, 0.25, 0.5, 0.75, 0.9, 1];

/**
 * Neurons that were in some row's dense top-kk, ranked: top-1 count, then top-kk count (descending), then id.
 * `dense` holds rows × kk answers (indices < 0: fewer candidates than kk); `pick` restricts to some rows.
 */
export function rankAlways(dense: Pick<HeadTopK, 'indices'>, kk: number, rows: readonly number[]): Uint32Array {
  const top1 = new Map<number, number>();
  const topk = new Map<number, number>();
  for (const r of rows) {
    for (let j = 0; j < kk; j++) {
      const id = dense.indices[r * kk + j]!;
      if (id < 0) continue;
      topk.set(id, (topk.get(id) ?? 0) + 1);
      if (j === 0) top1.set(id, (top1.get(id) ?? 0) + 1);
    }
  }
  const ids = [...topk.keys()].sort((a, b) => (top1.get(b) ?? 0) - (top1.get(a) ?? 0) || topk.get(b)! - topk.get(a)! || a - b);
  return Uint32Array.from(ids);
}

/** Always-list length a version of `budget` neurons scores at `share` (within the list's length). */
export const alwaysCount = (budget: number, share: number, listLength: number): number => Math.min(listLength, Math.floor(share * budget));

export interface AlwaysChoice {
  /** Per budget, the always count chosen (0 for the dense budget 0). */
  readonly counts: number[];
  /** Per budget, its cross-validated recall@1 at the chosen count. */
  readonly recallAt1: number[];
}

/**
 * Choose each sparse budget's always count by two-fold cross-validation. `makeHead(list)` builds a
 * head (the same tables) whose always list is `list`; `hidden` is rows × d; `dense` the dense top-kk.
 */
export function chooseAlways(addon: SparseHeadAddon, makeHead: (list: Uint32Array) => object, hidden: Float32Array, rows: number, d: number,
  dense: Pick<HeadTopK, 'indices'>, kk: number, budgets: readonly number[]): AlwaysChoice {
  const folds = [0, 1].map((f) => Array.from({ length: rows }, (_, r) => r).filter((r) => r % 2 === f));
  const counts: number[] = [], recall: number[] = [];
  if (rows < 2) return { counts: budgets.map(() => 0), recallAt1: budgets.map(() => Number.NaN) };
  // fold f's list is ranked on the other fold's rows and scored on fold f's rows
  const heads = folds.map((_, f) => { const list = rankAlways(dense, kk, folds[1 - f]!); return { list, head: makeHead(list) }; });
  const inputs = folds.map((rs) => {
    const x = new Float32Array(rs.length * d);
    rs.forEach((r, i) => x.set(hidden.subarray(r * d, (r + 1) * d), i * d));
    return x;
  });
  for (const budget of budgets) {
    if (budget === 0) { counts.push(0); recall.push(1); continue; }
    let best = -1, bestCount = 0;
    const tried = new Set<number>();
    for (const share of ALWAYS_SHARES) {
      const count = Math.floor(share * budget);
      if (tried.has(count)) continue;
      tried.add(count);
      let hits = 0;
      folds.forEach((rs, f) => {
        const got = addon.headTopK(heads[f]!.head, inputs[f]!, rs.length, 1, budget, count);
        rs.forEach((r, i) => { if (got.indices[i] === dense.indices[r * kk]) hits++; });
      });
      if (hits > best) { best = hits; bestCount = count; }
    }
    counts.push(bestCount);
    recall.push(best / rows);
  }
  return { counts, recallAt1: recall };
}
