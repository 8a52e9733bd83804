import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dominates, nonDominated, regretOf, bestPerLevel, selectFamily, type FamilyCandidate } from '../src/space/family.js';
import { makeSchedule } from '../src/space/knobs.js';
import type { ScheduleFeatures } from '../src/space/features.js';

// Hand-made latency tables: these numbers are test inputs, not measurements.
function cand(id: string, latencyMs: Record<string, number>, l2 = 1000, chunks = 4): FamilyCandidate {
  const features: ScheduleFeatures = {
    footprintBytes: { l1: 100, l2, l3: l2, total: 10 * l2 },
    parallelChunks: chunks,
    threads: 1,
    loadBalance: 1,
    arithmeticIntensity: 1,
    registerTile: 8,
    reductionSplit: 1,
    flops: 1e6,
  };
  const schedule = makeSchedule({
    vec: 16,
    regOc: 1,
    regCols: 8,
    tileIc: 1,
    tileOc: 1,
    tileRows: 1,
    tileCols: 1,
    loopOrder: 'oc_outer',
    parallelAxis: 'oc',
    unroll: 1,
    threads: 1,
  });
  return { id, schedule, features, symbol: `vt_k${id}`, latencyMs };
}

test('dominance: ≤ at every level a has and < at one; equal tables dominate neither way', () => {
  const a = cand('a', { 0: 1, 1: 2 }),
    b = cand('b', { 0: 1.1, 1: 2.1 }),
    c = cand('c', { 0: 2, 1: 1 });
  assert.equal(dominates(a, b), true);
  assert.equal(dominates(b, a), false);
  assert.equal(dominates(a, c), false);
  assert.equal(dominates(c, a), false);
  const twin = cand('twin', { 0: 1, 1: 2 });
  assert.equal(dominates(a, twin), false);
  assert.equal(dominates(twin, a), false);
  const tieButBetterOnce = cand('t', { 0: 1, 1: 1.9 });
  assert.equal(dominates(tieButBetterOnce, a), true);
  assert.deepEqual(
    nonDominated([a, b, c]).map((x) => x.id),
    ['a', 'c'],
  );
});

test('a candidate measured at fewer levels never dominates one with more', () => {
  const quietOnly = cand('q', { 0: 0.5 }); // e.g. all cores: no co-runner possible
  const full = cand('f', { 0: 0.9, 1: 1.0 });
  assert.equal(dominates(quietOnly, full), false);
  assert.equal(dominates(full, quietOnly), false);
  const fam = selectFamily([quietOnly, full], { maxVersions: 5 });
  assert.deepEqual(fam.versions.map((v) => v.id).sort(), ['f', 'q']);
  assert.deepEqual(fam.regretPercent, { 0: 0, 1: 0 });
});

test('regret per level is kept best / best measured − 1', () => {
  const a = cand('a', { 0: 1, 1: 4 }),
    b = cand('b', { 0: 2, 1: 2 });
  const best = bestPerLevel([a, b]);
  assert.deepEqual(best, { 0: 1, 1: 2 });
  assert.deepEqual(regretOf([a], best), { 0: 0, 1: 1 });
  assert.deepEqual(regretOf([b], best), { 0: 1, 1: 0 });
});

// Q wins quiet, H wins heavy, M is decent everywhere.
const Q = cand('Q', { 0: 1, 1: 2, 2: 3 }, 8000, 2);
const H = cand('H', { 0: 3, 1: 2, 2: 1 }, 1000, 64);
const M = cand('M', { 0: 1.2, 1: 1.1, 2: 1.3 }, 4000, 16);

test('the family minimises the worst regret for each cap', () => {
  const one = selectFamily([Q, H, M], { maxVersions: 1 });
  assert.deepEqual(
    one.versions.map((v) => v.id),
    ['M'],
  );
  assert.equal(Math.round(one.regretPercent['2']! * 10) / 10, 30);
  const two = selectFamily([Q, H, M], { maxVersions: 2 });
  // {H,M}: worst 20% (level 0); {Q,M}: worst 30% (level 2); {Q,H}: worst 82% (level 1)
  assert.deepEqual(
    two.versions.map((v) => v.id),
    ['M', 'H'],
  );
  assert.ok(Math.abs(two.regretPercent['0']! - 20) < 1e-9);
  const three = selectFamily([Q, H, M], { maxVersions: 5 });
  assert.equal(three.count, 3);
  assert.deepEqual(three.regretPercent, { 0: 0, 1: 0, 2: 0 });
});

test('kept versions are ordered locality-heavy → parallelism-heavy', () => {
  const fam = selectFamily([H, M, Q], { maxVersions: 5 });
  assert.deepEqual(
    fam.versions.map((v) => v.id),
    ['Q', 'M', 'H'],
  );
});

test('tolerance prefers the smaller family within the slack', () => {
  const fam = selectFamily([Q, H, M], { maxVersions: 5, tolerance: 0.25 });
  assert.deepEqual(fam.versions.map((v) => v.id).sort(), ['H', 'M']);
  const none = selectFamily([Q, H, M], { maxVersions: 5, tolerance: 0 });
  assert.equal(none.count, 3);
});

test('the ≤ cap holds and the exhaustive choice matches brute force on a 7-level table', () => {
  const levels = 7;
  // candidate i wins level i; elsewhere it is slower by a per-pair amount (deterministic, varied)
  const cands = Array.from({ length: 7 }, (_, i) =>
    cand(
      `c${i}`,
      Object.fromEntries(Array.from({ length: levels }, (_, l) => [String(l), l === i ? 1 : 1 + (1 + ((i * 7 + l * 3) % 11)) / 10])),
    ),
  );
  const fam = selectFamily(cands, { maxVersions: 5 });
  assert.ok(fam.count <= 5);
  const best = bestPerLevel(cands);
  let bruteWorst = Infinity;
  const walk = (start: number, set: FamilyCandidate[]) => {
    if (set.length > 0) bruteWorst = Math.min(bruteWorst, Math.max(...Object.values(regretOf(set, best))));
    if (set.length === 5) return;
    for (let i = start; i < cands.length; i++) walk(i + 1, [...set, cands[i]!]);
  };
  walk(0, []);
  assert.ok(Math.abs(Math.max(...Object.values(fam.regretPercent)) / 100 - bruteWorst) < 1e-12);
  assert.ok(bruteWorst > 0, 'with 7 winners and 5 slots some level must have regret');
  const greedy = selectFamily(cands, { maxVersions: 5, exhaustiveLimit: 0 });
  assert.ok(greedy.count <= 5);
  assert.ok(Math.max(...Object.values(greedy.regretPercent)) / 100 >= bruteWorst - 1e-12);
});

test('dominated candidates are counted and never kept; input order does not matter', () => {
  const slow = cand('slow', { 0: 5, 1: 5, 2: 5 });
  const fam = selectFamily([slow, Q, H, M], { maxVersions: 5 });
  assert.equal(fam.dominated, 1);
  assert.equal(fam.candidates, 4);
  assert.ok(!fam.versions.some((v) => v.id === 'slow'));
  assert.deepEqual(
    selectFamily([M, slow, H, Q]).versions.map((v) => v.id),
    fam.versions.map((v) => v.id),
  );
});

test('no ok candidates: an empty family; a bad cap is rejected', () => {
  assert.equal(selectFamily([]).count, 0);
  assert.equal(selectFamily([cand('x', {})]).count, 0);
  assert.throws(() => selectFamily([Q], { maxVersions: 0 }), RangeError);
});
