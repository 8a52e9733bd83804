/**
 * find-max: the highest total QPS at which every model passes the early-stopping rule
 * (early-stopping.ts: at p99, 99% confidence), by bracketing (double from the start rate while it
 * passes, halve while it does not) and then geometric bisection.
 *
 * An undecided probe (its time bound came before the rule decided) is neither a pass nor a fail:
 * it never raises the lower bound (maxQps is only ever a rate that passed) and never becomes the
 * failed bound (failedQps is only ever a rate that failed). The search goes on below it, since no
 * rate at or above it can be claimed, and the result lists it in `undecidedQps`, so the gap
 * between maxQps and the lowest undecided or failed rate is what the probes could not settle.
 * The search does not go below an undecided probe that its time bound ended when no lower rate
 * could send enough requests to pass within the same bound (a lower rate sends fewer): it stops
 * and names that rate in `boundTooShortBelowQps`, so a short bound is not read as a low capacity.
 *
 * A probe during which work outside the arm took more than NOISY_OUTSIDE_SHARE of the cores is run
 * once more (marked rerunOfNoisy) and the second run judges the rate; both stay on record.
 */
import { P99_AT_99, requestsNeeded, type Judgement } from './early-stopping.js';
import type { LoadModel } from './generator.js';
import { isNoisy } from './noise.js';
import { httpSender, runProbe, type ProbeOptions, type ProbeResult, type Sender } from './probe.js';

export interface SearchOptions {
  readonly seed: number;
  readonly startQps: number;
  /** Stop when the unsettled gap (lowest undecided or failed rate / maxQps) is within this factor (default 1.05). */
  readonly tolerance?: number;
  /** Probes at most (noisy reruns are extra; default 16). */
  readonly maxRuns?: number;
  readonly onRun?: (r: ProbeResult) => void;
  /** The rule the probes judge by (default p99 at 99%): it says how many requests a pass needs. */
  readonly judgement?: Judgement;
}

export interface FindMaxResult {
  /** The highest rate that passed (0: none did). */
  readonly maxQps: number;
  /** The lowest rate that failed decisively (null: none did). */
  readonly failedQps: number | null;
  /** Rates that ended undecided above maxQps, ascending. */
  readonly undecidedQps: number[];
  /** Set when the search stopped going down because the time bound cannot hold a pass below this rate (null: it never did). */
  readonly boundTooShortBelowQps: number | null;
  readonly runs: ProbeResult[];
}

/**
 * Whether a probe at `qps` could pass within the time bound that ended `r`: each model would send its requests
 * in `r` scaled by the rates, and a pass needs at least the rule's count for no late request.
 */
export function boundCanDecide(r: ProbeResult, qps: number, j: Judgement = P99_AT_99): boolean {
  if (r.stoppedBy !== 'time') return true;
  return r.models.every((m) => (m.sent * qps) / r.totalQps >= requestsNeeded(0, j));
}

/** Why a search stopped going down: the probes' time bound, not the server. */
export function boundTooShortText(qps: number): string {
  return `no rate below ${qps.toFixed(2)} QPS can send enough requests to pass within the probe bound: raise --probe-limit`;
}

/** The search over any way of running one probe at a rate (the tests give it a fake server). */
export async function searchMaxQps(probe: (qps: number, seed: number) => Promise<ProbeResult>, o: SearchOptions): Promise<FindMaxResult> {
  const tolerance = o.tolerance ?? 1.05,
    maxRuns = o.maxRuns ?? 16;
  const runs: ProbeResult[] = [];
  let probes = 0,
    lo = 0,
    failed = Infinity;
  const undecided: number[] = [];
  const run = async (qps: number) => {
    const r = await probe(qps, o.seed + runs.length);
    runs.push(r);
    o.onRun?.(r);
    return r;
  };
  const judge = async (qps: number) => {
    probes++;
    let r = await run(qps);
    if (isNoisy(r.noise)) {
      r = { ...(await run(qps)), rerunOfNoisy: true };
      runs[runs.length - 1] = r;
    }
    if (r.verdict === 'pass') lo = Math.max(lo, qps);
    else if (r.verdict === 'fail') failed = Math.min(failed, qps);
    else undecided.push(qps);
    return r.verdict;
  };
  const ceiling = () => Math.min(failed, ...undecided.filter((q) => q > lo));
  let q = o.startQps,
    boundTooShortBelowQps: number | null = null;
  if ((await judge(q)) === 'pass') {
    while (probes < maxRuns && ceiling() === Infinity) await judge((q *= 2));
  } else {
    while (probes < maxRuns && lo === 0 && q > o.startQps / 64) {
      const last = runs[runs.length - 1]!;
      if (last.verdict === 'undecided' && !boundCanDecide(last, q / 2, o.judgement)) {
        boundTooShortBelowQps = q;
        break;
      }
      await judge((q /= 2));
    }
  }
  while (lo > 0 && ceiling() / lo > tolerance && probes < maxRuns) await judge(Math.sqrt(lo * ceiling()));
  return {
    maxQps: lo,
    failedQps: Number.isFinite(failed) ? failed : null,
    undecidedQps: [...new Set(undecided.filter((x) => x > lo))].sort((a, b) => a - b),
    boundTooShortBelowQps,
    runs,
  };
}

/** find-max against live servers over HTTP: each probe runProbe's early-stopped load; `verify` decodes every answer's header. */
export function findMaxQps(
  base: URL,
  models: readonly LoadModel[],
  o: SearchOptions & Omit<ProbeOptions, 'seed'> & { verify?: boolean },
): Promise<FindMaxResult> {
  return findMaxVia(httpSender(base, models, o.verify === true), models, o);
}

/** find-max through any transport. */
export function findMaxVia(
  send: Sender,
  models: readonly LoadModel[],
  o: SearchOptions & Omit<ProbeOptions, 'seed'>,
): Promise<FindMaxResult> {
  return searchMaxQps((qps, seed) => runProbe(send, models, qps, { ...o, seed }), o);
}
