import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { attributeLate, requestParts, runTraced, type TracedRequest } from '../src/load/late-attribution.js';
import { attributionTable } from '../src/load/late-table.js';
import type { LoadModel } from '../src/load/generator.js';

const traced = (clientMs: number, queued: number, kernels: number, status = 200): TracedRequest => ({
  model: 0,
  status,
  clientMs,
  parts: { clientLag: 0, clientGc: 0, outside: 1, frontEnd: 0.5, queued, bind: 0.1, dispatch: 0.1, kernels, handBack: 0.2 },
});

test('a late request is attributed to the component furthest above its on-time median', () => {
  const onTime = Array.from({ length: 9 }, () => traced(12, 0.5, 10));
  const late = [
    traced(45, 33, 10),
    traced(50, 0.5, 48),
    traced(0, 0, 0, 503),
    { model: 0, status: 200, clientMs: 90, parts: { clientLag: 0, clientGc: 0 } },
  ];
  assert.deepEqual(attributeLate([...onTime, ...late], 40), ['queued', 'kernels', 'no answer', 'untraced']);
  // A component that is always large is not a cause: kernels at 30 ms in every request, one queued 12 ms more than usual.
  const slowKernels = Array.from({ length: 9 }, () => traced(32, 0.5, 30));
  assert.deepEqual(attributeLate([...slowKernels, traced(44, 12.5, 30)], 40), ['queued']);
});

test('requestParts splits the client time into outside, front end and the dispatcher account', () => {
  const parts = requestParts(20, 0.3, 1.5, 15, {
    queueMs: 2,
    beginMs: 0.5,
    dispatchMs: 0.25,
    kernelMs: 9,
    returnMs: 0.5,
    finishMs: 0.75,
    blocks: 3,
    totalMs: 13,
  });
  assert.deepEqual(parts, {
    clientLag: 0.3,
    clientGc: 1.5,
    outside: 5,
    frontEnd: 2,
    queued: 2,
    bind: 0.5,
    dispatch: 0.25,
    kernels: 9,
    handBack: 1.25,
  });
  assert.deepEqual(requestParts(20, 0, 0, null, null), { clientLag: 0, clientGc: 0 });
  assert.deepEqual(requestParts(20, 0, 0, 15, null), { clientLag: 0, clientGc: 0, outside: 5, frontEnd: 15 });
});

test('a traced run reads each answer back and finds the queueing that made requests late', async () => {
  let n = 0;
  const server = http.createServer((req, res) => {
    const arrival = performance.now();
    req.resume();
    req.on('end', () => {
      // Every third request waits 60 ms for "an instance"; the others answer at once. The account is the
      // time that really passed, as a server's is, however late a busy host runs the timer.
      const wait = n++ % 3 === 2 ? 60 : 0;
      setTimeout(() => {
        const queued = performance.now() - arrival;
        const blocks = [[queued + 0.2, queued + 0.3, queued + 1.3, queued + 1.4, 1]];
        const timeline = JSON.stringify({ instance: queued, begun: queued + 0.1, blocks, answer: queued + 1.5 });
        const parameters = { server_ms: queued + 2, veltair_timeline: timeline };
        const head = Buffer.from(JSON.stringify({ outputs: [{ name: 'y', parameters: { binary_data_size: 4 } }], parameters }));
        const body = Buffer.concat([head, Buffer.alloc(4)]);
        res
          .writeHead(200, {
            'Content-Type': 'application/octet-stream',
            'Inference-Header-Content-Length': String(head.byteLength),
            'Content-Length': String(body.byteLength),
          })
          .end(body);
      }, wait);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const model: LoadModel = {
    name: 'm',
    weight: 1,
    qosMs: 40,
    body: Buffer.from('{}'),
    headers: { 'Content-Type': 'application/json' },
    answerBytes: 4,
  };
  try {
    const r = await runTraced(base, [model], 40, 1.5, 3);
    const m = r.models[0]!;
    assert.ok(m.sent >= 30, `sent ${m.sent}`);
    assert.ok(m.late >= Math.floor(m.sent / 3) - 1, `${m.late} late of ${m.sent}`);
    // Every queued request is late and blamed on queueing (a busy host may add a late one of its own).
    assert.ok((m.causes.queued ?? 0) >= Math.floor(m.sent / 3) - 1, JSON.stringify(m.causes));
    assert.ok(m.lateMedians.queued! >= 59 && m.onTimeMedians.queued! < 30, JSON.stringify([m.onTimeMedians, m.lateMedians]));
    assert.ok(m.onTimeMedians.kernels! > 0.9 && m.onTimeMedians.kernels! < 1.1);
    const table = attributionTable(r);
    assert.match(table, new RegExp(`queued ${m.causes.queued}`));
    assert.match(table, /late \(QoS 40 ms\)/);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
