import test from 'node:test';
import assert from 'node:assert/strict';
import { MIN_PROBE_REQUESTS, probeDurationS, type LoadModel } from '../src/serve/load.js';

const model = (name: string, weight: number): LoadModel => ({ name, weight, qosMs: 10, body: '', headers: {} });

test('a find-max probe runs long enough for the minimum requests of its slowest model, within 3× its duration', () => {
  const two = [model('heavy', 1), model('light', 1)];
  assert.equal(probeDurationS(two, 100, 4), 4, '50 QPS per model: 200 requests in 4 s, no stretch');
  assert.equal(probeDurationS(two, 40, 4), MIN_PROBE_REQUESTS / 20, '20 QPS per model: 5 s for 100 requests');
  assert.equal(probeDurationS(two, 4, 4), 12, '2 QPS per model would need 50 s: capped at 3 × 4 s');
  assert.equal(probeDurationS([model('a', 3), model('b', 1)], 40, 4), 10, 'the lighter-weighted model (10 QPS) sets it');
  assert.equal(probeDurationS(two, 4, 4, 1), 4, 'minRequests 1: the plain duration');
});

test('a binary request asks for binary outputs (as Triton clients do); a JSON one keeps JSON both ways', async () => {
  const { requestFor } = await import('../src/serve/load.js');
  const meta = { name: 'm', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4] }] };
  const binary = requestFor(meta, 1, false);
  const headLength = Number(binary.headers['Inference-Header-Content-Length']);
  const head = JSON.parse(Buffer.from(binary.body as Uint8Array).subarray(0, headLength).toString('utf8')) as { parameters?: Record<string, unknown> };
  assert.equal(head.parameters?.['binary_data_output'], true);
  assert.equal((binary.body as Uint8Array).byteLength, headLength + 16, 'four float32 values after the header');
  const json = JSON.parse(requestFor(meta, 1, true).body as string) as { parameters?: unknown };
  assert.equal(json.parameters, undefined);
});
