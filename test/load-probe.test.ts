import test from 'node:test';
import assert from 'node:assert/strict';
import { MIN_PROBE_REQUESTS, probeDurationS, type LoadModel } from '../src/load/generator.js';

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
  const { requestFor } = await import('../src/load/generator.js');
  const meta = { name: 'm', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4] }] };
  const binary = requestFor(meta, 1, false);
  const headLength = Number(binary.headers['Inference-Header-Content-Length']);
  const head = JSON.parse(Buffer.from(binary.body as Uint8Array).subarray(0, headLength).toString('utf8')) as { parameters?: Record<string, unknown> };
  assert.equal(head.parameters?.['binary_data_output'], true);
  assert.equal((binary.body as Uint8Array).byteLength, headLength + 16, 'four float32 values after the header');
  const json = JSON.parse(requestFor(meta, 1, true).body as string) as { parameters?: unknown };
  assert.equal(json.parameters, undefined);
});

test('find-max runs a narrowly failed rate once more and judges both runs pooled; a clear failure is not retried', async () => {
  const { searchMaxQps, pooledSatisfaction, narrowFailure } = await import('../src/load/generator.js');
  const result = (qps: number, within: number, sent = 100) => ({
    totalQps: qps, durationS: 4, satisfaction: within / sent,
    models: [{ name: 'light', targetQps: qps, sent, ok: sent, rejected: 0, errors: 0, achievedQps: qps, p50Ms: 1, p90Ms: 1, p99Ms: 1, meanMs: 1, qosMs: 10,
      satisfaction: within / sent }],
  });
  assert.equal(pooledSatisfaction([result(10, 98), result(10, 100)]), 0.99);
  assert.equal(narrowFailure(result(10, 98), 0.99), true);
  assert.equal(narrowFailure(result(10, 97), 0.99), false);
  // A server that holds 20 QPS, whose first run at 10 QPS meets one stall (2 of 100 late).
  const seen: number[] = [];
  let stalls = 1;
  const server = async (qps: number) => {
    seen.push(qps);
    if (qps > 20) return result(qps, 50);
    if (stalls > 0) { stalls--; return result(qps, 98); }
    return result(qps, 100);
  };
  const found = await searchMaxQps(server, { seed: 1, startQps: 10, tolerance: 1.1, maxRuns: 8 });
  assert.deepEqual(seen.slice(0, 3), [10, 10, 20], 'the stalled rate is confirmed, then the search goes on up');
  assert.ok(found.maxQps >= 18 && found.maxQps <= 20, `found ${found.maxQps}`);
  assert.ok(!seen.slice(3).some((q, i) => q > 20 && seen[3 + i + 1] === q), 'a clear failure above capacity is never rerun');
  stalls = 1;
  seen.length = 0;
  const plain = await searchMaxQps(server, { seed: 1, startQps: 10, tolerance: 1.1, maxRuns: 8, confirmNarrowFailures: false });
  assert.ok(plain.maxQps < 10, `without confirmation one stall at the first rate sends the search below it (${plain.maxQps})`);
});
