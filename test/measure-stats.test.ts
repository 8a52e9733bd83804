import { test } from 'node:test';
import assert from 'node:assert/strict';
import { geometricMean, interleave, median, pairedRatios, quantile, summarizeRatios } from '../src/stats.js';

test('median of odd and even samples, order-independent', () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([7]), 7);
});

test('quantiles interpolate linearly between order statistics', () => {
  const xs = [10, 20, 30, 40, 50];
  assert.equal(quantile(xs, 0), 10);
  assert.equal(quantile(xs, 1), 50);
  assert.equal(quantile(xs, 0.25), 20);
  assert.equal(quantile([1, 2], 0.75), 1.75);
  assert.throws(() => quantile(xs, 1.5), RangeError);
  assert.throws(() => median([]), RangeError);
  assert.throws(() => median([1, Number.NaN]), RangeError);
});

test('geometric mean of ratios; rejects non-positive values', () => {
  assert.ok(Math.abs(geometricMean([2, 8]) - 4) < 1e-12);
  assert.ok(Math.abs(geometricMean([0.5, 2]) - 1) < 1e-12);
  assert.throws(() => geometricMean([1, 0]), RangeError);
});

test('paired ratios divide each round by its own baseline, so drift between rounds cancels', () => {
  // Machine drifts 2x between rounds; the treatment is always 1.5x its own round's baseline.
  const baseline = [
    [1, 1, 1],
    [2, 2, 2],
    [4, 4.1, 3.9],
  ];
  const treatment = [
    [1.5, 1.5],
    [3, 3, 3],
    [6, 6],
  ];
  const r = pairedRatios(baseline, treatment);
  assert.deepEqual(r.ratios, [1.5, 1.5, 1.5]);
  assert.equal(r.medianRatio, 1.5);
  assert.equal(r.minRatio, 1.5);
  assert.equal(r.maxRatio, 1.5);
  assert.throws(() => pairedRatios([[1]], [[1], [2]]), RangeError);
});

test('ratio summary reports median, extremes and quartiles', () => {
  const s = summarizeRatios([1.2, 0.9, 1.0, 1.1, 1.3]);
  assert.equal(s.medianRatio, 1.1);
  assert.equal(s.minRatio, 0.9);
  assert.equal(s.maxRatio, 1.3);
  assert.equal(s.q1Ratio, 1.0);
  assert.equal(s.q3Ratio, 1.2);
});

test('interleave runs arms A B A B serially and files samples by arm and round', async () => {
  const calls: string[] = [];
  let running = 0;
  const out = await interleave(['a', 'b'] as const, 3, async (arm, round) => {
    running++;
    assert.equal(running, 1, 'measurements must never overlap');
    calls.push(`${arm}${round}`);
    await new Promise((r) => setTimeout(r, 1));
    running--;
    return [round * 10 + (arm === 'a' ? 1 : 2)];
  });
  assert.deepEqual(calls, ['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
  assert.deepEqual(out.a, [[1], [11], [21]]);
  assert.deepEqual(out.b, [[2], [12], [22]]);
});

test('interleave with alternate reverses the order on odd rounds', async () => {
  const calls: string[] = [];
  await interleave(
    ['q', 'n'] as const,
    4,
    async (arm, round) => {
      calls.push(`${arm}${round}`);
      return [];
    },
    { alternate: true },
  );
  assert.deepEqual(calls, ['q0', 'n0', 'n1', 'q1', 'q2', 'n2', 'n3', 'q3']);
  await assert.rejects(
    interleave(['x'], 0, async () => []),
    RangeError,
  );
  await assert.rejects(
    interleave(['x', 'x'], 1, async () => []),
    RangeError,
  );
});
