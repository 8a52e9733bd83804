/**
 * Errors every client receives, and slow clients bounded (src/serve/connections.ts): a 413 reaches
 * a client that writes its whole body before reading (Content-Length or chunked); past the discard
 * bound the connection is closed and counted; clients dribbling headers, or silent, get 408 and
 * are closed while valid requests are answered; a body that stops arriving gets 408, one that keeps
 * arriving slowly is served; connections past the cap are answered 503 with Retry-After, closed
 * and counted, a client that writes its whole request first included.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parsePolicy } from '../src/schedule/policies.js';
import type { Backend } from '../src/serve/backend.js';
import type { Dispatcher } from '../src/serve/dispatcher.js';
import { createMetrics, type ServerMetrics } from '../src/serve/metrics.js';
import { setupDispatcher } from '../src/serve/setup.js';
import { startServer, type RunningServer } from '../src/serve/start.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { seeded } from './runtime-harness.js';
import { compileModels, model, post } from './serve-fixture.js';
import { metricValue, postBytes, rawRequest } from './serve-raw-client.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-serve-slow-'));
let dispatcher: Dispatcher;
let metrics: ServerMetrics;
let backend: Backend;
const servers: RunningServer[] = [];

before(
  async () => {
    const bundles = await compileModels(root, ['tiny']);
    metrics = createMetrics();
    dispatcher = (
      await setupDispatcher({
        models: [model('tiny', bundles['tiny']!)],
        policy: parsePolicy('veltair'),
        cpus: availableCores(),
        metrics,
        qosMultiple: 50,
      })
    ).dispatcher;
    backend = {
      name: dispatcher.name,
      models: dispatcher.models,
      infer: (m, f) => dispatcher.infer(m, f),
      inFlight: () => dispatcher.inFlight(),
      close: async () => undefined,
    };
  },
  { timeout: 600_000 },
);
after(async () => {
  for (const s of servers) await s.stop();
  await dispatcher?.close();
  rmSync(root, { recursive: true, force: true });
});

/** A server on the shared backend with these limits (options as a variable: the file also builds against the server before them). */
async function serve(limits: Record<string, number>) {
  const own = createMetrics(); // each server its own: the connection gauge is per server
  const options = { backend, metrics: own, host: '127.0.0.1', port: 0, bodyLimit: 1 << 20, limits: { drainGraceMs: 0, ...limits } };
  const server = await startServer(options);
  servers.push(server);
  const metric = async (name: string, labels = '') => metricValue(await own.registry.metrics(), name, labels);
  return { url: server.url, port: Number(new URL(server.url).port), metric };
}

const valid = { inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: Array.from(seeded(192, 3, -1, 1)) }] };
async function until(what: () => Promise<boolean>): Promise<void> {
  while (!(await what())) await new Promise((r) => setTimeout(r, 20));
}

/** The same body as chunked transfer coding (no Content-Length: the limit is only found while reading). */
function chunkedPost(path: string, size: number): Buffer {
  const parts = [
    Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`),
  ];
  for (let left = size; left > 0; left -= 65536) {
    const n = Math.min(65536, left);
    parts.push(Buffer.from(`${n.toString(16)}\r\n`), Buffer.alloc(n, 0x20), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

test('a 413 reaches clients that write the whole body before reading (Content-Length and chunked)', { timeout: 180_000 }, async () => {
  const { url, port } = await serve({});
  const big = postBytes('/v2/models/tiny/infer', Buffer.alloc(8 << 20, 0x20), { 'Content-Type': 'application/json' });
  for (let i = 0; i < 3; i++) {
    const r = await rawRequest(port, big, { writeAllFirst: true });
    assert.equal(r.status, 413, `8 MiB with Content-Length over a 1 MiB limit, try ${i}: ${r.status ?? r.error}`);
    assert.match(r.body, /larger than 1048576 bytes/);
  }
  const chunked = await rawRequest(port, chunkedPost('/v2/models/tiny/infer', 4 << 20), { writeAllFirst: true });
  assert.equal(chunked.status, 413, `4 MiB chunked over a 1 MiB limit: ${chunked.status ?? chunked.error}`);
  assert.equal((await post(`${url}/v2/models/tiny/infer`, valid)).status, 200, 'the server serves on');
});

test('past the discard bound the connection is closed at once, and counted', { timeout: 120_000 }, async () => {
  const { port, metric } = await serve({ discardLimitBytes: 2 << 20 });
  const before = await metric('veltair_connections_dropped_total', 'reason="discard_limit"');
  const big = postBytes('/v2/models/tiny/infer', Buffer.alloc(8 << 20, 0x20), { 'Content-Type': 'application/json' });
  await rawRequest(port, big, { writeAllFirst: true }); // 413 or a reset: the bound says the server need not read 8 MiB
  assert.equal(await metric('veltair_connections_dropped_total', 'reason="discard_limit"'), before + 1);
});

/** A client sending one byte of a request every `everyMs` until the server closes; resolves with what it got and how many bytes it sent. */
function dribble(port: number, text: string, everyMs: number): Promise<{ got: string; sent: number }> {
  return new Promise((resolve) => {
    const s: Socket = connect(port, '127.0.0.1');
    let got = '',
      sent = 0;
    const timer = setInterval(() => {
      if (s.writable && text.length > 0) s.write(text[sent++ % text.length]!);
    }, everyMs);
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      clearInterval(timer);
      resolve({ got, sent });
    });
  });
}

test(
  'clients dribbling headers, and a silent one, get 408 and are closed; valid requests are answered meanwhile',
  { timeout: 180_000 },
  async () => {
    const { url, port, metric } = await serve({ headerTimeoutMs: 400 });
    const before = await metric('veltair_timeouts_total', 'kind="header"');
    const slow = [
      ...Array.from({ length: 12 }, () =>
        dribble(port, 'GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ' + 'a'.repeat(200), 100),
      ),
      dribble(port, '', 100),
    ];
    for (let i = 0; i < 5; i++) assert.equal((await post(`${url}/v2/models/tiny/infer`, valid)).status, 200, 'valid requests are served');
    for (const { got, sent } of await Promise.all(slow)) {
      assert.match(got, /^HTTP\/1\.1 408 /, 'a slow client gets 408 before the close');
      // Not a clock: the server runs the same timers as the clients. At one byte per 100 ms, 300 bytes is 75 times the 400 ms bound.
      assert.ok(sent < 300, `cut off after ${sent} bytes, not left to dribble on`);
    }
    assert.ok((await metric('veltair_timeouts_total', 'kind="header"')) >= before + 13, 'each is counted as a header timeout');
  },
);

test('a body that stops arriving gets 408 and is closed; one that keeps arriving slowly is served', { timeout: 180_000 }, async () => {
  const { port, metric } = await serve({ bodyTimeoutMs: 1500, headerTimeoutMs: 600_000 });
  const before = await metric('veltair_timeouts_total', 'kind="body"');
  const body = Buffer.from(JSON.stringify(valid));
  const head = postBytes('/v2/models/tiny/infer', body, { 'Content-Type': 'application/json' });
  const headEnd = head.indexOf('\r\n\r\n') + 4;
  const stalled = await rawRequest(port, head.subarray(0, headEnd + 100));
  assert.equal(stalled.status, 408, `a stalled body: ${stalled.status ?? stalled.error}`);
  assert.equal(await metric('veltair_timeouts_total', 'kind="body"'), before + 1);
  // The same body in 40 pieces, 100 ms apart: longer than the timeout in all, never a pause as long.
  const slow = await rawRequest(port, undefined, {
    onSocket: (s) => {
      s.write(head.subarray(0, headEnd));
      const step = Math.ceil(body.byteLength / 40);
      let at = 0;
      const timer = setInterval(() => {
        if (!s.writable || at >= body.byteLength) {
          clearInterval(timer);
          return;
        }
        s.write(body.subarray(at, at + step));
        at += step;
      }, 100);
    },
  });
  assert.equal(slow.status, 200, `a slow but steady body: ${slow.status ?? slow.error} ${slow.body.slice(0, 100)}`);
  const serverMs = (JSON.parse(slow.body) as { parameters: { server_ms: number } }).parameters.server_ms;
  // Its last piece left 39 intervals of 100 ms after the headers (timers are never early): reading the body is server time.
  assert.ok(serverMs >= 3500, `server_ms ${serverMs} counts the body's arrival`);
});

test(
  'connections past --max-connections get 503 with Retry-After, then a close, and are counted; the gauge counts open ones',
  { timeout: 120_000 },
  async () => {
    const { url, port, metric } = await serve({ maxConnections: 3, headerTimeoutMs: 600_000 });
    const held = await Promise.all(
      Array.from(
        { length: 3 },
        () =>
          new Promise<Socket>((resolve) => {
            const s = connect(port, '127.0.0.1', () => resolve(s));
            s.on('error', () => undefined);
          }),
      ),
    );
    await until(async () => (await metric('veltair_open_connections')) === 3);
    const before = await metric('veltair_connections_dropped_total', 'reason="max_connections"');
    const refused = await rawRequest(port, Buffer.from('GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    assert.equal(refused.status, 503, `the fourth connection: ${refused.status ?? refused.error}`);
    assert.match(refused.headers['retry-after'] ?? '', /^\d+$/, 'with Retry-After');
    assert.equal(refused.headers['connection'], 'close');
    assert.match(refused.body, /limit of 3 connections/);
    // A client that writes a whole 2 MiB request before reading a byte still gets the 503, not a reset.
    const upload = postBytes('/v2/models/tiny/infer', Buffer.alloc(2 << 20, 0x20), { 'Content-Type': 'application/json' });
    const writer = await rawRequest(port, upload, { writeAllFirst: true });
    assert.equal(writer.status, 503, `a client that writes first: ${writer.status ?? writer.error}`);
    assert.equal(await metric('veltair_connections_dropped_total', 'reason="max_connections"'), before + 2);
    assert.equal(await metric('veltair_open_connections'), 3, 'refused connections are not among the open ones');
    held[0]!.destroy();
    await until(async () => (await metric('veltair_open_connections')) === 2);
    assert.equal((await fetch(`${url}/v2/health/live`)).status, 200, 'below the cap again, a new connection is served');
    for (const s of held) s.destroy();
  },
);
