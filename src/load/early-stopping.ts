/**
 * MLPerf LoadGen's early-stopping rule (inference rules, Appendix A), a one-sided binomial test on
 * one model's requests. If the true share of late requests were the tolerated one, q = 1 − attainment
 * (0.01 at p99), seeing `late` or fewer of `sent` would be unlikely: a rate passes when
 * P[Binomial(sent, q) ≤ late] ≤ 1 − confidence. So the requests needed for `late` late ones is the
 * smallest n with that tail ≤ 1 − confidence: 459 for 0 late, 662 for 1, 2,010 for 10 (p99, 99%).
 * It fails decisively when the late share is above q with the same confidence:
 * P[Binomial(sent, q) ≥ late] ≤ 1 − confidence. Anything between is undecided.
 */

export type Verdict = 'pass' | 'fail' | 'undecided';

export interface Judgement {
  /** Share of requests that must be within QoS (0.99: the 99th percentile). */
  readonly attainment: number;
  /** Confidence of the verdict (0.99). */
  readonly confidence: number;
}

export const P99_AT_99: Judgement = { attainment: 0.99, confidence: 0.99 };

/** log P[Binomial(n, q) = k] for k = 0..kMax, by the pmf's ratio recurrence (no factorials, no underflow). */
function logPmfs(n: number, q: number, kMax: number): number[] {
  const out = [n * Math.log1p(-q)];
  const odds = Math.log(q) - Math.log1p(-q);
  for (let k = 0; k < kMax; k++) out.push(out[k]! + Math.log((n - k) / (k + 1)) + odds);
  return out;
}

const logSumExp = (xs: readonly number[]) => {
  const m = Math.max(...xs);
  return m === -Infinity ? m : m + Math.log(xs.reduce((s, x) => s + Math.exp(x - m), 0));
};

/** P[Binomial(n, q) ≤ k]. */
export function binomialCdf(k: number, n: number, q: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  return Math.min(1, Math.exp(logSumExp(logPmfs(n, q, k))));
}

// A probe asks after every request it sends: the answer depends on three numbers only.
const needed = new Map<string, number>();

/** The fewest requests that let `late` late ones pass: the smallest n with P[Binomial(n, 1 − attainment) ≤ late] ≤ 1 − confidence. */
export function requestsNeeded(late: number, j: Judgement = P99_AT_99): number {
  const key = `${late}|${j.attainment}|${j.confidence}`;
  const known = needed.get(key);
  if (known !== undefined) return known;
  const q = 1 - j.attainment,
    alpha = 1 - j.confidence;
  let lo = late + 1,
    hi = late + 1;
  while (binomialCdf(late, hi, q) > alpha) hi *= 2;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (binomialCdf(late, mid, q) <= alpha) hi = mid;
    else lo = mid + 1;
  }
  needed.set(key, lo);
  return lo;
}

/** Whether `late` of `sent` shows, with the confidence, a late share above 1 − attainment. */
export function failsDecisively(late: number, sent: number, j: Judgement = P99_AT_99): boolean {
  return late > 0 && 1 - binomialCdf(late - 1, sent, 1 - j.attainment) <= 1 - j.confidence;
}

/**
 * One model's verdict on the requests sent so far. `unsettled` requests (sent, not answered, not
 * yet past QoS) count as late for a pass and as on time for a fail, so no answer still to come can
 * turn the verdict over once sending stops.
 */
export function judgeModel(sent: number, late: number, unsettled: number, j: Judgement = P99_AT_99): Verdict {
  if (failsDecisively(late, sent, j)) return 'fail';
  if (sent >= requestsNeeded(late + unsettled, j)) return 'pass';
  return 'undecided';
}

/** A probe's verdict over its models: fail if any fails, pass if all pass, else undecided. */
export function judgeProbe(verdicts: readonly Verdict[]): Verdict {
  if (verdicts.includes('fail')) return 'fail';
  return verdicts.every((v) => v === 'pass') ? 'pass' : 'undecided';
}

/** The rule in one line, with its own check figures. */
export function judgementLine(j: Judgement = P99_AT_99): string {
  const pct = `${+(j.attainment * 100).toFixed(3)}%`;
  return (
    `a rate passes when every model's requests show ≥ ${pct} within QoS at ${+(j.confidence * 100).toFixed(3)}% confidence ` +
    `(early stopping: ≥ ${requestsNeeded(0, j)} requests with 0 late, ${requestsNeeded(1, j)} with 1, ` +
    `${requestsNeeded(10, j).toLocaleString('en-US')} with 10); undecided probes count as neither pass nor fail`
  );
}
