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
