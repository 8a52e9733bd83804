/** When a served model with a sparse output layer moves down its family and back (src/serve/sparse-degrade.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEGRADE_AT, RECOVER_AT, nextSparseVersion } from '../src/serve/sparse-degrade.js';

// a 500k-class head: dense 20.7 ms, then 0.68 and 0.32 ms; a 1 ms prefix on 2 cores; QoS 4 × the fastest dense answer
const base = { headMs: [20.7, 0.68, 0.32], prefixMs: 1, qosMs: 4 * 21.7, parallel: 2 };

test('the model moves one version sparser once the requests it holds would end after DEGRADE_AT × QoS', () => {
  assert.equal(nextSparseVersion({ ...base, queued: 1, current: 0 }), 0, 'one request fits at dense');
  // heads run one at a time on the event loop: 4 × 20.7 + 4 × 1 / 2 = 84.8 ms > 0.8 × 86.8
  assert.ok(4 * 20.7 + 2 > DEGRADE_AT * base.qosMs);
  assert.equal(nextSparseVersion({ ...base, queued: 4, current: 0 }), 1, 'the head is not divided by the core count');
  assert.equal(nextSparseVersion({ ...base, queued: 4, current: 1 }), 1, 'one step at a time, and no further than needed');
  assert.equal(nextSparseVersion({ ...base, queued: 400, current: 1 }), 2);
  assert.equal(nextSparseVersion({ ...base, queued: 4000, current: 2 }), 2, 'the sparsest version is the floor');
});

test('it moves back up only when the denser version would end before RECOVER_AT × QoS', () => {
  assert.equal(nextSparseVersion({ ...base, queued: 1, current: 1 }), 0, 'one request at dense ends at 21.2 ms');
  assert.ok(2 * 20.7 + 1 < RECOVER_AT * base.qosMs);
  assert.equal(nextSparseVersion({ ...base, queued: 2, current: 1 }), 0);
  assert.equal(nextSparseVersion({ ...base, queued: 3, current: 1 }), 1, 'between the thresholds it stays: no flapping');
  assert.equal(nextSparseVersion({ ...base, queued: 1, current: 0 }), 0, 'dense is the ceiling');
});
