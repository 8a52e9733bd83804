/**
 * A request's server-side timeline, as the dispatcher records it and answers it in the response
 * parameter `veltair_timeline` (a JSON string): milliseconds from the request's arrival at the
 * dispatcher, on the monotonic clock the native runtime stamps its blocks with —
 *   instance  an instance (arena) of the model was free for it (waiting for one is queueing);
 *   begun     its inputs were bound (session.begin);
 *   blocks    per block [decided, kernel start, kernel end, resumed, cores]: the scheduler decided
 *             the block (claim), the native team started and ended it, the event loop took the result;
 *   answer    the answer was handed to the front end.
 * `accountTimeline` splits it into where the time went; the front end's own share (HTTP parse,
 * body read, tensor decode) is `server_ms` minus `answer`, which the caller knows.
 */
export interface RequestTrace {
  readonly arrivalNs: bigint;
  instanceNs?: bigint;
  begunNs?: bigint;
  readonly blocks: BlockTrace[];
}

export interface BlockTrace {
  readonly decidedNs: bigint;
  readonly kernelStartNs: number;
  readonly kernelEndNs: number;
  readonly resumedNs: bigint;
  readonly cores: number;
}

export const newTrace = (): RequestTrace => ({ arrivalNs: process.hrtime.bigint(), blocks: [] });

export function blockTrace(
  decidedNs: bigint,
  b: { readonly startNs: number; readonly endNs: number },
  resumedNs: bigint,
  cores: number,
): BlockTrace {
  return { decidedNs, kernelStartNs: b.startNs, kernelEndNs: b.endNs, resumedNs, cores };
}

export interface Timeline {
  readonly instance: number;
  readonly begun: number;
  /** [decided, kernel start, kernel end, resumed, cores] per block, ms from arrival (cores a count). */
  readonly blocks: readonly (readonly [number, number, number, number, number])[];
  readonly answer: number;
}

const ms3 = (ns: number) => Math.round(ns / 1e3) / 1e3;

/** The trace as the `veltair_timeline` parameter (compact JSON). */
export function timelineParameter(t: RequestTrace, answerNs: bigint): string {
  const a = t.arrivalNs;
  const rel = (x: bigint | undefined) => (x === undefined ? -1 : ms3(Number(x - a)));
  const relN = (x: number) => ms3(x - Number(a));
  const out: Timeline = {
    instance: rel(t.instanceNs),
    begun: rel(t.begunNs),
    blocks: t.blocks.map((b) => [rel(b.decidedNs), relN(b.kernelStartNs), relN(b.kernelEndNs), rel(b.resumedNs), b.cores] as const),
    answer: rel(answerNs),
  };
  return JSON.stringify(out);
}

/** Read a `veltair_timeline` parameter back; null when it is not one. */
export function parseTimeline(text: unknown): Timeline | null {
  if (typeof text !== 'string') return null;
  try {
    const t = JSON.parse(text) as Timeline;
    const ok =
      typeof t.instance === 'number' &&
      typeof t.begun === 'number' &&
      typeof t.answer === 'number' &&
      Array.isArray(t.blocks) &&
      t.blocks.every((b) => Array.isArray(b) && b.length === 5 && b.every((x) => typeof x === 'number'));
    return ok ? t : null;
  } catch {
    return null;
  }
}

/** Where a request's server-side time went (ms). */
export interface Accounting {
  /** Waiting for an instance, and between blocks for cores (the scheduler had not granted the next block). */
  readonly queueMs: number;
  /** Binding inputs to the instance (session.begin). */
  readonly beginMs: number;
  /** From the scheduler's decision to the native team starting the block (dispatch + thread wake-up). */
  readonly dispatchMs: number;
  /** Native block time (kernels, and the team's own barriers). */
  readonly kernelMs: number;
  /** From the block's native end to the event loop taking it (completion hand-back, event-loop wait). */
  readonly returnMs: number;
  /** After the last block: outputs copied out, answer handed over. */
  readonly finishMs: number;
  readonly blocks: number;
  readonly totalMs: number;
}

export function accountTimeline(t: Timeline): Accounting {
  let queue = Math.max(0, t.instance),
    dispatch = 0,
    kernel = 0,
    back = 0;
  let ready = t.begun;
  for (const [decided, start, end, resumed] of t.blocks) {
    queue += Math.max(0, decided - ready);
    dispatch += start - decided;
    kernel += end - start;
    back += resumed - end;
    ready = resumed;
  }
  return {
    queueMs: queue,
    beginMs: Math.max(0, t.begun - Math.max(0, t.instance)),
    dispatchMs: dispatch,
    kernelMs: kernel,
    returnMs: back,
    finishMs: Math.max(0, t.answer - ready),
    blocks: t.blocks.length,
    totalMs: t.answer,
  };
}
