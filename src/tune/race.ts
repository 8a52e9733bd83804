/**
 * Racing: the rule that decides, after a short quiet look at each candidate, which ones are worth
 * their full measurement (every interference level, full timing windows). Pure; repeats in,
 * verdicts out.
 *
 * Round 1 times every candidate of a batch at level 0 with a short window (RACE_WINDOW_FRACTION of
 * the full one, at least 3 repeats), after its check against the reference. Each candidate then
 * gets two bounds on its quiet latency from its repeats:
 *  - lower = the fastest repeat: noise on a shared machine only ever adds time, so no run of the
 *    kernel is faster than its fastest seen, up to timer resolution;
 *  - upper = the 75th-percentile repeat (nearest rank): one descheduled repeat must not make a
 *    candidate look worse than its typical run.
 * The reference is the k-th best upper bound among the workload's candidates at that thread count:
 * this round's and every complete record the database already holds for it. A candidate is
 * DROPPED when
 *
 *     lower(c) > (1 + slack) × upper(k-th best)
 *
 * and every other candidate SURVIVES to round 2, which measures it exactly as an exhaustive search
 * does. The slack is the noisy screen's (evaluate.ts DEFAULT_NOISY_SCREEN − 1 = 0.5): a candidate
 * that much slower when quiet is dominated at level 0 by a candidate measured at every level, so
 * it joins a family only by winning a noisy level by more than 1.5×. That is rare, not never: in
 * ten torchvision models' exhaustive runs, 10 of the 1,355 candidates that much slower quiet were
 * family members (bench/RESULTS.md). The exhaustive search's noisy screen skips those candidates'
 * noisy levels too, so the family a racing search selects is the one an exhaustive search selects
 * from the same candidates (test/tune-race.test.ts checks it on deterministic fixtures). A
 * candidate among the k best upper bounds always survives: lower(c) ≤ upper(c) ≤ upper(k-th best).
 */

/** Round 1's window as a fraction of the full one (its repeats still number at least 3). */
export const RACE_WINDOW_FRACTION = 0.2;
/** The k of the rule: the reference is the k-th best upper bound. */
export const DEFAULT_RACE_K = 1;

export type SearchMode = 'race' | 'exhaustive';
export const SEARCH_MODES: readonly SearchMode[] = ['race', 'exhaustive'];

export interface RaceRule {
  /** Fraction above the reference a lower bound may lie and still survive (0.5: 1.5× the reference). */
  readonly slack: number;
  readonly k: number;
}

export interface QuietBounds {
  readonly lower: number;
  readonly upper: number;
}

/** The bounds of one candidate's quiet latency from its repeats (ms); undefined with none. */
export function quietBounds(repeatsMs: readonly number[]): QuietBounds | undefined {
  const xs = repeatsMs.filter((x) => Number.isFinite(x) && x > 0).sort((a, b) => a - b);
  if (xs.length === 0) return undefined;
  return { lower: xs[0]!, upper: xs[Math.min(xs.length - 1, Math.ceil(0.75 * xs.length) - 1)]! };
}

/** Round 1's window (ms) for a full window of `fullMs`. */
export function raceWindowMs(fullMs: number): number {
  return Math.max(1, fullMs * RACE_WINDOW_FRACTION);
}

/**
 * The reference of the rule: the k-th smallest upper bound over `contenders` (this round's
 * candidates and the complete records already held); undefined when there are fewer than k.
 */
export function raceReference(contenders: readonly QuietBounds[], k: number): number | undefined {
  const uppers = contenders.map((b) => b.upper).sort((a, b) => a - b);
  return uppers.length >= k ? uppers[k - 1] : undefined;
}

/** Whether a candidate with these bounds survives round 1 against `reference` (none: it does). */
export function survives(bounds: QuietBounds, reference: number | undefined, rule: RaceRule): boolean {
  return reference === undefined || !(bounds.lower > (1 + rule.slack) * reference);
}

/**
 * The verdict on one round: per candidate (in order), whether it survives. `held` are the bounds
 * of the complete records the database holds for the same workload and thread count.
 */
export function raceVerdicts(round: readonly QuietBounds[], held: readonly QuietBounds[], rule: RaceRule): boolean[] {
  if (!(rule.slack >= 0) || !Number.isInteger(rule.k) || rule.k < 1) throw new RangeError(`bad race rule ${JSON.stringify(rule)}`);
  const reference = raceReference([...round, ...held], rule.k);
  return round.map((b) => survives(b, reference, rule));
}
