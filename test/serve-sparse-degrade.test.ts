/** When a served model with a sparse output layer moves down its family and back, and how long it holds (src/serve/sparse-degrade.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEGRADE_AT,
  FIRST_HOLD_QOS,
  holdAfterMove,
  MAX_HOLD_QOS,
  NO_HOLD,
  PROBE_WINDOW_QOS,
  RECOVER_AT,
  nextSparseVersion,
} from '../src/serve/sparse-degrade.js';

// a 500k-class head: dense 20.7 ms, then 0.68 and 0.32 ms; a 1 ms prefix on 2 cores; QoS 4 × the fastest dense answer
const base = { headMs: [20.7, 0.68, 0.32], prefixMs: 1, qosMs: 4 * 21.7, parallel: 2 };

test('the model moves one version sparser once the requests it holds would end after DEGRADE_AT × QoS', () => {
  assert.equal(nextSparseVersion({ ...base, queued: 1, current: 0 }), 0, 'one request fits at dense');
  assert.equal(nextSparseVersion({ ...base, queued: 2, current: 0 }), 0, 'two fit: 2 × 20.7 + 2 × 1 / 2 = 42.4 ms');
  // heads run one at a time: 3 × 20.7 + 3 × 1 / 2 = 63.6 ms > 0.6 × 86.8 (divided by the 2 cores it would be 32.6, and fit)
  assert.ok(3 * 20.7 + 1.5 > DEGRADE_AT * base.qosMs && (3 * 20.7 + 1.5) / 2 < DEGRADE_AT * base.qosMs);
  assert.equal(nextSparseVersion({ ...base, queued: 3, current: 0 }), 1, 'the head is not divided by the core count');
  assert.equal(nextSparseVersion({ ...base, queued: 4, current: 1 }), 1, 'one step at a time, and no further than needed');
  assert.equal(nextSparseVersion({ ...base, queued: 400, current: 1 }), 2);
  assert.equal(nextSparseVersion({ ...base, queued: 4000, current: 2 }), 2, 'the sparsest version is the floor');
});

test('it moves back up only when the denser version would end by RECOVER_AT × QoS', () => {
  assert.equal(nextSparseVersion({ ...base, queued: 1, current: 1 }), 0, 'one request at dense ends at 21.2 ms');
  assert.ok(2 * 20.7 + 1 < RECOVER_AT * base.qosMs);
  assert.equal(nextSparseVersion({ ...base, queued: 2, current: 1 }), 0);
  assert.equal(nextSparseVersion({ ...base, queued: 3, current: 1 }), 1, 'between the thresholds it stays: no flapping');
  assert.equal(nextSparseVersion({ ...base, queued: 1, current: 0 }), 0, 'dense is the ceiling');
});

test('after a move down the model holds the sparser version; a failed probe doubles the hold, up to MAX_HOLD_QOS × QoS', () => {
  const q = base.qosMs;
  let hold = holdAfterMove(NO_HOLD, 'down', 1000, q);
  assert.equal(hold.holdMs, FIRST_HOLD_QOS * q, 'the first move down holds FIRST_HOLD_QOS × QoS');
  const held = { ...base, queued: 1, current: 1, hold };
  assert.equal(nextSparseVersion({ ...held, nowMs: hold.untilMs - 1 }), 1, 'no move up while held, though dense would fit');
  assert.equal(nextSparseVersion({ ...held, nowMs: hold.untilMs }), 0, 'the probe: up once the hold is over');
  assert.equal(
    nextSparseVersion({ ...base, queued: 4, current: 0, nowMs: 0, hold: { ...hold, untilMs: 1e9 } }),
    1,
    'a hold never stops a move down',
  );
  // the probe fails: the queue grows at dense and the model moves down again within the probe window
  hold = holdAfterMove(hold, 'up', hold.untilMs, q);
  hold = holdAfterMove(hold, 'down', hold.lastUpMs + PROBE_WINDOW_QOS * q, q);
  assert.equal(hold.holdMs, 2 * FIRST_HOLD_QOS * q);
  for (let i = 0; i < 10; i++) hold = holdAfterMove(holdAfterMove(hold, 'up', hold.untilMs, q), 'down', hold.untilMs + 1, q);
  assert.equal(hold.holdMs, MAX_HOLD_QOS * q, 'doubling stops at the cap');
  // a probe that holds (no move down within the window) resets the next hold
  hold = holdAfterMove(hold, 'up', hold.untilMs, q);
  hold = holdAfterMove(hold, 'down', hold.lastUpMs + PROBE_WINDOW_QOS * q + 1, q);
  assert.equal(hold.holdMs, FIRST_HOLD_QOS * q);
});

test('one failed probe doubles the hold once, however many versions the load then pushes the model down', () => {
  const q = base.qosMs;
  let hold = holdAfterMove(NO_HOLD, 'down', 0, q);
  hold = holdAfterMove(holdAfterMove(hold, 'up', hold.untilMs, q), 'up', hold.untilMs + 1, q);
  hold = holdAfterMove(hold, 'down', hold.lastUpMs + 1, q);
  assert.equal(hold.holdMs, 2 * FIRST_HOLD_QOS * q);
  hold = holdAfterMove(hold, 'down', hold.lastUpMs + 2, q);
  assert.equal(hold.holdMs, 2 * FIRST_HOLD_QOS * q, 'the second move down of the same episode neither doubles nor resets');
  assert.equal(
    nextSparseVersion({ ...base, queued: 1, current: 1, nowMs: hold.untilMs, hold }),
    0,
    'at the boundary (≤) the probe goes up',
  );
});
