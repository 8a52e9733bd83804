/**
 * An open-loop Poisson load generator for a v2 server, in the spirit of MLPerf LoadGen's server
 * scenario: each model gets requests at exponential inter-arrival times for its target rate
 * (seeded), sent when due whatever the server's state — a slow server builds a queue, it does not
 * slow the load. Reports per model: achieved QPS, latency percentiles of the answered requests,
 * and QoS satisfaction (answered within the model's QoS, over every request sent: a 503 or an
 * error counts as a miss). `findMaxQps` binary-searches the highest total rate at which every
 * model keeps ≥ 99% satisfaction, each probe long enough for 100 requests per model (within a
 * limit). Loopback only: it never loads another machine.
 */
import { mulberry32, seededFloats } from '../random.js';
import { quantile } from '../stats.js';
import { userError } from '../errors.js';
import { post } from './post.js';

export interface LoadModel {
  readonly name: string;
  /** Share of the total rate (weights are normalised). */
  readonly weight: number;
  readonly qosMs: number;
  /** The request body sent for this model, and its headers (JSON, or the binary tensor extension). */
  readonly body: string | Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
  /** The server answering this model, when it is not the run's server (e.g. one pinned server per model). */
  readonly base?: URL;
}

export interface ModelLoadResult {
  readonly name: string;
  readonly targetQps: number;
  readonly sent: number;
  readonly ok: number;
  readonly rejected: number;
  readonly errors: number;
  readonly achievedQps: number;
  readonly p50Ms: number | null;
  readonly p90Ms: number | null;
  readonly p99Ms: number | null;
  readonly meanMs: number | null;
  readonly qosMs: number;
  /** Answered within QoS / sent. */
  readonly satisfaction: number;
}

export interface LoadResult {
  readonly totalQps: number;
  readonly durationS: number;
  readonly models: readonly ModelLoadResult[];
  /** The worst model's satisfaction. */
  readonly satisfaction: number;
}

/** What a server's model metadata says (the parts the load generator uses). */
export interface Metadata {
  inputs: { name: string; datatype: string; shape: number[] }[];
  parameters?: { qos_ms?: number };
}

const ELEMENT_BYTES: Readonly<Record<string, number>> = { FP32: 4, FP64: 8, INT8: 1, INT16: 2, INT32: 4, INT64: 8, UINT8: 1, UINT16: 2, BOOL: 1 };

/**
 * A request of seeded values for every input the server declares: floats uniform in [-1, 1),
 * integers and booleans zero (valid indices and masks). Binary tensors (the v2 extension) by
 * default, as production clients send large tensors, and then the outputs are asked for as binary
 * too (`binary_data_output`), as Triton's clients and perf_analyzer do: a JSON answer of a large
 * output (BERT's 1.5 MB hidden states, tiny_yolov2's 21,125 floats) costs the server's event loop
 * milliseconds per answer that no production client would make it pay. JSON both ways with `json`.
 */
export function requestFor(meta: Metadata, seed: number, json: boolean): { body: string | Uint8Array; headers: Record<string, string> } {
  const values = meta.inputs.map((t, i) => {
    const n = t.shape.reduce((a, b) => a * b, 1);
    return t.datatype === 'FP32' || t.datatype === 'FP64' ? Float64Array.from(seededFloats(n, seed + i, -1, 1)) : new Float64Array(n);
  });
  if (json) {
    const inputs = meta.inputs.map((t, i) => ({
      name: t.name, shape: t.shape, datatype: t.datatype,
      data: t.datatype === 'BOOL' ? Array.from(values[i]!, () => false) : Array.from(values[i]!, (v) => Number(v.toFixed(6))),
    }));
    return { body: JSON.stringify({ inputs }), headers: { 'Content-Type': 'application/json' } };
  }
  const buffers = meta.inputs.map((t, i) => {
    const v = values[i]!;
    switch (t.datatype) {
      case 'FP32': return new Uint8Array(Float32Array.from(v).buffer);
      case 'FP64': return new Uint8Array(v.buffer);
      default: {
        const bytes = ELEMENT_BYTES[t.datatype];
        if (bytes === undefined) {
          throw userError('BAD_ARGUMENT', `input ${JSON.stringify(t.name)} has datatype ${t.datatype}, which veltair load cannot fill`, 'use --json-tensors');
        }
        return new Uint8Array(v.length * bytes);
      }
    }
  });
  const head = Buffer.from(JSON.stringify({
    inputs: meta.inputs.map((t, i) => ({ name: t.name, shape: t.shape, datatype: t.datatype, parameters: { binary_data_size: buffers[i]!.byteLength } })),
    parameters: { binary_data_output: true },
  }));
  return {
    body: Buffer.concat([head, ...buffers]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.byteLength) },
  };
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/;

/** The server URL, refused unless it is on this machine's loopback. */
export function loopbackUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw userError('BAD_ARGUMENT', `${JSON.stringify(text.slice(0, 80))} is not a URL`, 'e.g. http://127.0.0.1:8000');
  }
  if (url.protocol !== 'http:' || !LOOPBACK.test(url.hostname)) {
    throw userError('BAD_ARGUMENT', `veltair load sends only to this machine's loopback, not ${JSON.stringify(url.host)}`,
      'run it beside the server: http://127.0.0.1:PORT');
  }
  return url;
}

interface Sample { readonly model: number; readonly ms: number; readonly status: number }

async function sendOne(url: URL, m: LoadModel): Promise<number> {
  try {
    return (await post(url, m.headers, m.body)).status;
  } catch {
    return 0;
  }
}

/** Arrival times (ms from the start) of every request of one run: Poisson per model, merged. */
export function arrivals(models: readonly LoadModel[], totalQps: number, durationS: number, seed: number): { t: number; model: number }[] {
  const sum = models.reduce((s, m) => s + m.weight, 0);
  const out: { t: number; model: number }[] = [];
  models.forEach((m, i) => {
    const rate = (totalQps * m.weight) / sum / 1000;
    if (rate <= 0) return;
    const next = mulberry32(seed * 7919 + i);
    for (let t = -Math.log(1 - next()) / rate; t < durationS * 1000; t += -Math.log(1 - next()) / rate) out.push({ t, model: i });
  });
  return out.sort((a, b) => a.t - b.t || a.model - b.model);
}

export async function runLoad(base: URL, models: readonly LoadModel[], totalQps: number, durationS: number, seed: number): Promise<LoadResult> {
  const plan = arrivals(models, totalQps, durationS, seed);
  const urls = models.map((m) => new URL(`/v2/models/${encodeURIComponent(m.name)}/infer`, m.base ?? base));
  const samples: Sample[] = [];
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (const a of plan) {
    const wait = a.t - (performance.now() - start);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const sentAt = performance.now();
    pending.push(sendOne(urls[a.model]!, models[a.model]!).then((status) => {
      samples.push({ model: a.model, ms: performance.now() - sentAt, status });
    }));
  }
  await Promise.all(pending);
  const sum = models.reduce((s, m) => s + m.weight, 0);
  const results = models.map((m, i): ModelLoadResult => {
    const mine = samples.filter((s) => s.model === i);
    const okMs = mine.filter((s) => s.status === 200).map((s) => s.ms).sort((a, b) => a - b);
    const within = okMs.filter((ms) => ms <= m.qosMs).length;
    const q = (p: number) => (okMs.length > 0 ? Number(quantile(okMs, p).toFixed(3)) : null);
    return {
      name: m.name, targetQps: (totalQps * m.weight) / sum, sent: mine.length, ok: okMs.length,
      rejected: mine.filter((s) => s.status === 503).length, errors: mine.filter((s) => s.status !== 200 && s.status !== 503).length,
      achievedQps: okMs.length / durationS, p50Ms: q(0.5), p90Ms: q(0.9), p99Ms: q(0.99),
      meanMs: okMs.length > 0 ? Number((okMs.reduce((a, b) => a + b, 0) / okMs.length).toFixed(3)) : null,
      qosMs: m.qosMs, satisfaction: mine.length > 0 ? within / mine.length : 1,
    };
  });
  return { totalQps, durationS, models: results, satisfaction: Math.min(...results.map((r) => r.satisfaction)) };
}

/**
 * A probe of the search runs until every model has sent this many requests (at least durationS,
 * at most MAX_PROBE_STRETCH × durationS). Why: 99% within QoS over 20 requests means none may
 * miss, so at low rates one rare stall decided the verdict; live on 2 cores, one arm's max QPS
 * read 6.3 and 35.9 in two rounds of the same run. 100 requests tolerate one outlier.
 */
export const MIN_PROBE_REQUESTS = 100;
const MAX_PROBE_STRETCH = 3;

/** How long a probe at `totalQps` runs (seconds): durationS, stretched until every model has sent `minRequests` requests. */
export function probeDurationS(models: readonly LoadModel[], totalQps: number, durationS: number, minRequests = MIN_PROBE_REQUESTS): number {
  const sum = models.reduce((s, m) => s + m.weight, 0);
  const slowest = Math.min(...models.map((m) => (totalQps * m.weight) / sum));
  if (!(slowest > 0)) return durationS;
  return Math.min(durationS * MAX_PROBE_STRETCH, Math.max(durationS, minRequests / slowest));
}

export interface FindMaxOptions {
  /** Seconds per probe at least (stretched for low rates: probeDurationS). */
  readonly durationS: number;
  /** Requests per model a probe runs for at least (default MIN_PROBE_REQUESTS; 1: plain durationS). */
  readonly minRequests?: number;
  readonly seed: number;
  /** Satisfaction every model must keep (default 0.99). */
  readonly target?: number;
  /** Stop when hi/lo is within this factor (default 1.05). */
  readonly tolerance?: number;
  readonly startQps: number;
  readonly maxRuns?: number;
  /**
   * A rate that fails narrowly (every model ≥ 1 − 2 × (1 − target) satisfied) is run once more and
   * judged on both runs' requests together (default true). Why: with ~100 requests per model, 99%
   * lets one request miss, so a single stall of the machine decided a search (one arm read 1.5 and
   * 44.6 QPS in two rounds of one run); a rate that truly cannot be served fails the pooled runs too.
   * Confirmation runs are extra: they do not count against maxRuns.
   */
  readonly confirmNarrowFailures?: boolean;
  readonly onRun?: (r: LoadResult) => void;
}

/** The worst model's satisfaction over the requests of every run given (pooled, not averaged). */
export function pooledSatisfaction(runs: readonly LoadResult[]): number {
  const names = runs[0]?.models.map((m) => m.name) ?? [];
  let worst = 1;
  for (const name of names) {
    let sent = 0, within = 0;
    for (const r of runs) {
      const m = r.models.find((x) => x.name === name);
      if (!m) continue;
      sent += m.sent;
      within += Math.round(m.satisfaction * m.sent);
    }
    if (sent > 0) worst = Math.min(worst, within / sent);
  }
  return worst;
}

/** Whether a failed run is close enough to the target that a second run could pass them pooled. */
export const narrowFailure = (r: LoadResult, target: number): boolean => r.satisfaction < target && r.satisfaction >= 1 - 2 * (1 - target);

/** The highest total QPS with every model ≥ target satisfaction (0 if even startQps/64 fails), and every run. */
export function findMaxQps(base: URL, models: readonly LoadModel[], o: FindMaxOptions): Promise<{ maxQps: number; runs: LoadResult[] }> {
  return searchMaxQps((qps, seed) => runLoad(base, models, qps, probeDurationS(models, qps, o.durationS, o.minRequests), seed), o);
}

/** findMaxQps's search over any way of running one load at a rate (the tests give it a fake server). */
export async function searchMaxQps(load: (qps: number, seed: number) => Promise<LoadResult>,
  o: Omit<FindMaxOptions, 'durationS' | 'minRequests'>): Promise<{ maxQps: number; runs: LoadResult[] }> {
  const target = o.target ?? 0.99, tolerance = o.tolerance ?? 1.05, maxRuns = o.maxRuns ?? 16;
  const runs: LoadResult[] = [];
  let probes = 0;
  const run = async (qps: number) => {
    const r = await load(qps, o.seed + runs.length);
    runs.push(r);
    o.onRun?.(r);
    return r;
  };
  const passes = async (qps: number) => {
    probes++;
    const r = await run(qps);
    if (r.satisfaction >= target) return true;
    if (o.confirmNarrowFailures === false || !narrowFailure(r, target)) return false;
    return pooledSatisfaction([r, await run(qps)]) >= target;
  };
  let lo = 0, hi = o.startQps;
  // Bracket: double until a rate fails, halve until one passes.
  if (await passes(hi)) {
    lo = hi;
    while (probes < maxRuns) { hi *= 2; if (await passes(hi)) lo = hi; else break; }
  } else {
    while (probes < maxRuns && hi > o.startQps / 64) { hi /= 2; if (await passes(hi)) { lo = hi; hi *= 2; break; } }
  }
  while (lo > 0 && hi / lo > tolerance && probes < maxRuns) {
    const mid = Math.sqrt(lo * hi);
    if (await passes(mid)) lo = mid; else hi = mid;
  }
  return { maxQps: lo, runs };
}
