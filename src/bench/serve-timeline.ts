/**
 * Per-request time accounting, live: a light request sent just behind a heavy one (the light
 * request is sent 1 ms after the heavy, so it arrives while the heavy one holds the cores), each
 * pair `pairs` times in turn, on a running veltair server. From each answer: the client's time,
 * the server's `server_ms` (front end from the body in hand to the backend's answer) and the
 * dispatcher's `veltair_timeline` (src/serve/timeline.ts), split into queueing, input binding,
 * dispatch (decision → native start: block claim hand-off and thread wake-up), kernel time, hand
 * back to the event loop and finishing. front end = server_ms − the dispatcher's share; outside =
 * client − server_ms (HTTP transfer, body read, output encoding, the client). Medians over pairs.
 */
import { median } from '../stats.js';
import type { LoadModel } from '../serve/load.js';
import { post } from '../serve/post.js';
import { accountTimeline, parseTimeline, type Accounting, type Timeline as ServerTimeline } from '../serve/timeline.js';

export interface TimedAnswer {
  readonly clientMs: number;
  readonly serverMs: number | null;
  readonly accounting: Accounting | null;
  readonly timeline: ServerTimeline | null;
  /** The dispatcher's real time in scheduler calls for this request (µs). */
  readonly schedulerUs: number | null;
}

export interface Timeline {
  readonly policy: string;
  readonly heavy: string;
  readonly light: string;
  readonly pairs: number;
  readonly heavyAnswers: readonly TimedAnswer[];
  readonly lightAnswers: readonly TimedAnswer[];
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
  return { clientMs, serverMs: num('server_ms'), accounting: t ? accountTimeline(t) : null, timeline: t, schedulerUs: num('veltair_scheduler_us') };
}

export async function traceHeavyThenLight(policy: string, heavy: LoadModel, light: LoadModel, pairs = 5): Promise<Timeline> {
  const heavyAnswers: TimedAnswer[] = [], lightAnswers: TimedAnswer[] = [];
  for (let i = 0; i < pairs; i++) {
    const h = timedInfer(heavy);
    await new Promise((r) => setTimeout(r, 1));
    const l = timedInfer(light);
    heavyAnswers.push(await h);
    lightAnswers.push(await l);
  }
  return { policy, heavy: heavy.name, light: light.name, pairs, heavyAnswers, lightAnswers };
}

const KEYS = ['queueMs', 'beginMs', 'dispatchMs', 'kernelMs', 'returnMs', 'finishMs'] as const;

function row(label: string, answers: readonly TimedAnswer[]): string {
  const med = (f: (a: TimedAnswer) => number | null) => {
    const xs = answers.map(f).filter((x): x is number => x !== null && Number.isFinite(x));
    return xs.length > 0 ? median(xs).toFixed(2) : '-';
  };
  const front = (a: TimedAnswer) => (a.serverMs !== null && a.accounting ? a.serverMs - a.accounting.totalMs : null);
  const outside = (a: TimedAnswer) => (a.serverMs !== null ? a.clientMs - a.serverMs : null);
  return `| ${label} | ${med((a) => a.clientMs)} | ${med(outside)} | ${med(front)} | ${KEYS.map((k) => med((a) => a.accounting?.[k] ?? null)).join(' | ')} | `
    + `${med((a) => a.accounting?.blocks ?? null)} |`;
}

export function timelineTable(t: Timeline): string {
  return [
    `Per-request accounting, policy ${t.policy}: ${t.light} sent 1 ms behind ${t.heavy}, `
      + `${t.pairs} pairs, medians (ms, server-side from the dispatcher's timeline)`, '',
    '| request | client | outside server (HTTP, encode) | front end (parse, decode) | '
      + 'queued | bind inputs | dispatch + wake-up | kernels | hand-back | finish | blocks |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    row(`${t.heavy} (heavy, first)`, t.heavyAnswers), row(`${t.light} (light, behind it)`, t.lightAnswers),
  ].join('\n');
}
