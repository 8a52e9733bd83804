/**
 * The always list of a sparse head: neurons a sparse version scores for every input, before the
 * candidates its hash buckets return. Why: on real data a few hundred labels are the dense top-1
 * of most inputs (the frequent ones), and an angle-based hash rarely returns them for a foreign
 * input (measured on the wordnet and debian-packages models: the buckets held the dense top-1 of
 * 58–60% of held-out inputs, however large the budget). The list is ranked from the calibration
 * inputs' dense answers: how often a neuron is the top-1, then how often in the top-kk, then id.
 *
 * Each sparse version then scores `always` = share × budget of the list and gives the rest of its
 * budget to the buckets of its first `tables` tables (fewer tables: less hashing and gathering, the
 * fixed cost of a sparse query). Share and tables are chosen per version by two-fold
 * cross-validation on the calibration rows (a list ranked on the even rows scored on the odd rows
 * and back), so the choice does not reward a list for the rows it was ranked from.
 */
import type { HeadTopK, SparseHeadAddon } from '../sparse-head/native-head.js';

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

/** How a sparse version queries: the first `always` of the always list, then the buckets of the first `tables` tables (0: all). */
export interface QueryPlan {
  readonly always: number;
  readonly tables: number;
}

/** The fractions of the head's tables tried: fewer tables hash and gather less, once the list holds the frequent answers. */
export const TABLE_FRACTIONS: readonly number[] = [1, 0.5, 0.25, 0.125];

/** Cross-validated recall@1 a plan may give up against the budget's best plan to read fewer tables (cheaper queries). */
export const RECALL_TOLERANCE = 0.005;

export interface PlanChoice {
  /** Per budget, the plan chosen ({0, 0} for the dense budget 0). */
  readonly plans: QueryPlan[];
  /** Per budget, its cross-validated recall@1. */
  readonly recallAt1: number[];
}

/** The plans tried for one budget over L tables: each share of the budget with each table count (tables 0 = all L). */
export function candidatePlans(budget: number, L: number): QueryPlan[] {
  const seen = new Set<string>();
  const plans: QueryPlan[] = [];
  for (const share of ALWAYS_SHARES) {
    for (const f of TABLE_FRACTIONS) {
      const t = Math.max(1, Math.ceil(f * L));
      const plan = { always: Math.floor(share * budget), tables: t === L ? 0 : t };
      const key = `${plan.always}/${plan.tables}`;
      if (!seen.has(key)) {
        seen.add(key);
        plans.push(plan);
      }
    }
  }
  return plans;
}

/** Tables a plan reads over a list of `listed` ids: none when the list fills the budget (no hashing), else its tables (0: all L). */
const tablesRead = (p: QueryPlan, budget: number, listed: number, L: number) => (Math.min(p.always, listed) >= budget ? 0 : p.tables || L);

/**
 * Choose each sparse budget's plan by two-fold cross-validation: the best recall@1, or within
 * RECALL_TOLERANCE of it the plan reading the fewest tables. `makeHead(list)` builds a head (the
 * same tables, L of them) whose always list is `list`; `hidden` is rows × d; `dense` the dense top-kk.
 */
export function choosePlans(
  addon: SparseHeadAddon,
  makeHead: (list: Uint32Array) => object,
  hidden: Float32Array,
  rows: number,
  d: number,
  dense: Pick<HeadTopK, 'indices'>,
  kk: number,
  budgets: readonly number[],
  L: number,
): PlanChoice {
  const none: QueryPlan = { always: 0, tables: 0 };
  if (rows < 2) return { plans: budgets.map(() => none), recallAt1: budgets.map(() => Number.NaN) };
  const folds = [0, 1].map((f) => Array.from({ length: rows }, (_, r) => r).filter((r) => r % 2 === f));
  // fold f's list is ranked on the other fold's rows and scored on fold f's rows
  const lists = folds.map((_, f) => rankAlways(dense, kk, folds[1 - f]!));
  const heads = lists.map((list) => makeHead(list));
  const listed = Math.min(...lists.map((l) => l.length));
  const inputs = folds.map((rs) => {
    const x = new Float32Array(rs.length * d);
    rs.forEach((r, i) => x.set(hidden.subarray(r * d, (r + 1) * d), i * d));
    return x;
  });
  const plans: QueryPlan[] = [],
    recall: number[] = [];
  for (const budget of budgets) {
    if (budget === 0) {
      plans.push(none);
      recall.push(1);
      continue;
    }
    const tried = candidatePlans(budget, L).map((plan) => {
      let hits = 0;
      folds.forEach((rs, f) => {
        const got = addon.headTopK(heads[f]!, inputs[f]!, rs.length, 1, budget, plan.always, plan.tables);
        rs.forEach((r, i) => {
          if (got.indices[i] === dense.indices[r * kk]) hits++;
        });
      });
      return { plan, hits };
    });
    const best = Math.max(...tried.map((t) => t.hits));
    const ok = tried.filter((t) => t.hits >= best - RECALL_TOLERANCE * rows);
    const cost = (p: QueryPlan) => tablesRead(p, budget, listed, L);
    ok.sort((a, b) => cost(a.plan) - cost(b.plan) || b.hits - a.hits || a.plan.always - b.plan.always || b.plan.tables - a.plan.tables);
    const chosen = ok[0]!;
    plans.push(cost(chosen.plan) === 0 ? { always: chosen.plan.always, tables: 0 } : chosen.plan); // a full list reads no table
    recall.push(chosen.hits / rows);
  }
  return { plans, recallAt1: recall };
}
