import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { encodeRequest, RawClient } from '../src/load/raw-client.js';
import { postChecked, type AnswerCheck } from '../src/load/post.js';

/** A v2-like server whose routes answer in every shape the client must judge. */
function answeringServer(): Promise<{ url: URL; connections: () => number; bodies: number[]; close: () => Promise<void> }> {
  let connections = 0;
  const bodies: number[] = [];
  const head = Buffer.from(JSON.stringify({ outputs: [{ name: 'y', parameters: { binary_data_size: 16 } }] }));
  const binary = Buffer.concat([head, Buffer.alloc(16, 7)]);
  const server = http.createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => (bytes += c.byteLength));
    req.on('end', () => {
      bodies.push(bytes);
      const binaryHeaders = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.byteLength) };
      switch (req.url) {
        case '/ok':
          res.writeHead(200, { ...binaryHeaders, 'Content-Length': String(binary.byteLength) }).end(binary);
          return;
        case '/chunked':
          res.writeHead(200, binaryHeaders);
          res.write(binary.subarray(0, 10));
          setTimeout(() => res.end(binary.subarray(10)), 5);
          return;
        case '/short':
          // 15 tensor bytes where 16 are due: well-formed HTTP, a wrong answer.
          res.writeHead(200, { ...binaryHeaders, 'Content-Length': String(binary.byteLength - 1) }).end(binary.subarray(1));
          return;
        case '/lying-header':
          // Right size, but the JSON header claims other output sizes: only --verify sees it.
          {
            const bad = Buffer.from(JSON.stringify({ outputs: [{ name: 'y', parameters: { binary_data_size: 99 } }] }));
            const pad = Buffer.alloc(head.byteLength - bad.byteLength, 0x20);
            const body = Buffer.concat([bad, pad, Buffer.alloc(16)]);
            res.writeHead(200, { ...binaryHeaders, 'Content-Length': String(body.byteLength) }).end(body);
          }
          return;
        case '/busy':
          res.writeHead(503, { 'Content-Type': 'application/json', Connection: 'close' }).end('{"error":"busy"}');
          return;
        case '/cut':
          res.writeHead(200, { ...binaryHeaders, 'Content-Length': String(binary.byteLength) });
          res.write(binary.subarray(0, 8));
          setTimeout(() => res.socket?.destroy(), 5);
          return;
        default:
          res.writeHead(404).end();
      }
    });
  });
  server.on('connection', () => connections++);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: new URL(`http://127.0.0.1:${port}`),
        connections: () => connections,
        bodies,
        close: () => new Promise((r) => server.close(() => r())),
      });
    }),
  );
}

const HEADERS = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': '2' };
const BODY = Buffer.concat([Buffer.from('{}'), Buffer.alloc(4096, 1)]);
const CHECK: AnswerCheck = { binaryBytes: 16 };

test('the raw client judges every answer as the node:http client does', async () => {
  const s = await answeringServer();
  const client = new RawClient();
  try {
    for (const path of ['/ok', '/chunked', '/short', '/busy', '/cut', '/nowhere', '/lying-header']) {
      for (const check of [CHECK, { ...CHECK, verify: true }]) {
        const url = new URL(path, s.url);
        const raw = await client.send(encodeRequest(url, HEADERS, BODY), check);
        const reference = await postChecked(url, HEADERS, BODY, check);
        assert.equal(raw, reference, `${path} verify=${check.verify === true}`);
      }
    }
    const expected = { '/ok': 200, '/chunked': 200, '/short': 0, '/busy': 503, '/cut': 0, '/nowhere': 404 } as const;
    for (const [path, status] of Object.entries(expected)) {
      assert.equal(await client.send(encodeRequest(new URL(path, s.url), HEADERS, BODY), CHECK), status, path);
    }
    assert.equal(await client.send(encodeRequest(new URL('/lying-header', s.url), HEADERS, BODY), CHECK), 200);
    assert.equal(await client.send(encodeRequest(new URL('/lying-header', s.url), HEADERS, BODY), { ...CHECK, verify: true }), 0);
    assert.ok(
      s.bodies.every((b) => b === BODY.byteLength),
      'the server read every body whole',
    );
  } finally {
    client.close();
    await s.close();
  }
});

test('the raw client keeps one connection alive for sequential requests, and a new one after the server closes it', async () => {
  const s = await answeringServer();
  const client = new RawClient();
  try {
    const ok = encodeRequest(new URL('/ok', s.url), HEADERS, BODY);
    for (let i = 0; i < 5; i++) assert.equal(await client.send(ok, CHECK), 200);
    assert.equal(s.connections(), 1);
    assert.equal(await client.send(encodeRequest(new URL('/busy', s.url), HEADERS, BODY), CHECK), 503);
    assert.equal(await client.send(ok, CHECK), 200);
    assert.equal(s.connections(), 2, 'Connection: close ends that socket; the next request opens one');
    const concurrent = await Promise.all([1, 2, 3].map(() => client.send(ok, CHECK)));
    assert.deepEqual(concurrent, [200, 200, 200]);
    assert.ok(s.connections() >= 4, 'requests in flight at once use separate sockets');
  } finally {
    client.close();
    await s.close();
  }
});

test('the raw client resolves 0 for a refused connection and for a head that is not HTTP', async () => {
  const garbage = net.createServer((socket) => {
    socket.once('data', () => socket.end('SSH-2.0-not-http\r\n\r\n'));
  });
  await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', () => r()));
  const { port } = garbage.address() as AddressInfo;
  const client = new RawClient();
  try {
    assert.equal(await client.send(encodeRequest(new URL(`http://127.0.0.1:${port}/x`), HEADERS, BODY), CHECK), 0);
    await new Promise<void>((r) => garbage.close(() => r()));
    assert.equal(await client.send(encodeRequest(new URL(`http://127.0.0.1:${port}/x`), HEADERS, BODY), CHECK), 0);
  } finally {
    client.close();
  }
});

test('encodeRequest refuses header names and values that could split the request', () => {
  const url = new URL('http://127.0.0.1:1/v2/models/m/infer');
  assert.throws(() => encodeRequest(url, { 'X-A': 'a\r\nX-Injected: 1' }, '{}'), /cannot be sent/);
  assert.throws(() => encodeRequest(url, { 'Bad Name': 'a' }, '{}'), /cannot be sent/);
  const bytes = encodeRequest(url, { 'Content-Type': 'application/json', 'content-length': '999' }, '{"a":1}').bytes.toString('latin1');
  assert.match(bytes, /^POST \/v2\/models\/m\/infer HTTP\/1\.1\r\n/);
  assert.match(bytes, /\r\nContent-Length: 7\r\n\r\n\{"a":1\}$/);
  assert.doesNotMatch(bytes, /999/, 'the caller cannot set a Content-Length that disagrees with the body');
});
