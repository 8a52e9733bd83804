/**
 * Where late requests lose their time. A traced run is runLoad's open-loop Poisson load with every answer's
 * JSON header read back (the server's `server_ms` and, from veltair's dispatcher, `veltair_timeline`), and
 * the load generator's own state beside each request: how late its loop sent it, and the garbage
 * collection that ran while it was in flight.
 *
 * Each request's time splits into components (ms):
 *   client lag   the loop sent it after its planned arrival (not in its latency, but the loop was busy);
 *   client GC    this process's GC pauses while it was in flight;
 *   outside      client time − server_ms: transfer, sending the headers, writing the answer,
 *                the client's loop (GC included);
 *   front end    server_ms − the dispatcher's share: reading the body, tensor decode, encode;
 *   queued       waiting for an instance, and between blocks for cores;
 *   bind         inputs bound to the instance;
 *   dispatch     scheduler decision → native start;
 *   kernels      native block time;
 *   hand-back    native end → event loop, and the answer's outputs copied out.
 * A late request (not answered 200 within QoS) is attributed to the component that exceeds its median over
 * the same model's on-time requests by the most: what went wrong, not what always costs. A request with
 * no answer, or no server account, is attributed to "no answer" or "untraced".
 */
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { median } from '../stats.js';
import { accountTimeline, parseTimeline, type Accounting } from '../serve/timeline.js';
import { arrivals, type LoadModel } from './generator.js';
import { encodeRequest, RawClient, type KeptAnswer } from './raw-client.js';

export const COMPONENTS = ['clientLag', 'clientGc', 'outside', 'frontEnd', 'queued', 'bind', 'dispatch', 'kernels', 'handBack'] as const;
export type Component = (typeof COMPONENTS)[number];
export type Cause = Component | 'no answer' | 'untraced';

export const COMPONENT_LABELS: Readonly<Record<Component, string>> = {
  clientLag: 'client lag',
  clientGc: 'client GC',
  outside: 'outside',
  frontEnd: 'front end',
  queued: 'queued',
  bind: 'bind',
  dispatch: 'dispatch',
  kernels: 'kernels',
  handBack: 'hand-back',
};

export interface TracedRequest {
  readonly model: number;
  readonly status: number;
  readonly clientMs: number;
  /** Components this request has (server ones absent when the answer carried no account). */
  readonly parts: Partial<Record<Component, number>>;
}

/** A request's components from the client's view and the server's account (null: none in the answer). */
export function requestParts(
  clientMs: number,
  lagMs: number,
  gcMs: number,
  serverMs: number | null,
  account: Accounting | null,
): Partial<Record<Component, number>> {
  const parts: Partial<Record<Component, number>> = { clientLag: lagMs, clientGc: gcMs };
  if (serverMs === null) return parts;
  parts.outside = Math.max(0, clientMs - serverMs);
  if (account === null) return { ...parts, frontEnd: serverMs };
  return {
    ...parts,
    frontEnd: Math.max(0, serverMs - account.totalMs),
    queued: account.queueMs,
    bind: account.beginMs,
    dispatch: account.dispatchMs,
    kernels: account.kernelMs,
    handBack: account.returnMs + account.finishMs,
  };
}

export const isLate = (r: TracedRequest, qosMs: number): boolean => r.status !== 200 || r.clientMs > qosMs;

/** The cause of each late request of one model (see the header for the rule). */
export function attributeLate(requests: readonly TracedRequest[], qosMs: number): Cause[] {
  const onTime = requests.filter((r) => !isLate(r, qosMs));
  const typical = Object.fromEntries(
    COMPONENTS.map((c) => {
      const xs = onTime.map((r) => r.parts[c]).filter((x): x is number => x !== undefined);
      return [c, xs.length > 0 ? median(xs) : 0];
    }),
  ) as Record<Component, number>;
  return requests
    .filter((r) => isLate(r, qosMs))
    .map((r): Cause => {
      if (r.status !== 200) return 'no answer';
      if (r.parts.queued === undefined && r.parts.outside === undefined) return 'untraced';
      let best: Component = 'outside',
        excess = -Infinity;
      for (const c of COMPONENTS) {
        const v = r.parts[c];
        if (v === undefined) continue;
        if (v - typical[c] > excess) [best, excess] = [c, v - typical[c]];
      }
      return best;
    });
}

export interface ModelAttribution {
  readonly name: string;
  readonly qosMs: number;
  readonly sent: number;
  readonly late: number;
  readonly causes: Partial<Record<Cause, number>>;
  /** Median of each component over on-time and over late requests (ms). */
  readonly onTimeMedians: Partial<Record<Component, number>>;
  readonly lateMedians: Partial<Record<Component, number>>;
}

export interface AttributionResult {
  readonly totalQps: number;
  readonly durationS: number;
  readonly models: readonly ModelAttribution[];
}

function medians(rs: readonly TracedRequest[]): Partial<Record<Component, number>> {
  const out: Partial<Record<Component, number>> = {};
  for (const c of COMPONENTS) {
    const xs = rs.map((r) => r.parts[c]).filter((x): x is number => x !== undefined);
    if (xs.length > 0) out[c] = Number(median(xs).toFixed(3));
  }
  return out;
}

export function summarise(
  models: readonly LoadModel[],
  requests: readonly TracedRequest[],
  totalQps: number,
  durationS: number,
): AttributionResult {
  return {
    totalQps,
    durationS,
    models: models.map((m, i) => {
      const mine = requests.filter((r) => r.model === i);
      const causes: Partial<Record<Cause, number>> = {};
      for (const c of attributeLate(mine, m.qosMs)) causes[c] = (causes[c] ?? 0) + 1;
      return {
        name: m.name,
        qosMs: m.qosMs,
        sent: mine.length,
        late: mine.filter((r) => isLate(r, m.qosMs)).length,
        causes,
        onTimeMedians: medians(mine.filter((r) => !isLate(r, m.qosMs))),
        lateMedians: medians(mine.filter((r) => isLate(r, m.qosMs))),
      };
    }),
  };
}

/** The server's account in an answer's JSON header: server_ms and the dispatcher's timeline, when present. */
export function serverAccount(answer: KeptAnswer): { serverMs: number | null; account: Accounting | null } {
  const head = answer.headers['inference-header-content-length'];
  if (answer.body === null || answer.status !== 200) return { serverMs: null, account: null };
  try {
    const n = head === undefined ? answer.body.byteLength : Number(head);
    const parsed = JSON.parse(answer.body.subarray(0, n).toString('utf8')) as { parameters?: Record<string, unknown> };
    const params = parsed.parameters ?? {};
    const timeline = parseTimeline(params['veltair_timeline']);
    return {
      serverMs: typeof params['server_ms'] === 'number' ? params['server_ms'] : null,
      account: timeline ? accountTimeline(timeline) : null,
    };
  } catch {
    return { serverMs: null, account: null };
  }
}

/** GC pauses of this process, as the performance timeline reports them. */
function watchGc(): { pausesIn: (fromMs: number, toMs: number) => number; stop: () => void } {
  const pauses: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => pauses.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return {
    pausesIn: (from, to) =>
      pauses.reduce((s, p) => s + Math.max(0, Math.min(to, p.startTime + p.duration) - Math.max(from, p.startTime)), 0),
    stop: () => observer.disconnect(),
  };
}

interface Exchange {
  readonly model: number;
  readonly status: number;
  readonly sentAt: number;
  readonly endAt: number;
  readonly lagMs: number;
  readonly serverMs: number | null;
  readonly account: Accounting | null;
}

/** One traced open-loop run at `totalQps` for `durationS` (every answer's JSON header is read: slightly more client CPU). */
export async function runTraced(
  base: URL,
  models: readonly LoadModel[],
  totalQps: number,
  durationS: number,
  seed: number,
): Promise<AttributionResult> {
  const plan = arrivals(models, totalQps, durationS, seed);
  const requests = models.map((m) =>
    encodeRequest(new URL(`/v2/models/${encodeURIComponent(m.name)}/infer`, m.base ?? base), m.headers, m.body),
  );
  const client = new RawClient();
  const gc = watchGc();
  const exchanges: Exchange[] = [];
  const pending: Promise<void>[] = [];
  const start = performance.now();
  try {
    for (const a of plan) {
      const wait = a.t - (performance.now() - start);
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const sentAt = performance.now();
      const m = models[a.model]!;
      pending.push(
        client.sendKeepingBody(requests[a.model]!, m.answerBytes !== undefined ? { binaryBytes: m.answerBytes } : {}).then((answer) => {
          const endAt = performance.now();
          exchanges.push({
            model: a.model,
            status: answer.status,
            sentAt,
            endAt,
            lagMs: Math.max(0, sentAt - start - a.t),
            ...serverAccount(answer),
          });
        }),
      );
    }
    await Promise.all(pending);
  } finally {
    client.close();
  }
  // GC entries reach the observer asynchronously: read them once every answer is in.
  await new Promise((r) => setTimeout(r, 10));
  gc.stop();
  const traced = exchanges.map((e): TracedRequest => ({
    model: e.model,
    status: e.status,
    clientMs: e.endAt - e.sentAt,
    parts: requestParts(e.endAt - e.sentAt, e.lagMs, gc.pausesIn(e.sentAt, e.endAt), e.serverMs, e.account),
  }));
  return summarise(models, traced, totalQps, durationS);
}
