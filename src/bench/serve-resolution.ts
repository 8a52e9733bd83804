/**
 * The method's resolution, from an A/A pair: one kind run as two identical arms (`--arms
 * veltair,veltair` → `veltair`, `veltair#2`). Their paired ratio over rounds is the method's own
 * spread. The method resolves 10% when that ratio's median is within 10% of 1 and every round's is
 * within 20%; a difference between two arms smaller than the A/A spread is not a result.
 */
import { summarizeRatios, type RatioSummary } from '../stats.js';

export const AA_MEDIAN_BAND = 1.1;
export const AA_ROUND_BAND = 1.2;

/** The arms of a table as the A/A check needs them. */
export interface RoundsOf {
  readonly label: string;
  readonly kind: string;
  readonly maxQps: readonly number[];
}

export interface AaCheck {
  readonly a: string;
  readonly b: string;
  /** b / a per round (rounds where a is 0 are left out). */
  readonly ratio: RatioSummary;
  /** The round ratio farthest from 1 (as a ratio ≥ 1 or ≤ 1, whichever it was). */
  readonly worstRound: number;
  readonly medianWithin: boolean;
  readonly everyRoundWithin: boolean;
}

const within = (r: number, band: number) => r >= 1 / band && r <= band;
const distance = (r: number) => Math.abs(Math.log(r));

/** Per round: b / a, rounds where a is 0 or either is missing left out; null when none is left. */
export function pairedRounds(b: RoundsOf, a: RoundsOf): RatioSummary | null {
  const ratios = b.maxQps.map((q, r) => q / a.maxQps[r]!).filter((x) => Number.isFinite(x) && x > 0);
  return ratios.length > 0 ? summarizeRatios(ratios) : null;
}

/** Every A/A pair (a kind and its `#2`) with the rounds both measured. */
export function aaChecks(arms: readonly RoundsOf[]): AaCheck[] {
  const out: AaCheck[] = [];
  for (const a of arms) {
    if (a.label !== a.kind) continue;
    const twin = arms.find((b) => b.kind === a.kind && b.label === `${a.kind}#2`);
    const ratio = twin ? pairedRounds(twin, a) : null;
    if (!twin || !ratio) continue;
    const worstRound = ratio.ratios.reduce((w, r) => (distance(r) > distance(w) ? r : w), 1);
    out.push({
      a: a.label,
      b: twin.label,
      ratio,
      worstRound,
      medianWithin: within(ratio.medianRatio, AA_MEDIAN_BAND),
      everyRoundWithin: ratio.ratios.every((r) => within(r, AA_ROUND_BAND)),
    });
  }
  return out;
}

const pct = (band: number) => `${Math.round((band - 1) * 100)}%`;

/** The resolution line(s) of a table's header. */
export function resolutionLines(arms: readonly RoundsOf[]): string[] {
  const checks = aaChecks(arms);
  if (checks.length === 0) {
    const ran = arms.filter((b) => b.label === `${b.kind}#2` && arms.some((a) => a.label === b.kind));
    if (ran.length > 0) {
      return ran.map(
        (b) =>
          `Resolution: the A/A pair ${b.label} / ${b.kind} ran, but no round found a max QPS above 0 for both ` +
          '(undecided or failed at every rate), so the resolution is unknown at these probes (raise --probe-limit).',
      );
    }
    return [
      'Resolution: no A/A pair ran, so this table does not show which differences the method can tell apart ' +
        '(run a kind twice: --arms …,veltair,veltair).',
    ];
  }
  return checks.map(
    (c) =>
      `Resolution (A/A ${c.b} / ${c.a}, ${c.ratio.ratios.length} rounds): paired median ${c.ratio.medianRatio.toFixed(3)} ` +
      `(${c.medianWithin ? 'within' : 'NOT within'} ${pct(AA_MEDIAN_BAND)}), worst round ${c.worstRound.toFixed(3)} ` +
      `(${c.everyRoundWithin ? 'every round within' : 'NOT every round within'} ${pct(AA_ROUND_BAND)}): ` +
      `${c.medianWithin && c.everyRoundWithin ? 'the method resolves 10%' : 'the method does NOT resolve 10% at these rounds and probes'}.`,
  );
}
