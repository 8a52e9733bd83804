/**
 * Models and servers for the serve tests: small ONNX models compiled once into bundles (one conv
 * + dense model, one with an embedding lookup whose index a request can put out of range, one conv
 * chain slow enough to be in flight when a signal arrives), a server started in this process on
 * any free port, and ONNX Runtime's answer for any input.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { encodeModel, type ModelSpec } from '../src/onnx/encode.js';
import type { Tensor } from '../src/onnx/model.js';
import { parsePolicy } from '../src/schedule/policies.js';
import type { ModelConfig } from '../src/serve/config.js';
import { createMetrics, type ServerMetrics } from '../src/serve/metrics.js';
import { setupDispatcher } from '../src/serve/setup.js';
import { startServer, type RunningServer } from '../src/serve/start.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { compileFixture, tinyModelSpec } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';

const weight = (dims: number[], seed: number, scale = 0.2): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    -scale,
    scale,
  ),
});

/** ids int64 [1, 3] → Gather from a [16, 8] table → Flatten → Gemm (5 outputs): an id ≥ 16 is out of range. */
export function embeddingSpec(): ModelSpec {
  return {
    inputs: [{ name: 'ids', dtype: 'int64', shape: [1, 3] }],
    outputs: [{ name: 'scores', dtype: 'float32', shape: [1, 5] }],
    initializers: [
      ['table', weight([16, 8], 3)],
      ['w', weight([5, 24], 4)],
      ['b', weight([5], 5)],
    ],
    nodes: [
      { op: 'Gather', inputs: ['table', 'ids'], outputs: ['e'], attrs: { axis: 0 } },
      { op: 'Flatten', inputs: ['e'], outputs: ['f'], attrs: { axis: 1 } },
      { op: 'Gemm', inputs: ['f', 'w', 'b'], outputs: ['scores'], attrs: { transB: 1 } },
    ],
  };
}

/** Six 3×3 convs of 48 channels on 40×40: tens of ms per request, long enough to be caught in flight. */
export function slowSpec(): ModelSpec {
  const nodes: ModelSpec['nodes'][number][] = [];
  const inits: [string, Tensor][] = [];
  let x = 'x';
  for (let i = 0; i < 6; i++) {
    inits.push([`w${i}`, weight([48, i === 0 ? 3 : 48, 3, 3], 10 + i, 0.1)], [`b${i}`, weight([48], 30 + i, 0.1)]);
    nodes.push({ op: 'Conv', inputs: [x, `w${i}`, `b${i}`], outputs: [`c${i}`], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } });
    nodes.push({ op: 'Relu', inputs: [`c${i}`], outputs: [`r${i}`] });
    x = `r${i}`;
  }
  nodes.push({ op: 'GlobalAveragePool', inputs: [x], outputs: ['y'] });
  return {
    inputs: [{ name: 'x', dtype: 'float32', shape: [1, 3, 40, 40] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [1, 48, 1, 1] }],
    initializers: inits,
    nodes,
  };
}

export const SPECS = { tiny: tinyModelSpec, embed: embeddingSpec, slow: slowSpec } as const;
export type FixtureModel = keyof typeof SPECS;

/** Compile each model into `root`/<name>.bundle (beside <name>.onnx); returns the bundle paths. */
export async function compileModels(root: string, names: readonly FixtureModel[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const model = join(root, `${name}.onnx`);
    writeFileSync(model, encodeModel(SPECS[name]()));
    const bundle = join(root, `${name}.bundle`);
    await compileFixture(model, {
      output: bundle,
      trials: 1,
      levels: [0],
      maxVersions: 1,
      threads: [1, 2],
      profileThreads: [],
      db: join(root, 'db'),
    });
    out[name] = bundle;
  }
  return out;
}

export interface InProcessServer {
  readonly server: RunningServer;
  readonly metrics: ServerMetrics;
  readonly url: string;
}

/** A veltair server in this process on a free loopback port. */
export async function startInProcess(
  models: readonly ModelConfig[],
  o: { bodyLimit?: number; policy?: string } = {},
): Promise<InProcessServer> {
  const metrics = createMetrics();
  const cpus = availableCores();
  const setup = await setupDispatcher({ models, policy: parsePolicy(o.policy ?? 'veltair'), cpus, metrics, qosMultiple: 50 });
  const server = await startServer({ backend: setup.dispatcher, metrics, host: '127.0.0.1', port: 0, bodyLimit: o.bodyLimit ?? 1 << 20 });
  return { server, metrics, url: server.url };
}

export const model = (name: string, bundle: string, extra: Partial<ModelConfig> = {}): ModelConfig => ({
  name,
  bundle,
  priority: 1,
  maxQueue: 64,
  ...extra,
});

/** ONNX Runtime's outputs of `onnxFile` for float32/int64 feeds. */
export async function ortRun(
  onnxFile: string,
  feeds: Record<string, { dtype: 'float32' | 'int64'; shape: number[]; data: Float32Array | BigInt64Array }>,
): Promise<Record<string, Float32Array>> {
  const s = await ort.InferenceSession.create(onnxFile);
  try {
    const out = await s.run(Object.fromEntries(Object.entries(feeds).map(([k, f]) => [k, new ort.Tensor(f.dtype, f.data, f.shape)])));
    return Object.fromEntries(Object.entries(out).map(([k, t]) => [k, t.data as Float32Array]));
  } finally {
    await s.release();
  }
}

export async function post(url: string, body: unknown, headers: Record<string, string> = { 'Content-Type': 'application/json' }) {
  const payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  const r = await fetch(url, { method: 'POST', headers, body: payload as BodyInit });
  const bytes = new Uint8Array(await r.arrayBuffer());
  return {
    status: r.status,
    headers: r.headers,
    bytes,
    json: () => JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>,
  };
}

/** One HTTP/1.1 exchange on an open socket: write the request, read one response (status, headers, body length). */
function exchange(socket: Socket, request: Buffer): Promise<{ status: number; headers: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = got.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      if (got.length < end + 4 + Number(headers['content-length'] ?? 0)) return;
      socket.off('data', onData);
      socket.off('error', reject);
      resolve({ status: Number(statusLine!.split(' ')[1]), headers });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(request);
  });
}

/**
 * POST the same body n times so that every request reaches the server at once. Each of n sockets
 * first gets an answer to a health check, so the server has accepted and is reading all of them;
 * then every POST is written in one synchronous loop. (fetch() opens connections one by one, and
 * even sockets connected up front may still wait in the listen backlog: a fast model answers each
 * request before the next arrives on a loaded machine.)
 */
export async function postTogether(url: string, body: Uint8Array, headers: Record<string, string>, n: number) {
  const { hostname, port, pathname } = new URL(url);
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const s = connect(Number(port), hostname, () => resolve(s));
          s.once('error', reject);
        }),
    ),
  );
  const health = Buffer.from(`GET /v2/health/live HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
  await Promise.all(sockets.map((s) => exchange(s, health)));
  const head = [
    `POST ${pathname} HTTP/1.1`,
    `Host: ${hostname}`,
    `Content-Length: ${body.byteLength}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ].join('\r\n');
  const post = Buffer.concat([Buffer.from(`${head}\r\n\r\n`), body]);
  const answers = sockets.map((s) => exchange(s, post)); // every write happens here, before any answer is read
  try {
    return await Promise.all(answers);
  } finally {
    for (const s of sockets) s.destroy();
  }
}

export function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i]! - want[i]!) <= 1e-4 + 1e-3 * Math.abs(want[i]!), `${what}[${i}]: ${got[i]} vs ${want[i]}`);
  }
}
