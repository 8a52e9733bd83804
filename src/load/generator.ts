/**
 * An open-loop Poisson load generator for a v2 server, in the spirit of MLPerf LoadGen's server
 * scenario: each model gets requests at exponential inter-arrival times for its target rate
 * (seeded), sent when due whatever the server's state — a slow server builds a queue, it does not
 * slow the load. Reports per model: achieved QPS, latency percentiles of the answered requests,
 * and QoS satisfaction (answered within the model's QoS, over every request sent: a 503, an
 * error or a malformed answer counts as a miss). find-max.ts searches the highest rate, probe.ts
 * judges each rate. Loopback only: it never loads another machine.
 */
import { mulberry32, seededFloats } from '../random.js';
import { quantile } from '../stats.js';
import { userError } from '../errors.js';
import { encodeRequest, RawClient, type EncodedRequest } from './raw-client.js';

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
  /** Bytes of binary output data a well-formed answer carries after its JSON header (unknown: not checked). */
  readonly answerBytes?: number;
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
  outputs?: { name: string; datatype: string; shape: number[] }[];
  parameters?: { qos_ms?: number };
}

const ELEMENT_BYTES: Readonly<Record<string, number>> = {
  FP32: 4,
  FP64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  UINT8: 1,
  UINT16: 2,
  BOOL: 1,
};

/**
 * A request of seeded values for every input the server declares: floats uniform in [-1, 1),
 * integers and booleans zero (valid indices and masks). Binary tensors (the v2 extension) by
 * default, as production clients send large tensors, and then the outputs are asked for as binary
 * too (`binary_data_output`), as Triton's clients and perf_analyzer do: a JSON answer of a large
 * output (BERT's 1.5 MB hidden states, tiny_yolov2's 21,125 floats) costs the server's event loop
 * milliseconds per answer that no production client would make it pay. JSON both ways with `json`.
 */
export interface Request {
  body: string | Uint8Array;
  headers: Record<string, string>;
  answerBytes?: number;
}

export function requestFor(meta: Metadata, seed: number, json: boolean): Request {
  const values = meta.inputs.map((t, i) => {
    const n = t.shape.reduce((a, b) => a * b, 1);
    return t.datatype === 'FP32' || t.datatype === 'FP64' ? Float64Array.from(seededFloats(n, seed + i, -1, 1)) : new Float64Array(n);
  });
  if (json) {
    const inputs = meta.inputs.map((t, i) => ({
      name: t.name,
      shape: t.shape,
      datatype: t.datatype,
      data: t.datatype === 'BOOL' ? Array.from(values[i]!, () => false) : Array.from(values[i]!, (v) => Number(v.toFixed(6))),
    }));
    return { body: JSON.stringify({ inputs }), headers: { 'Content-Type': 'application/json' } };
  }
  const buffers = meta.inputs.map((t, i) => {
    const v = values[i]!;
    switch (t.datatype) {
      case 'FP32':
        return new Uint8Array(Float32Array.from(v).buffer);
      case 'FP64':
        return new Uint8Array(v.buffer);
      default: {
        const bytes = ELEMENT_BYTES[t.datatype];
        if (bytes === undefined) {
          throw userError(
            'BAD_ARGUMENT',
            `input ${JSON.stringify(t.name)} has datatype ${t.datatype}, which veltair load cannot fill`,
            'use --json-tensors',
          );
        }
        return new Uint8Array(v.length * bytes);
      }
    }
  });
  const head = Buffer.from(
    JSON.stringify({
      inputs: meta.inputs.map((t, i) => ({
        name: t.name,
        shape: t.shape,
        datatype: t.datatype,
        parameters: { binary_data_size: buffers[i]!.byteLength },
      })),
      parameters: { binary_data_output: true },
    }),
  );
  const answerBytes = binaryAnswerBytes(meta);
  return {
    body: Buffer.concat([head, ...buffers]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.byteLength) },
    ...(answerBytes !== undefined ? { answerBytes } : {}),
  };
}

/** The binary output bytes of an answer to a binary request, when every output's shape and datatype is fixed. */
export function binaryAnswerBytes(meta: Metadata): number | undefined {
  if (!meta.outputs || meta.outputs.length === 0) return undefined;
  let total = 0;
  for (const t of meta.outputs) {
    const bytes = ELEMENT_BYTES[t.datatype];
    if (bytes === undefined || t.shape.some((d) => !(d >= 0))) return undefined;
    total += bytes * t.shape.reduce((a, b) => a * b, 1);
  }
  return total;
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
    throw userError(
      'BAD_ARGUMENT',
      `veltair load sends only to this machine's loopback, not ${JSON.stringify(url.host)}`,
      'run it beside the server: http://127.0.0.1:PORT',
    );
  }
  return url;
}

interface Sample {
  readonly model: number;
  readonly ms: number;
  readonly status: number;
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

export async function runLoad(
  base: URL,
  models: readonly LoadModel[],
  totalQps: number,
  durationS: number,
  seed: number,
): Promise<LoadResult> {
  const plan = arrivals(models, totalQps, durationS, seed);
  const requests: EncodedRequest[] = models.map((m) =>
    encodeRequest(new URL(`/v2/models/${encodeURIComponent(m.name)}/infer`, m.base ?? base), m.headers, m.body),
  );
  const client = new RawClient();
  const samples: Sample[] = [];
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (const a of plan) {
    const wait = a.t - (performance.now() - start);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const sentAt = performance.now();
    pending.push(
      client
        .send(requests[a.model]!, models[a.model]!.answerBytes !== undefined ? { binaryBytes: models[a.model]!.answerBytes } : {})
        .then((status) => {
          samples.push({ model: a.model, ms: performance.now() - sentAt, status });
        }),
    );
  }
  await Promise.all(pending);
  client.close();
  const sum = models.reduce((s, m) => s + m.weight, 0);
  const results = models.map((m, i): ModelLoadResult => {
    const mine = samples.filter((s) => s.model === i);
    const okMs = mine
      .filter((s) => s.status === 200)
      .map((s) => s.ms)
      .sort((a, b) => a - b);
    const within = okMs.filter((ms) => ms <= m.qosMs).length;
    const q = (p: number) => (okMs.length > 0 ? Number(quantile(okMs, p).toFixed(3)) : null);
    return {
      name: m.name,
      targetQps: (totalQps * m.weight) / sum,
      sent: mine.length,
      ok: okMs.length,
      rejected: mine.filter((s) => s.status === 503).length,
      errors: mine.filter((s) => s.status !== 200 && s.status !== 503).length,
      achievedQps: okMs.length / durationS,
      p50Ms: q(0.5),
      p90Ms: q(0.9),
      p99Ms: q(0.99),
      meanMs: okMs.length > 0 ? Number((okMs.reduce((a, b) => a + b, 0) / okMs.length).toFixed(3)) : null,
      qosMs: m.qosMs,
      satisfaction: mine.length > 0 ? within / mine.length : 1,
    };
  });
  return { totalQps, durationS, models: results, satisfaction: Math.min(...results.map((r) => r.satisfaction)) };
}
