/**
 * `veltair serve` as a client sees it (KServe v2 / Triton HTTP): health and metadata, inference
 * with JSON tensors and with the binary tensor data extension (answers equal ONNX Runtime's),
 * every malformed request a 400 saying what was expected, unknown models and routes 404, an
 * oversized body 413, a full queue 503 with Retry-After — and after all of it the server still
 * answers. No request opens a file. Prometheus metrics count what happened.
 */
import assert from 'node:assert/strict';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { seeded } from './runtime-harness.js';
import { assertClose, compileModels, model, ortRun, post, postTogether, startInProcess, type InProcessServer } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-serve-'));
let bundles: Record<string, string>;
let srv: InProcessServer;
let small: InProcessServer;
const url = (path: string) => `${srv.url}${path}`;

const tinyInput = (seed: number) => Array.from(seeded(192, seed, -1, 1));
const tinyRequest = (seed: number, extra: Record<string, unknown> = {}) => ({
  inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: tinyInput(seed) }],
  ...extra,
});

before(
  async () => {
    bundles = await compileModels(root, ['tiny', 'embed']);
    srv = await startInProcess([model('tiny', bundles['tiny']!), model('embed', bundles['embed']!)]);
    small = await startInProcess([model('tiny', bundles['tiny']!, { maxQueue: 2, replicas: 1 })], { bodyLimit: 2048 });
  },
  { timeout: 600_000 },
);
after(async () => {
  await srv?.server.stop();
  await small?.server.stop();
  rmSync(root, { recursive: true, force: true });
});

test('health, server and model metadata, readiness', async () => {
  assert.deepEqual(await (await fetch(url('/v2/health/live'))).json(), { live: true });
  assert.deepEqual(await (await fetch(url('/v2/health/ready'))).json(), { ready: true });
  const server = (await (await fetch(url('/v2'))).json()) as { name: string; extensions: string[] };
  assert.equal(server.name, 'veltair');
  assert.ok(server.extensions.includes('binary_tensor_data'));
  const meta = (await (await fetch(url('/v2/models/tiny'))).json()) as Record<string, unknown>;
  assert.deepEqual(meta['inputs'], [{ name: 'input', datatype: 'FP32', shape: [1, 3, 8, 8] }]);
  assert.deepEqual(meta['outputs'], [{ name: 'output', datatype: 'FP32', shape: [1, 10] }]);
  assert.deepEqual(meta['versions'], ['1']);
  assert.deepEqual(await (await fetch(url('/v2/models/tiny/versions/1/ready'))).json(), { name: 'tiny', ready: true });
  const embed = (await (await fetch(url('/v2/models/embed'))).json()) as Record<string, unknown>;
  assert.deepEqual(embed['inputs'], [{ name: 'ids', datatype: 'INT64', shape: [1, 3] }]);
});

test('JSON inference answers what ONNX Runtime answers, echoes the id and says how it ran', async () => {
  const r = await post(url('/v2/models/tiny/infer'), tinyRequest(1, { id: 'req-7' }));
  assert.equal(r.status, 200, Buffer.from(r.bytes).toString());
  type Answer = {
    id: string;
    model_name: string;
    outputs: { name: string; data: number[]; shape: number[] }[];
    parameters: Record<string, unknown>;
  };
  const body = r.json() as Answer;
  assert.equal(body.id, 'req-7');
  assert.equal(body.model_name, 'tiny');
  const want = await ortRun(join(root, 'tiny.onnx'), {
    input: { dtype: 'float32', shape: [1, 3, 8, 8], data: Float32Array.from(tinyInput(1)) },
  });
  assertClose(body.outputs[0]!.data, want['output']!, 'output');
  assert.equal(body.parameters['veltair_policy'], 'veltair');
  assert.ok(Number(body.parameters['veltair_blocks']) >= 1);
  // Nested data is row-major like flat data.
  const nested = [[[...Array(3)].map((_, c) => [...Array(8)].map((_, y) => tinyInput(1).slice(c * 64 + y * 8, c * 64 + y * 8 + 8)))]][0];
  const r2 = await post(url('/v2/models/tiny/infer'), { inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: nested }] });
  assert.equal(r2.status, 200);
  assertClose((r2.json() as typeof body).outputs[0]!.data, want['output']!, 'nested input');
});

test('binary tensor data extension in and out gives the same answer as JSON', async () => {
  const x = seeded(192, 2, -1, 1);
  const head = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', parameters: { binary_data_size: x.byteLength } }],
      outputs: [{ name: 'output', parameters: { binary_data: true } }],
    }),
  );
  const r = await post(url('/v2/models/tiny/infer'), Buffer.concat([head, Buffer.from(x.buffer, x.byteOffset, x.byteLength)]), {
    'Content-Type': 'application/octet-stream',
    'Inference-Header-Content-Length': String(head.byteLength),
  });
  assert.equal(r.status, 200, Buffer.from(r.bytes).toString());
  const headerLength = Number(r.headers.get('inference-header-content-length'));
  const json = JSON.parse(Buffer.from(r.bytes.subarray(0, headerLength)).toString()) as {
    outputs: { parameters: { binary_data_size: number } }[];
  };
  assert.equal(json.outputs[0]!.parameters.binary_data_size, 40);
  const out = new Float32Array(r.bytes.slice(headerLength).buffer);
  const asJson = await post(url('/v2/models/tiny/infer'), {
    inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: Array.from(x) }],
  });
  assertClose(out, (asJson.json() as { outputs: { data: number[] }[] }).outputs[0]!.data, 'binary vs JSON');
});

test('every malformed request is a 400 that says what was expected', async () => {
  const infer = url('/v2/models/tiny/infer');
  const bad = async (body: unknown, pattern: RegExp, headers?: Record<string, string>) => {
    const r = await post(infer, body, headers);
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)} → ${r.status}`);
    const error = String(r.json()['error']);
    assert.match(error, pattern);
  };
  await bad('{"inputs": [', /not valid JSON/);
  await bad({ input: [] }, /inference request/);
  await bad({ inputs: [] }, /inference request/);
  await bad({ inputs: [{ name: 'x', shape: [1], datatype: 'FP32', data: [1] }] }, /no input "x"; its inputs are "input"/);
  await bad(
    { inputs: [{ name: 'input', shape: [1, 3, 8], datatype: 'FP32', data: [1] }] },
    /shape \[1, 3, 8\]; the model expects FP32 \[1, 3, 8, 8\]/,
  );
  await bad(
    { inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'INT64', data: tinyInput(1) }] },
    /is INT64; the model expects FP32/,
  );
  await bad(
    { inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: [1, 2, 3] }] },
    /3 elements; FP32 \[1, 3, 8, 8\] has 192/,
  );
  await bad(
    { inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: ['a', ...tinyInput(1).slice(1)] }] },
    /element 0 .* finite number/,
  );
  await bad({ ...tinyRequest(1), outputs: [{ name: 'nope' }] }, /no output "nope"; its outputs are "output"/);
  await bad(
    { inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', parameters: { binary_data_size: 12 } }] },
    /body ends before its 12 binary bytes/,
  );
  await bad('{"inputs":[]}', /Inference-Header-Content-Length/, {
    'Content-Type': 'application/json',
    'Inference-Header-Content-Length': '9999',
  });
  await bad(
    {
      inputs: [
        { name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: tinyInput(1) },
        { name: 'input', shape: [1], datatype: 'FP32', data: [1] },
      ],
    },
    /given twice/,
  );
  // A value the runtime itself refuses (an embedding id out of range) is the client's fault too.
  const r = await post(url('/v2/models/embed/infer'), { inputs: [{ name: 'ids', shape: [1, 3], datatype: 'INT64', data: [1, 99, 2] }] });
  assert.equal(r.status, 400);
  assert.match(String(r.json()['error']), /index 99/);
});

test('unknown models, versions and routes are 404; other content types 415; a body over the limit 413', async () => {
  for (const path of [
    '/v2/models/nope',
    '/v2/models/nope/infer',
    '/v2/models/tiny/versions/2',
    '/v2/models/..%2F..%2Fetc%2Fpasswd/infer',
    '/v3/anything',
  ]) {
    const r = path.endsWith('/infer') ? await post(url(path), tinyRequest(1)) : { status: (await fetch(url(path))).status };
    assert.equal(r.status, 404, path);
  }
  const typed = await post(url('/v2/models/tiny/infer'), 'hello', { 'Content-Type': 'text/plain' });
  assert.equal(typed.status, 415);
  const big = await post(`${small.url}/v2/models/tiny/infer`, tinyRequest(3));
  assert.equal(big.status, 413, 'the small server accepts bodies of at most 2048 bytes');
});

test('a full queue is a 503 with Retry-After, never an unbounded wait; the server serves on afterwards', async () => {
  const x = seeded(192, 4, -1, 1);
  const head = Buffer.from(
    JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', parameters: { binary_data_size: 768 } }] }),
  );
  const body = Buffer.concat([head, Buffer.from(x.buffer)]);
  const headers = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.byteLength) };
  const answers = await postTogether(`${small.url}/v2/models/tiny/infer`, body, headers, 60);
  const codes = answers.map((a) => a.status);
  assert.ok(
    codes.every((c) => c === 200 || c === 503),
    JSON.stringify(codes),
  );
  const refused = answers.filter((a) => a.status === 503);
  assert.ok(refused.length > 0, `a queue of 2 cannot hold 60 requests that arrive at once: ${JSON.stringify(codes)}`);
  for (const a of refused) assert.ok(Number(a.headers['retry-after']) >= 1, 'Retry-After in whole seconds');
  assert.ok(codes.includes(200));
  assert.equal((await post(`${small.url}/v2/models/tiny/infer`, body, headers)).status, 200);
});

test('no request opens a file', async () => {
  let opened = 0;
  const saved = { open: fs.open, openSync: fs.openSync, readFileSync: fs.readFileSync, promisesOpen: fs.promises.open };
  const counting = <F extends (...a: never[]) => unknown>(f: F) =>
    ((...a: Parameters<F>) => {
      opened++;
      return f(...a);
    }) as F;
  fs.open = counting(saved.open);
  fs.openSync = counting(saved.openSync);
  fs.readFileSync = counting(saved.readFileSync);
  fs.promises.open = counting(saved.promisesOpen);
  syncBuiltinESMExports();
  try {
    for (let i = 0; i < 5; i++) assert.equal((await post(url('/v2/models/tiny/infer'), tinyRequest(i))).status, 200);
    assert.equal((await post(url('/v2/models/tiny/infer'), { inputs: [] })).status, 400);
    assert.equal((await post(url('/v2/models/..%2Fmanifest.json/infer'), tinyRequest(1))).status, 404);
  } finally {
    Object.assign(fs, { open: saved.open, openSync: saved.openSync, readFileSync: saved.readFileSync });
    fs.promises.open = saved.promisesOpen;
    syncBuiltinESMExports();
  }
  assert.equal(opened, 0, 'requests are answered from memory only');
});

test('/metrics counts requests by status, latency, blocks and the versions they ran', async () => {
  const text = await (await fetch(url('/metrics'))).text();
  const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
  assert.ok(value(/veltair_requests_total\{model="tiny",code="200"\} (\d+)/) >= 3, text.slice(0, 400));
  assert.ok(value(/veltair_requests_total\{model="tiny",code="400"\} (\d+)/) >= 1);
  assert.ok(value(/veltair_request_duration_seconds_count\{model="tiny"\} (\d+)/) >= 3);
  assert.ok(value(/veltair_blocks_total\{model="tiny",level="0"\} (\d+)/) >= 3);
  // Which version a block runs depends on the cores it was granted (one family per thread count).
  const choices = [...text.matchAll(/veltair_version_choices_total\{model="tiny",level="0",version="\d+"\} (\d+)/g)];
  assert.ok(choices.reduce((n, m) => n + Number(m[1]), 0) >= 3, 'versions chosen at level 0 are counted');
  assert.match(text, /veltair_queue_depth\{model="tiny"\} 0/);
  assert.match(text, /veltair_cores_busy 0/);
  assert.match(text, /veltair_scheduler_decision_seconds_count \d+/);
});
