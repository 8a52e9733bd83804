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
 * At each level a candidate GOES ON to round 2, a full window there, when both hold:
 *  - halving: its lower bound is among the ⌈keep × n⌉ smallest of the round's n candidates there
 *    (keep = 1/2: successive halving's η = 2);
 *  - slack: lower(c) ≤ (1 + slack) × upper(k-th best), the reference being the k-th best upper
 *    bound among this round's candidates and every complete record the database already holds for
 *    the workload and thread count (a held record far better drops the whole round).
 * A candidate that goes on nowhere is done after round 1; where it does not go on, its record keeps
 * round 1's repeats. Each level is judged on its own because a quiet look does not tell a noisy
 * level's winner: on this project's records the best candidate at a noisy level was up to 1.85×
 * slower quiet than the quiet best (bench/RESULTS.md). What it costs the family (space/family.ts):
 * with at most as many versions as levels, each member is within the family's 3% tolerance of the
 * best at some level, so a rule that keeps every level's best keeps the family. Halving alone keeps
 * the round's smallest lower bound; with 20%-windows on ten torchvision models' exhaustive records,
 * the best candidate of a level lay outside the kept half in 6 of 1,486 (workload, level) cells by
 * more than 3% (bench/RESULTS.md). The slack, 0.2, adds nothing there: it only spares full windows
 * for a round far behind what the database holds.
 */

/** Round 1's window as a fraction of the full one (its repeats still number at least 3). */
export const RACE_WINDOW_FRACTION = 0.2;
/** The k of the rule: the reference is the k-th best upper bound. */
export const DEFAULT_RACE_K = 1;
/** The slack of the rule: 1.2× the reference still goes on. */
export const DEFAULT_RACE_SLACK = 0.2;
/** The share of a round that goes on at each level (successive halving's 1/η). */
export const DEFAULT_RACE_KEEP = 0.5;

export type SearchMode = 'race' | 'exhaustive';
export const SEARCH_MODES: readonly SearchMode[] = ['race', 'exhaustive'];

export interface RaceRule {
  /** Fraction above the reference a lower bound may lie and still survive (0.2: 1.2× the reference). */
  readonly slack: number;
  readonly k: number;
  /** Share of the round kept at a level (0 < keep ≤ 1; 1: the slack alone decides). */
  readonly keep: number;
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

/** Whether a candidate with these bounds survives the slack against `reference` (none: it does). */
export function survives(bounds: LatencyBounds, reference: number | undefined, rule: RaceRule): boolean {
  return reference === undefined || !(bounds.lower > (1 + rule.slack) * reference);
}

/**
 * The verdict on one round at one level: per candidate (in order), whether it goes on. `held` are
 * the bounds there of the complete records the database holds for the same workload and thread count.
 */
export function raceVerdicts(round: readonly LatencyBounds[], held: readonly LatencyBounds[], rule: RaceRule): boolean[] {
  if (!(rule.slack >= 0) || !Number.isInteger(rule.k) || rule.k < 1 || !(rule.keep > 0 && rule.keep <= 1)) {
    throw new RangeError(`bad race rule ${JSON.stringify(rule)}`);
  }
  const reference = raceReference([...round, ...held], rule.k);
  const kept = new Set(halvingKeeps(round, rule.keep));
  return round.map((b, i) => kept.has(i) && survives(b, reference, rule));
}

/** The indices of the ⌈keep × n⌉ smallest lower bounds (ties: the earlier candidate). */
export function halvingKeeps(round: readonly LatencyBounds[], keep: number): number[] {
  const order = round.map((_, i) => i).sort((a, b) => round[a]!.lower - round[b]!.lower || a - b);
  return order.slice(0, Math.ceil(keep * round.length));
}
