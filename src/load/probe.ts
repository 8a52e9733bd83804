/**
 * One find-max probe: the open-loop Poisson load of runLoad at one total rate, judged as it runs by
 * the early-stopping rule (early-stopping.ts) per model. It stops sending as soon as every model
 * passes (after the probe's minimum time) or one fails decisively, or at its time bound; then it
 * waits for every answer and judges the requests sent. Its noise (noise.ts) is on record. The
 * transport is a Sender: HTTP (httpSender) or, in the bench, a backend called in this process.
 */
import { quantile } from '../stats.js';
import { judgeModel, judgeProbe, P99_AT_99, requestsNeeded, type Judgement, type Verdict } from './early-stopping.js';
import { arrivals, type LoadModel, type LoadResult, type ModelLoadResult } from './generator.js';
import { noiseBetween, takeNoiseSnapshot, type NoiseRecord } from './noise.js';
import { encodeRequest, RawClient } from './raw-client.js';

export interface ProbeOptions {
  /** Seconds a probe runs at least before it may pass (a fail may stop it sooner). */
  readonly minDurationS: number;
  /** The time bound: a probe still undecided then ends undecided. */
  readonly maxDurationS: number;
  readonly seed: number;
  readonly judgement?: Judgement;
  /** The arm's server processes, whose CPU is not outside noise. */
  readonly armPids?: readonly number[];
}

export interface ModelProbe extends ModelLoadResult {
  /** Requests not answered 200 within QoS (late, 503, error). */
  readonly late: number;
  /** Requests that many late ones need to pass. */
  readonly needed: number;
  readonly verdict: Verdict;
}

export interface ProbeResult extends LoadResult {
  readonly models: readonly ModelProbe[];
  readonly verdict: Verdict;
  /** Why sending stopped: the verdict was reached, or the time bound. */
  readonly stoppedBy: 'verdict' | 'time';
  readonly noise: NoiseRecord;
  /** Set on a probe run again because outside work was noisy (find-max.ts). */
  readonly rerunOfNoisy?: boolean;
}

/** Send one request of model `i` and resolve with its status: 200, 503, or 0 for an error or a malformed answer. */
export type Sender = (i: number) => Promise<number>;

/**
 * The HTTP transport: each model's request to its server (`base` unless the model names one), encoded once
 * and sent over the raw keep-alive client; the answer checked by header and size (and decoded with `verify`).
 */
export function httpSender(base: URL, models: readonly LoadModel[], verify = false, client = new RawClient()): Sender {
  const requests = models.map((m) =>
    encodeRequest(new URL(`/v2/models/${encodeURIComponent(m.name)}/infer`, m.base ?? base), m.headers, m.body),
  );
  const checks = models.map((m) => ({ ...(m.answerBytes !== undefined ? { binaryBytes: m.answerBytes } : {}), verify }));
  return (i) => client.send(requests[i]!, checks[i]!);
}

interface Tally {
  sent: number;
  late: number;
  readonly inFlight: Set<number>;
  readonly okMs: number[];
  rejected: number;
  errors: number;
}

/** Run one probe at `totalQps` through `send` (models give the rates' weights and each QoS). */
export async function runProbe(send: Sender, models: readonly LoadModel[], totalQps: number, o: ProbeOptions): Promise<ProbeResult> {
  const j = o.judgement ?? P99_AT_99;
  const plan = arrivals(models, totalQps, o.maxDurationS, o.seed);
  const tallies: Tally[] = models.map(() => ({ sent: 0, late: 0, inFlight: new Set(), okMs: [], rejected: 0, errors: 0 }));
  const verdicts = (now: number): Verdict[] =>
    tallies.map((t, i) => {
      let overdue = 0;
      for (const at of t.inFlight) if (now - at > models[i]!.qosMs) overdue++;
      return judgeModel(t.sent, t.late + overdue, t.inFlight.size - overdue, j);
    });
  const pending: Promise<void>[] = [];
  const before = takeNoiseSnapshot(o.armPids ?? []);
  const start = performance.now();
  let stoppedBy: ProbeResult['stoppedBy'] = 'time';
  for (const a of plan) {
    const wait = a.t - (performance.now() - start);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const now = performance.now();
    const v = judgeProbe(verdicts(now));
    if (v === 'fail' || (v === 'pass' && now - start >= o.minDurationS * 1000)) {
      stoppedBy = 'verdict';
      break;
    }
    const t = tallies[a.model]!,
      m = models[a.model]!;
    // A per-request token: two requests can be sent in the same millisecond.
    const sentAt = now + t.sent * 1e-9;
    t.sent++;
    t.inFlight.add(sentAt);
    pending.push(
      send(a.model).then((status) => {
        const ms = performance.now() - sentAt;
        t.inFlight.delete(sentAt);
        if (status === 200) t.okMs.push(ms);
        else if (status === 503) t.rejected++;
        else t.errors++;
        if (status !== 200 || ms > m.qosMs) t.late++;
      }),
    );
  }
  const sendingS = Math.max(1e-3, Math.min(performance.now() - start, o.maxDurationS * 1000) / 1000);
  await Promise.all(pending);
  const noise = noiseBetween(
    before,
    takeNoiseSnapshot(o.armPids ?? []),
    tallies.reduce((s, t) => s + t.sent, 0),
  );
  const sum = models.reduce((s, m) => s + m.weight, 0);
  const results = models.map((m, i): ModelProbe => {
    const t = tallies[i]!;
    const okMs = [...t.okMs].sort((x, y) => x - y);
    const q = (p: number) => (okMs.length > 0 ? Number(quantile(okMs, p).toFixed(3)) : null);
    return {
      name: m.name,
      targetQps: (totalQps * m.weight) / sum,
      sent: t.sent,
      ok: okMs.length,
      rejected: t.rejected,
      errors: t.errors,
      achievedQps: okMs.length / sendingS,
      p50Ms: q(0.5),
      p90Ms: q(0.9),
      p99Ms: q(0.99),
      meanMs: okMs.length > 0 ? Number((okMs.reduce((x, y) => x + y, 0) / okMs.length).toFixed(3)) : null,
      qosMs: m.qosMs,
      satisfaction: t.sent > 0 ? (t.sent - t.late) / t.sent : 1,
      late: t.late,
      needed: requestsNeeded(t.late, j),
      verdict: judgeModel(t.sent, t.late, 0, j),
    };
  });
  return {
    totalQps,
    durationS: Number(sendingS.toFixed(3)),
    models: results,
    satisfaction: Math.min(...results.map((r) => r.satisfaction)),
    verdict: judgeProbe(results.map((r) => r.verdict)),
    stoppedBy,
    noise,
  };
}
