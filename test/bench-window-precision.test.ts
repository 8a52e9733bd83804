/**
 * The tuner-timing benchmark's arithmetic: ways of timing parse or are refused, a look's speed drops
 * out of its relative times, rounds combine per candidate, and the summary's A/A, regret and top-3
 * read what fixtures with known answers hold.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { combineRounds, parseWay, relativeTimes, summariseWays, type WorkloadLooks } from '../src/bench/window-precision.js';

test('ways of timing parse, and anything else is refused by name', () => {
  assert.deepEqual(parseWay('seq:100'), { name: 'seq:100', rounds: 1, windowMs: 100 });
  assert.deepEqual(parseWay('rr:4x25'), { name: 'rr:4x25', rounds: 4, windowMs: 25 });
  for (const bad of ['seq', 'rr:0x25', 'rr:4', 'race:100', 'seq:-1'])
    assert.throws(() => parseWay(bad), new RegExp(bad.replace(/[:-]/g, '.')));
});

test("a look's relative times keep its order and drop its speed", () => {
  const slow = relativeTimes([2, 4, NaN, 8]);
  const fast = relativeTimes([1, 2, NaN, 4]);
  assert.deepEqual(slow, fast);
  assert.ok(Number.isNaN(slow[2]!));
  assert.ok(Math.abs(slow[1]! - 1) < 1e-12, 'the middle of a geometric series is its geometric mean');
  assert.ok(relativeTimes([NaN, NaN]).every(Number.isNaN));
});

test('rounds at different host speeds combine into the order every round agrees on', () => {
  // the host runs twice as slow in the second round and three times as slow in the third
  const combined = combineRounds([
    [1, 2, 3],
    [2, 4, 6],
    [3, 6, NaN],
  ]);
  assert.ok(combined[0]! < combined[1]! && combined[1]! < combined[2]!);
  assert.ok(Math.abs(combined[1]! / combined[0]! - 2) < 1e-12);
});

test('the summary reads A/A spread, the regret of each first pick and whether the best is in the top 3', () => {
  const seq50 = (workload: string, reference: number[], first: number[], second: number[]): WorkloadLooks => ({
    workload,
    reference,
    looks: new Map([['seq:50', [first, second] as const]]),
  });
  const rows = [
    // the way picks candidate 1, which the reference times 10% slower than its best (0)
    seq50('a', [1, 1.1, 2, 3], [1.2, 1.0, 2, 3], [1.2, 1.0, 2, 3]),
    // the way picks the reference's best; its second look reads the slowest candidate twice as slow
    seq50('b', [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 8]),
  ];
  const [s] = summariseWays(rows, ['seq:50']);
  assert.equal(s!.workloads, 2);
  assert.ok(Math.abs(s!.meanRegret - 0.05) < 1e-12);
  assert.equal(s!.regretOver3, 1);
  assert.equal(s!.top3, 2);
  // the second look's doubled candidate raises its geometric mean by 2^(1/4): the other three read that far apart
  assert.ok(Math.abs(s!.aaMedian - (2 ** 0.25 - 1)) < 1e-12);
  assert.ok(Math.abs(s!.aaP90 - (1 - 2 ** 0.25 / 2)) < 1e-12, 'the doubled one reads 1 − 2^(1/4)/2 apart');
  assert.equal(summariseWays(rows, ['rr:4x25'])[0]!.workloads, 0, 'a way nobody timed has no workloads');
});
