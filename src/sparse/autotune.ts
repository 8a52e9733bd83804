/**
 * Choosing a sparse layer's hash parameters, BOLT's rule (Meisburger et al., CIKM'23, §4.2):
 *   coverage  L·d/2^K ≥ c1·s·d              the tables together hold at least the s·d neurons wanted,
 *   cost      K·L·d_prev + s·d·d_prev ≤ c2·d·d_prev   hashing plus the sparse product stay within c2 of dense,
 * with c1 = 1, c2 = 0.1: for K = 1, 2, … take the largest L (≤ 256) the cost allows, and stop at the
 * first K whose L fails coverage; the last K that passed wins (more bits = more selective buckets, at
 * the most tables the budget pays for). R = ⌈2·d/2^K⌉ caps a bucket at twice its expected fill.
 *
 * Two edge rules of ours, so every input has an answer:
 *  - 2^K ≤ d as well: more buckets than neurons only adds empty buckets (and memory) without adding
 *    selectivity;
 *  - s ≥ c2 leaves no budget for hashing at all; then the hashing alone is held to c2·d·d_prev.
 * If even K = 1 fails, K = 1 with the coverage-minimum L is returned and `meetsCost` says false.
 */
export const C1 = 1;
export const C2 = 0.1;
export const MAX_TABLES = 256;

export interface HashParams {
  readonly K: number;
  readonly L: number;
  readonly R: number;
}

export interface Autotuned extends HashParams {
  readonly meetsCoverage: boolean;
  readonly meetsCost: boolean;
  /** Why these values, in one line (printed by `veltair train`). */
  readonly reason: string;
}

export function bucketCap(d: number, K: number): number {
  return Math.max(1, Math.ceil((2 * d) / 2 ** K));
}

/** Largest L (≤ 256) the cost constraint allows at K bits. */
export function costLimitedTables(d: number, K: number, s: number): number {
  const budget = s < C2 ? C2 - s : C2;
  return Math.min(MAX_TABLES, Math.floor((budget * d) / K + 1e-9));
}

export function covers(d: number, K: number, L: number, s: number): boolean {
  return (L * d) / 2 ** K >= C1 * s * d - 1e-9;
}

export function meetsCostConstraint(d: number, dPrev: number, K: number, L: number, s: number): boolean {
  const budget = s < C2 ? C2 * d * dPrev : C2 * d * dPrev + s * d * dPrev;
  return K * L * dPrev + s * d * dPrev <= budget + 1e-6;
}

export function autotuneKLR(d: number, dPrev: number, s: number): Autotuned {
  let best: { K: number; L: number } | undefined;
  for (let K = 1; K <= 30 && 2 ** K <= d; K++) {
    const L = costLimitedTables(d, K, s);
    if (L < 1 || !covers(d, K, L, s)) break;
    best = { K, L };
  }
  if (best === undefined) {
    const L = Math.min(MAX_TABLES, Math.max(1, Math.ceil(C1 * s * 2)));
    return {
      K: 1,
      L,
      R: bucketCap(d, 1),
      meetsCoverage: covers(d, 1, L, s),
      meetsCost: meetsCostConstraint(d, dPrev, 1, L, s),
      reason: `no K meets both constraints at d=${d}, s=${s}; K=1 with the fewest tables that cover s·d`,
    };
  }
  const { K, L } = best;
  const capped = 2 ** (K + 1) > d && costLimitedTables(d, K + 1, s) >= 1 && covers(d, K + 1, costLimitedTables(d, K + 1, s), s);
  return {
    K,
    L,
    R: bucketCap(d, K),
    meetsCoverage: true,
    meetsCost: meetsCostConstraint(d, dPrev, K, L, s),
    reason: capped
      ? `largest K with 2^K ≤ d (${d}); L from the cost budget`
      : `K=${K + 1} would fail coverage (L·d/2^K < s·d); L from the cost budget (max ${MAX_TABLES})`,
  };
}

/**
 * The output layer's sparsity when the spec gives none, from its class count: dense below 5000
 * classes (the sparse layer's bookkeeping costs more than it saves there), else about 2048 active
 * neurons, kept within [0.005, 0.05] (0.05 leaves half of c2 for hashing).
 */
export function autoSparsity(classes: number): number {
  if (classes < 5000) return 1;
  return Math.min(0.05, Math.max(0.005, 2048 / classes));
}
