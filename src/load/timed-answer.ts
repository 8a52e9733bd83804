/**
 * One request timed from the client, with the server's own account of it: `server_ms` (front end
 * from the headers parsed to the backend's answer), the dispatcher's `veltair_timeline` and its
 * scheduler time. Only the answer's JSON header is decoded, never its tensors.
 */
import { post } from './post.js';
import type { LoadModel } from './generator.js';
import { accountTimeline, parseTimeline, type Accounting, type Timeline as ServerTimeline } from '../serve/timeline.js';

export interface TimedAnswer {
  readonly clientMs: number;
  readonly serverMs: number | null;
  readonly accounting: Accounting | null;
  readonly timeline: ServerTimeline | null;
  /** The dispatcher's real time in scheduler calls for this request (µs). */
  readonly schedulerUs: number | null;
}

/** The JSON header of a v2 answer, binary or not. */
export function answerHeader(body: Uint8Array, headerLength: string | null): Record<string, unknown> {
  const n = headerLength === null ? body.byteLength : Number(headerLength);
  return JSON.parse(Buffer.from(body.buffer, body.byteOffset, n).toString('utf8')) as Record<string, unknown>;
}

export async function timedInfer(m: LoadModel): Promise<TimedAnswer> {
  const t0 = performance.now();
  const r = await post(new URL(`/v2/models/${m.name}/infer`, m.base), m.headers, m.body);
  const clientMs = performance.now() - t0;
  if (r.status !== 200) throw new Error(`${m.name}: HTTP ${r.status}`);
  const headerLength = r.headers['inference-header-content-length'];
  const params = (answerHeader(r.body, typeof headerLength === 'string' ? headerLength : null).parameters ?? {}) as Record<string, unknown>;
  const t = parseTimeline(params['veltair_timeline']);
  const num = (k: string) => (typeof params[k] === 'number' ? params[k] : null);
  return {
    clientMs,
    serverMs: num('server_ms'),
    accounting: t ? accountTimeline(t) : null,
    timeline: t,
    schedulerUs: num('veltair_scheduler_us'),
  };
}
