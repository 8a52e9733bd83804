/**
 * Answers a client does not take (src/serve/connections.ts, send-queue.ts): a client that stops
 * reading a large answer is cut off after the send timeout and counted; a client that reads the
 * same answer slowly, in bursts with pauses shorter than the timeout, gets all of it. The backend
 * is a stand-in that answers a 64 MiB tensor: the front end and its connections are the real ones.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { sendMoved, unackedInTable } from '../src/serve/send-queue.js';
import type { Backend, ServedModel } from '../src/serve/backend.js';
import { createMetrics } from '../src/serve/metrics.js';
import { startServer, type RunningServer } from '../src/serve/start.js';
import { metricValue, postBytes } from './serve-raw-client.js';

/** 64 MiB of FP32: more than the kernel's socket buffers hold for a client that reads nothing, on any usual host. */
const ELEMENTS = 16 << 20;
const answer = new Float32Array(ELEMENTS).fill(0.5);
const big: ServedModel = {
  name: 'big',
  platform: 'test',
  qosMs: 60_000,
  inputs: [{ name: 'x', dtype: 'float32', shape: [1] }],
  outputs: [{ name: 'y', dtype: 'float32', shape: [ELEMENTS] }],
};
const backend: Backend = {
  name: 'stand-in',
  models: [big],
  inFlight: () => 0,
  close: async () => undefined,
  infer: async () => ({ outputs: { y: { dtype: 'float32', shape: [ELEMENTS], data: answer } }, parameters: {} }),
};
const request = postBytes(
  '/v2/models/big/infer',
  Buffer.from(
    JSON.stringify({ inputs: [{ name: 'x', shape: [1], datatype: 'FP32', data: [1] }], parameters: { binary_data_output: true } }),
  ),
  { 'Content-Type': 'application/json' },
);

const servers: RunningServer[] = [];
after(async () => {
  for (const s of servers) await s.stop();
});

async function serve(sendTimeoutMs: number) {
  const metrics = createMetrics();
  const server = await startServer({
    backend,
    metrics,
    host: '127.0.0.1',
    port: 0,
    bodyLimit: 1 << 20,
    limits: { drainGraceMs: 0, sendTimeoutMs },
  });
  servers.push(server);
  const metric = async (name: string, labels = '') => metricValue(await metrics.registry.metrics(), name, labels);
  return { port: Number(new URL(server.url).port), metric };
}

async function until(what: () => Promise<boolean>): Promise<void> {
  while (!(await what())) await new Promise((r) => setTimeout(r, 20));
}

/** Bytes a raw client received until the connection ended, and whether they hold a complete answer (status, full body). */
function outcome(got: Buffer): { status?: number; complete: boolean } {
  const end = got.indexOf('\r\n\r\n');
  if (end < 0) return { complete: false };
  const head = got.subarray(0, end).toString('latin1');
  const length = Number(/^content-length: *(\d+)/im.exec(head)?.[1] ?? NaN);
  return { status: Number(head.split(' ')[1]), complete: got.length - end - 4 === length };
}

function ended(s: Socket, chunks: Buffer[]): Promise<Buffer> {
  return new Promise((resolve) => {
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => undefined);
    s.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

test('a client that stops reading a 64 MiB answer is cut off after the send timeout, and counted', { timeout: 120_000 }, async () => {
  const { port, metric } = await serve(500);
  const before = await metric('veltair_timeouts_total', 'kind="send"');
  const s = connect(port, '127.0.0.1', () => s.write(request));
  s.pause(); // reads nothing: the answer backs up into the server
  const chunks: Buffer[] = [];
  const done = ended(s, chunks);
  await until(async () => (await metric('veltair_timeouts_total', 'kind="send"')) === before + 1);
  await until(async () => (await metric('veltair_open_connections')) === 0);
  s.resume();
  const got = await done;
  assert.equal(outcome(got).complete, false, `the client got ${got.length} bytes, not the whole answer: it was cut off`);
});

test('a client that reads the same answer slowly, pausing less than the send timeout, gets all of it', { timeout: 120_000 }, async () => {
  const { port, metric } = await serve(1000);
  const before = await metric('veltair_timeouts_total', 'kind="send"');
  const s = connect(port, '127.0.0.1', () => s.write(request));
  const chunks: Buffer[] = [];
  let sinceRest = 0;
  s.on('data', (d: Buffer) => {
    sinceRest += d.byteLength;
    if (sinceRest < 2 << 20) return;
    sinceRest = 0;
    s.pause(); // 100 ms rest per 2 MiB: 32 rests, several times the timeout in all, each a tenth of it
    setTimeout(() => s.resume(), 100);
  });
  const got = await ended(s, chunks);
  const o = outcome(got);
  assert.equal(o.status, 200);
  assert.equal(o.complete, true, `the slow reader got ${got.length} bytes: the whole answer (${got.subarray(0, 300).toString('latin1')})`);
  assert.equal(await metric('veltair_timeouts_total', 'kind="send"'), before, 'no send timeout');
});

test("unacknowledged bytes per peer port from /proc/net/tcp: this port's connections only, a peer port seen twice unknown", () => {
  const table = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:1F40 00000000:0000 0A 00000000:00000005 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0',
    '   1: 0100007F:1F40 0100007F:D431 01 0003A000:00000000 00:00000000 00000000  1000        0 0 1 0 100 0 0 10 0',
    '   2: 0100007F:1F40 0100007F:D432 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0 100 0 0 10 0',
    '   3: 0100007F:1F40 0200007F:D432 01 00000010:00000000 00:00000000 00000000  1000        0 2 1 0 100 0 0 10 0',
    '   4: 0100007F:1F41 0100007F:D433 01 00000007:00000000 00:00000000 00000000  1000        0 3 1 0 100 0 0 10 0',
  ].join('\n');
  const unacked = unackedInTable(table, 0x1f40);
  assert.deepEqual(
    [...unacked.entries()],
    [
      [0xd431, 0x3a000],
      [0xd432, undefined],
    ],
  );
});

test("an answer moved when libuv's queue shrinks though the kernel's reads the same full cap, and not when nothing moved", () => {
  const full = 4_190_912; // a slow reader's pauses leave the kernel's send buffer at its cap at every look
  const first = { buffered: 64 << 20, uvQueued: 54_741_685, unacked: full };
  assert.equal(sendMoved(undefined, first), true, 'the first look starts the clock');
  assert.equal(sendMoved(first, { ...first, uvQueued: 50_681_739 }), true);
  assert.equal(sendMoved(first, { ...first }), false, 'a client that reads nothing');
  assert.equal(sendMoved(first, { ...first, unacked: full - 65_536 }), true, 'the last bytes leave the kernel');
  assert.equal(sendMoved(first, { ...first, buffered: 1 << 20 }), true, "Node's buffer shrank");
  assert.equal(sendMoved({ buffered: 10 }, { buffered: 10 }), false, 'a host that says nothing past Node: only its buffer counts');
});
