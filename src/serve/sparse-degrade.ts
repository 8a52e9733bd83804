/**
 * Trading accuracy for latency under load, for a model with a sparse output layer: before each
 * answer's output layer runs, the model moves one version down its sparsity family (sparser:
 * faster, lower recall) when the requests it holds would otherwise miss QoS, and one version back
 * up (denser) when the load has fallen far enough that the denser version fits again.
 *
 * "Would miss": the requests admitted for the model end later than DEGRADE_AT × QoS, each taking
 * the prefix's fastest profiled time (`parallel` prefixes run at once, on the scheduler's cores)
 * plus the version's measured head latency — one head at a time: the head runs on the event loop
 * after the plan's last block, so heads queue behind each other whatever the core count. "Fits
 * again": the same with the denser version ends before RECOVER_AT × QoS.
 * The gap between the two thresholds keeps the choice from flapping between neighbours.
 */
export const DEGRADE_AT = 0.8;
export const RECOVER_AT = 0.5;

export interface DegradeInput {
  /** Head latency (ms, level 0) of each kept version, densest first. */
  readonly headMs: readonly number[];
  /** The rest of the model (the bundle's plan), ms per request. */
  readonly prefixMs: number;
  readonly qosMs: number;
  /** Requests the model holds now, this one included. */
  readonly queued: number;
  /** How many of their prefixes run at once (their heads run one at a time). */
  readonly parallel: number;
  readonly current: number;
}

const drainMs = (o: DegradeInput, v: number) => (o.queued * o.prefixMs) / Math.max(1, o.parallel) + o.queued * o.headMs[v]!;

/** The version to answer with next: current, one sparser, or one denser. */
export function nextSparseVersion(o: DegradeInput): number {
  const last = o.headMs.length - 1;
  if (o.current < last && drainMs(o, o.current) > DEGRADE_AT * o.qosMs) return o.current + 1;
  if (o.current > 0 && drainMs(o, o.current - 1) < RECOVER_AT * o.qosMs) return o.current - 1;
  return o.current;
}
