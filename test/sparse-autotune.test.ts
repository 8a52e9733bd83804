/**
 * K/L/R autotuning (BOLT's rule): every choice meets the coverage constraint L·d/2^K ≥ c1·s·d and
 * the cost constraint K·L·d_prev + s·d·d_prev ≤ c2·d·d_prev, K+1 would fail coverage (or exceed
 * 2^K ≤ d), and hand-computed cases come out as computed by hand. Overrides and the automatic
 * output sparsity are pinned too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { autoSparsity, autotuneKLR, bucketCap, C1, C2, costLimitedTables, covers, meetsCostConstraint } from '../src/sparse/autotune.js';
import { resolveLayers } from '../src/sparse/layers.js';

test('hand-computed cases', () => {
  // d=100000, s=0.01: L = min(256, floor(0.09·100000/K)) = 256 for every K ≤ 35; coverage 256/2^K ≥ 0.01
  // holds up to 2^14 = 16384 (256/16384 = 0.0156) and fails at 2^15 (0.0078); R = ceil(200000/16384) = 13.
  assert.deepEqual(pick(autotuneKLR(100000, 128, 0.01)), { K: 14, L: 256, R: 13 });
  // d=1000, s=0.05: L = floor(0.05·1000/K) = floor(50/K): K=7 → 7 ≥ 0.05·128 = 6.4 passes, K=8 → 6 < 12.8 fails.
  assert.deepEqual(pick(autotuneKLR(1000, 128, 0.05)), { K: 7, L: 7, R: 16 });
  // s=0.2 ≥ c2: hashing alone gets c2·d·d_prev: L = min(256, floor(1000/K)); K=9 → 111 ≥ 102.4, K=10 → 100 < 204.8.
  assert.deepEqual(pick(autotuneKLR(10000, 64, 0.2)), { K: 9, L: 111, R: 40 });
  // s=0.001, d=1000: coverage would allow K=18, but 2^K ≤ d stops at K=9; L = floor(0.099·1000/9) = 11.
  assert.deepEqual(pick(autotuneKLR(1000, 256, 0.001)), { K: 9, L: 11, R: 4 });
});

const pick = (a: { K: number; L: number; R: number }) => ({ K: a.K, L: a.L, R: a.R });

test('every autotuned choice satisfies both constraints and is the last K that does', () => {
  for (const d of [2000, 5000, 10000, 65536, 100000, 670091, 1000000]) {
    for (const dPrev of [32, 128, 512]) {
      for (const s of [0.001, 0.005, 0.01, 0.02, 0.05, 0.09]) {
        const a = autotuneKLR(d, dPrev, s);
        const where = `d=${d} d_prev=${dPrev} s=${s} → K=${a.K} L=${a.L}`;
        assert.ok(a.L >= 1 && a.L <= 256 && a.K >= 1 && 2 ** a.K <= d, where);
        assert.ok((a.L * d) / 2 ** a.K >= C1 * s * d, `coverage: ${where}`);
        assert.ok(a.K * a.L * dPrev + s * d * dPrev <= C2 * d * dPrev, `cost: ${where}`);
        assert.ok(a.meetsCoverage && a.meetsCost, where);
        assert.equal(a.L, costLimitedTables(d, a.K, s), `L is the most tables the cost allows: ${where}`);
        assert.equal(a.R, bucketCap(d, a.K));
        const next = a.K + 1;
        assert.ok(2 ** next > d || !covers(d, next, costLimitedTables(d, next, s), s), `K+1 should fail: ${where}`);
      }
    }
  }
  assert.ok(!meetsCostConstraint(1000, 128, 8, 100, 0.05));
});

test('overrides: --K alone takes L from the cost budget and R from K; --L alone takes the largest covering K; both are marked as flags', () => {
  const spec = {
    input: 500,
    layers: [
      { dim: 128, activation: 'relu' as const },
      { dim: 100000, activation: 'softmax' as const, sparsity: 0.01 },
    ],
  };
  const k = resolveLayers(spec, { family: 'dwta', K: 10 })[1]!.hash!;
  assert.deepEqual([k.K, k.L, k.R, k.sources.K, k.sources.L], [10, 256, 196, 'flag', 'autotuned']);
  const l = resolveLayers(spec, { family: 'simhash', L: 50 })[1]!.hash!;
  assert.deepEqual([l.K, l.L, l.family], [12, 50, 'simhash']); // 50/4096 ≥ 0.01 > 50/8192
  const r = resolveLayers(spec, { family: 'dwta', R: 7 })[1]!.hash!;
  assert.deepEqual([r.K, r.L, r.R, r.sources.R], [14, 256, 7, 'flag']);
});

test('the output sparsity is autotuned from the class count; dense layers have no hash', () => {
  assert.equal(autoSparsity(2000), 1);
  assert.equal(autoSparsity(100000), 2048 / 100000);
  assert.equal(autoSparsity(10000), 0.05);
  assert.equal(autoSparsity(10_000_000), 0.005);
  const layers = resolveLayers(
    {
      input: 50,
      layers: [
        { dim: 64, activation: 'relu' },
        { dim: 3000, activation: 'softmax' },
      ],
    },
    { family: 'dwta' },
  );
  assert.deepEqual(
    layers.map((l) => [l.sparsity, l.hash]),
    [
      [1, null],
      [1, null],
    ],
  );
  const big = resolveLayers(
    {
      input: 50,
      layers: [
        { dim: 64, activation: 'relu' },
        { dim: 50000, activation: 'softmax' },
      ],
    },
    { family: 'dwta', outputSparsity: 0.01 },
  );
  assert.deepEqual([big[1]!.sparsity, big[1]!.sparsitySource, big[1]!.hash?.family], [0.01, 'flag', 'dwta']);
});
