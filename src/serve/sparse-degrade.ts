/**
 * Trading accuracy for latency under load, for a model with a sparse output layer: before each
 * answer's output layer runs, the model moves one version down its sparsity family (sparser:
 * faster, lower recall) when the requests it holds would otherwise miss QoS, and one version back
 * up (denser) when the load has fallen far enough that the denser version fits again.
 *
 * "Would miss": the requests admitted for the model end later than DEGRADE_AT × QoS, each taking
 * the prefix's fastest profiled time (`parallel` prefixes run at once, on the scheduler's cores)
 * plus the version's measured head latency — one head at a time: a model's heads run one after
 * another (on a worker thread, off the event loop), whatever the core count. "Fits again": the
 * same with the denser version ends by RECOVER_AT × QoS.
 * The gap between the two thresholds keeps the choice from flapping between neighbours. The
 * estimate leaves out what a request spends outside the model (HTTP, JSON, the event loop: most of
 * a 5.3–5.7 ms median answer on loopback, 2 cores, whose s0.005 head takes 0.68 ms), hence
 * DEGRADE_AT well below 1.
 *
 * Moving back up is also a probe. While sparse answers are fast, a queue cannot tell an open-loop
 * load that would swamp the denser version from a client that sends its next request when the
 * last one is answered, whose rate falls with the denser version's speed. So the server tries:
 * after a move down it holds the sparser version for a while (`Hold`), then moves up if the
 * queue fits. A move down within PROBE_WINDOW_QOS × QoS of the last move up means the probe failed
 * (the load is still there), and the next hold is twice as long, up to MAX_HOLD_QOS × QoS; a move
 * down after a longer quiet starts again from FIRST_HOLD_QOS × QoS. A closed-loop client's probe
 * succeeds (its queue never grows at the denser version), so it ends up dense; a sustained
 * overload spends most of its time sparse, with a probe every few seconds at most.
 */
export const DEGRADE_AT = 0.6;
export const RECOVER_AT = 0.5;
export const PROBE_WINDOW_QOS = 10;
export const FIRST_HOLD_QOS = 2;
export const MAX_HOLD_QOS = 40;

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
  /** The clock (ms) and the hold after the last move down: no move up before `hold.untilMs`. */
  readonly nowMs?: number;
  readonly hold?: Hold;
}

/** The state of the probing: when the model last moved up, whether that probe is still unjudged, and the hold of the last move down. */
export interface Hold {
  readonly lastUpMs: number;
  readonly probing: boolean;
  readonly untilMs: number;
  readonly holdMs: number;
}

export const NO_HOLD: Hold = { lastUpMs: -Infinity, probing: false, untilMs: -Infinity, holdMs: 0 };

const drainMs = (o: DegradeInput, v: number) => (o.queued * o.prefixMs) / Math.max(1, o.parallel) + o.queued * o.headMs[v]!;

/** The version to answer with next: current, one sparser, or one denser. */
export function nextSparseVersion(o: DegradeInput): number {
  const last = o.headMs.length - 1;
  if (o.current < last && drainMs(o, o.current) > DEGRADE_AT * o.qosMs) return o.current + 1;
  const held = o.hold !== undefined && o.nowMs !== undefined && o.nowMs < o.hold.untilMs;
  if (o.current > 0 && !held && drainMs(o, o.current - 1) <= RECOVER_AT * o.qosMs) return o.current - 1;
  return o.current;
}

/** The hold after a move (`down`: sparser), made at `nowMs`. */
export function holdAfterMove(h: Hold, direction: 'down' | 'up', nowMs: number, qosMs: number): Hold {
  if (direction === 'up') return { ...h, lastUpMs: nowMs, probing: true };
  const first = FIRST_HOLD_QOS * qosMs;
  if (nowMs - h.lastUpMs > PROBE_WINDOW_QOS * qosMs) return { ...h, probing: false, untilMs: nowMs + first, holdMs: first };
  // A failed probe doubles the hold once; further moves down in the same episode keep it.
  const holdMs = h.probing ? Math.min(MAX_HOLD_QOS * qosMs, Math.max(first, 2 * h.holdMs)) : Math.max(first, h.holdMs);
  return { ...h, probing: false, untilMs: nowMs + holdMs, holdMs };
}
