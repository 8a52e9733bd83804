/**
 * Statistics for timings taken on a shared, drifting machine: medians and quantiles rather than
 * means, geometric means for ratios, and paired ratios from interleaved arms (A B A B …) so that
 * two figures are only ever compared when they were taken next to each other.
 */

function sorted(xs: readonly number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

function requireSamples(xs: readonly number[], what: string): void {
  if (xs.length === 0) throw new RangeError(`${what} of an empty sample`);
  if (xs.some((x) => Number.isNaN(x))) throw new RangeError(`${what} of a sample containing NaN`);
}

/** q in [0, 1], linear interpolation between order statistics (numpy's default). */
export function quantile(xs: readonly number[], q: number): number {
  requireSamples(xs, 'quantile');
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile ${q} is outside [0, 1]`);
  const s = sorted(xs);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export function median(xs: readonly number[]): number {
  return quantile(xs, 0.5);
}

export function geometricMean(xs: readonly number[]): number {
  requireSamples(xs, 'geometric mean');
  if (xs.some((x) => !(x > 0))) throw new RangeError('geometric mean needs positive values');
  return Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
}

/** A ratio's distribution over rounds: what a paired comparison reports. */
export interface RatioSummary {
  readonly medianRatio: number;
  readonly minRatio: number;
  readonly maxRatio: number;
  readonly q1Ratio: number;
  readonly q3Ratio: number;
  /** One ratio per round, in round order. */
  readonly ratios: readonly number[];
}

export function summarizeRatios(ratios: readonly number[]): RatioSummary {
  requireSamples(ratios, 'ratio summary');
  return {
    medianRatio: median(ratios),
    minRatio: Math.min(...ratios),
    maxRatio: Math.max(...ratios),
    q1Ratio: quantile(ratios, 0.25),
    q3Ratio: quantile(ratios, 0.75),
    ratios: [...ratios],
  };
}

/**
 * Per round r: median(treatment[r]) / median(baseline[r]) — each round's two arms were measured
 * back to back, so machine drift between rounds cancels in the ratio.
 */
export function pairedRatios(baseline: readonly (readonly number[])[], treatment: readonly (readonly number[])[]): RatioSummary {
  if (baseline.length !== treatment.length) {
    throw new RangeError(`paired ratios need as many baseline rounds (${baseline.length}) as treatment rounds (${treatment.length})`);
  }
  return summarizeRatios(baseline.map((b, r) => median(treatment[r]!) / median(b)));
}

/** Results collected per arm and round: `samples[arm][round]` is what one measurement returned. */
export type InterleavedSamples<Arm extends string, T = readonly number[]> = Record<Arm, T[]>;

export interface InterleaveOptions {
  /**
   * Reverse the arm order on odd rounds (A B, B A, A B …): a linear drift then biases neither arm,
   * and adjacent rounds share the arm at their boundary.
   */
  readonly alternate?: boolean;
  /** Called before each measurement (progress reporting). */
  readonly onStep?: (arm: string, round: number) => void;
}

/**
 * Run `measure(arm, round)` for every arm, round after round (A B A B …), serially: never two
 * measurements at once. Returns each arm's samples by round.
 */
export async function interleave<Arm extends string, T = readonly number[]>(
  arms: readonly Arm[],
  rounds: number,
  measure: (arm: Arm, round: number) => Promise<T>,
  options: InterleaveOptions = {},
): Promise<InterleavedSamples<Arm, T>> {
  if (arms.length === 0) throw new RangeError('interleave needs at least one arm');
  if (new Set(arms).size !== arms.length) throw new RangeError('interleave arms must be distinct');
  if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`rounds must be a positive integer, got ${rounds}`);
  const out = Object.fromEntries(arms.map((a) => [a, [] as T[]])) as InterleavedSamples<Arm, T>;
  for (let round = 0; round < rounds; round++) {
    const order = options.alternate && round % 2 === 1 ? [...arms].reverse() : arms;
    for (const arm of order) {
      options.onStep?.(arm, round);
      out[arm][round] = await measure(arm, round);
    }
  }
  return out;
}
