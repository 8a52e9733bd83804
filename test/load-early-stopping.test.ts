import test from 'node:test';
import assert from 'node:assert/strict';
import { binomialCdf, failsDecisively, judgeModel, judgeProbe, judgementLine, requestsNeeded } from '../src/load/early-stopping.js';

test("early stopping at p99 with 99% confidence: 459 requests cover 0 late, 662 cover 1, 2,010 cover 10 (LoadGen's figures)", () => {
  assert.equal(requestsNeeded(0), 459);
  assert.equal(requestsNeeded(1), 662);
  assert.equal(requestsNeeded(10), 2010);
  assert.equal(judgeModel(458, 0, 0), 'undecided');
  assert.equal(judgeModel(459, 0, 0), 'pass');
  assert.equal(judgeModel(661, 1, 0), 'undecided');
  assert.equal(judgeModel(662, 1, 0), 'pass');
  assert.equal(judgeModel(2010, 10, 0), 'pass');
  assert.equal(judgeModel(2009, 10, 0), 'undecided');
});

test('the rule is the binomial tail: 0 late needs 0.99^n ≤ 0.01; other attainments follow the same test', () => {
  assert.ok(Math.abs(binomialCdf(0, 459, 0.01) - 0.99 ** 459) < 1e-12);
  assert.ok(binomialCdf(0, 459, 0.01) <= 0.01 && binomialCdf(0, 458, 0.01) > 0.01);
  assert.ok(Math.abs(binomialCdf(1, 10, 0.5) - 11 / 1024) < 1e-12);
  assert.equal(binomialCdf(5, 5, 0.3), 1);
  assert.equal(binomialCdf(-1, 5, 0.3), 0);
  assert.equal(requestsNeeded(0, { attainment: 0.5, confidence: 0.99 }), 7, '0.5^7 ≤ 0.01 < 0.5^6');
  assert.ok(requestsNeeded(100) > requestsNeeded(10), 'more late requests need more requests');
  assert.ok(Number.isFinite(binomialCdf(50, 100_000, 0.01)), 'no underflow at large n');
});

test('a decisive fail: the late share is above 1% with 99% confidence; unsettled requests count against a pass, never for a fail', () => {
  assert.equal(failsDecisively(0, 10), false);
  assert.equal(failsDecisively(2, 10), true, 'P[X ≥ 2 | 10, 1%] ≈ 0.4%');
  assert.equal(failsDecisively(1, 10), false, 'P[X ≥ 1 | 10, 1%] ≈ 9.6%');
  assert.equal(failsDecisively(10, 2010), false, '10 of 2,010 is under 1%');
  assert.equal(judgeModel(10, 2, 0), 'fail');
  assert.equal(judgeModel(459, 0, 1), 'undecided', 'one answer still to come could be late');
  assert.equal(judgeModel(662, 0, 1), 'pass', 'even if it is late, 662 cover 1');
  assert.equal(judgeProbe(['pass', 'pass']), 'pass');
  assert.equal(judgeProbe(['pass', 'undecided']), 'undecided');
  assert.equal(judgeProbe(['undecided', 'fail']), 'fail');
  assert.match(judgementLine(), /≥ 459 requests with 0 late, 662 with 1, 2,010 with 10/);
});
