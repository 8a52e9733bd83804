/**
 * Racing: the rule that decides, after a short look at each candidate at every level it is tuned
 * for, at which levels it is worth a full timing window. Pure; repeats in, verdicts out.
 *
 * Round 1 times every candidate of a batch at each of its levels with a short window
 * (RACE_WINDOW_FRACTION of the full one, at least 3 repeats), after its check against the
 * reference. At each level a candidate gets two bounds on its latency there from its repeats:
 *  - lower = the fastest repeat: noise on a shared machine only ever adds time, so no run of the
 *    kernel is faster than its fastest seen, up to timer resolution;
 *  - upper = the 75th-percentile repeat (nearest rank): one descheduled repeat must not make a
 *    candidate look worse than its typical run.
 * The reference at a level is the k-th best upper bound there among the workload's candidates at
 * that thread count: this round's and every complete record the database already holds. At that
 * level a candidate is DROPPED when
 *
 *     lower(c) > (1 + slack) × upper(k-th best)
 *
 * and otherwise goes on to round 2, a full window at that level. A candidate dropped at every
 * level is done after round 1. Each level is judged on its own because a quiet look does not tell
 * a noisy level's winner: on this project's records the best candidate at a noisy level was up to
 * 1.85× slower quiet than the quiet best (bench/RESULTS.md). Why that keeps the family
 * (space/family.ts): with at most as many versions as levels, the family's worst regret is within
 * its tolerance (3%) of zero, so every member is within 3% of the best at some level; a candidate
 * dropped at a level is more than (1 + slack) times the best there. The slack (0.2) is that 3% plus
 * room for a short window's error. A candidate among the k best upper bounds at a level always
 * goes on there: lower(c) ≤ upper(c) ≤ upper(k-th best).
 */

/** Round 1's window as a fraction of the full one (its repeats still number at least 3). */
export const RACE_WINDOW_FRACTION = 0.2;
/** The k of the rule: the reference is the k-th best upper bound. */
export const DEFAULT_RACE_K = 1;
/** The slack of the rule: 1.2× the reference still goes on. */
export const DEFAULT_RACE_SLACK = 0.2;

export type SearchMode = 'race' | 'exhaustive';
export const SEARCH_MODES: readonly SearchMode[] = ['race', 'exhaustive'];

export interface RaceRule {
  /** Fraction above the reference a lower bound may lie and still survive (0.2: 1.2× the reference). */
  readonly slack: number;
  readonly k: number;
}

/** Bounds on a candidate's latency at one level, from its repeats there. */
export interface LatencyBounds {
  readonly lower: number;
  readonly upper: number;
}

/** The bounds of one candidate's latency at a level from its repeats there (ms); undefined with none. */
export function latencyBounds(repeatsMs: readonly number[]): LatencyBounds | undefined {
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
export function raceReference(contenders: readonly LatencyBounds[], k: number): number | undefined {
  const uppers = contenders.map((b) => b.upper).sort((a, b) => a - b);
  return uppers.length >= k ? uppers[k - 1] : undefined;
}

/** Whether a candidate with these bounds survives round 1 against `reference` (none: it does). */
export function survives(bounds: LatencyBounds, reference: number | undefined, rule: RaceRule): boolean {
  return reference === undefined || !(bounds.lower > (1 + rule.slack) * reference);
}

/**
 * The verdict on one round at one level: per candidate (in order), whether it goes on. `held` are
 * the bounds there of the complete records the database holds for the same workload and thread count.
 */
export function raceVerdicts(round: readonly LatencyBounds[], held: readonly LatencyBounds[], rule: RaceRule): boolean[] {
  if (!(rule.slack >= 0) || !Number.isInteger(rule.k) || rule.k < 1) throw new RangeError(`bad race rule ${JSON.stringify(rule)}`);
  const reference = raceReference([...round, ...held], rule.k);
  return round.map((b) => survives(b, reference, rule));
}
