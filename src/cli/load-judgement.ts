/**
 * `veltair load --find-max`'s judgement from its flags: the share of requests within QoS that a
 * rate must keep (`--attainment`, percent, judged at 99% confidence by the early-stopping rule),
 * each probe's minimum time (`--duration`) and time bound (`--probe-limit`), and `--verify`; and
 * the one line that states the rule beside every result.
 */
import type { Judgement } from '../load/early-stopping.js';
import { boundTooShortText, type FindMaxResult } from '../load/find-max.js';
import type { ProbeOptions } from '../load/probe.js';
import { badArgument, parsePositiveInt } from '../terminal/args.js';

export const DEFAULT_PROBE_LIMIT_S = 120;

export interface JudgementFlags {
  duration: string;
  attainment: string;
  probeLimit: string;
  verify?: boolean;
}

export function parseJudgement(flags: JudgementFlags): { judgement: Judgement; verify: boolean } & Omit<ProbeOptions, 'seed'> {
  const pct = Number(flags.attainment);
  if (!(pct >= 50 && pct < 100)) {
    throw badArgument('--attainment', flags.attainment, 'is not a percentage from 50 to below 100', 'e.g. --attainment 99');
  }
  const minDurationS = parsePositiveInt('--duration', flags.duration, 3600);
  const maxDurationS = parsePositiveInt('--probe-limit', flags.probeLimit, 36_000);
  if (maxDurationS < minDurationS) {
    throw badArgument(
      '--probe-limit',
      flags.probeLimit,
      `is shorter than --duration (${minDurationS} s)`,
      'the bound must leave the minimum time room',
    );
  }
  return { judgement: { attainment: pct / 100, confidence: 0.99 }, minDurationS, maxDurationS, verify: flags.verify === true };
}

/** The settled and unsettled parts of a search's result. */
export function boundsText(r: FindMaxResult): string {
  const parts = [`failed at ${r.failedQps === null ? '-' : r.failedQps.toFixed(2)}`];
  if (r.undecidedQps.length > 0) parts.push(`undecided at ${r.undecidedQps.map((q) => q.toFixed(2)).join(', ')}`);
  if (r.boundTooShortBelowQps !== null) parts.push(boundTooShortText(r.boundTooShortBelowQps));
  return parts.join('; ');
}
