/**
 * Per-request time accounting, live: a light request sent just behind a heavy one (the light
 * request is sent 1 ms after the heavy, so it arrives while the heavy one holds the cores), each
 * pair `pairs` times in turn, on a running veltair server. From each answer: the client's time,
 * the server's `server_ms` (front end from the headers parsed to the backend's answer) and the
 * dispatcher's `veltair_timeline` (src/serve/timeline.ts), split into queueing, input binding,
 * dispatch (decision → native start: block claim hand-off and thread wake-up), kernel time, hand
 * back to the event loop and finishing. front end = server_ms − the dispatcher's share; outside =
 * client − server_ms (HTTP transfer, writing the answer, the client). Medians over pairs.
 */
import { median } from '../stats.js';
import type { LoadModel } from '../load/generator.js';
import { timedInfer, type TimedAnswer } from '../load/timed-answer.js';

export interface Timeline {
  readonly policy: string;
  readonly heavy: string;
  readonly light: string;
  readonly pairs: number;
  readonly heavyAnswers: readonly TimedAnswer[];
  readonly lightAnswers: readonly TimedAnswer[];
}

export async function traceHeavyThenLight(policy: string, heavy: LoadModel, light: LoadModel, pairs = 5): Promise<Timeline> {
  const heavyAnswers: TimedAnswer[] = [],
    lightAnswers: TimedAnswer[] = [];
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
  return (
    `| ${label} | ${med((a) => a.clientMs)} | ${med(outside)} | ${med(front)} | ${KEYS.map((k) => med((a) => a.accounting?.[k] ?? null)).join(' | ')} | ` +
    `${med((a) => a.accounting?.blocks ?? null)} |`
  );
}

export function timelineTable(t: Timeline): string {
  return [
    `Per-request accounting, policy ${t.policy}: ${t.light} sent 1 ms behind ${t.heavy}, ` +
      `${t.pairs} pairs, medians (ms, server-side from the dispatcher's timeline)`,
    '',
    '| request | client | outside server (HTTP, encode) | front end (parse, decode) | ' +
      'queued | bind inputs | dispatch + wake-up | kernels | hand-back | finish | blocks |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    row(`${t.heavy} (heavy, first)`, t.heavyAnswers),
    row(`${t.light} (light, behind it)`, t.lightAnswers),
  ].join('\n');
}
