import test from 'node:test';
import assert from 'node:assert/strict';
import { flatClaim, formBlock, idleCores, peakOf, shareScale, thresholdFor } from '../src/schedule/blocks.js';
import { blockQuietMs, blockShareMs, unitBestMs, unitBestVersion } from '../src/schedule/requirement.js';
import { bestVersion } from '../src/schedule/model-table.js';
import { handPlan, JAGGED, JAGGED_QOS_MS } from './schedule-fixture.js';

const plan = () => handPlan('jagged', JAGGED, 16, JAGGED_QOS_MS);

test('requirement: QoS split by single-core latency share; each layer needs the fewest cores meeting its share', () => {
  const p = plan();
  assert.deepEqual(
    [...p.shareMs].map((x) => Number(x.toFixed(6))),
    Array(8).fill(0.5),
  );
  assert.deepEqual([...p.requirement], [2, 2, 2, 6, 2, 2, 2, 2]);
  assert.equal(p.averageRequirement, 2.5);
  assert.equal(p.peakRequirement, 6);
  assert.ok(p.feasible.every(Boolean));
});

test('a spike splits a block: at threshold 0 the block before the spike ends there and the spike starts the next', () => {
  const p = plan();
  assert.deepEqual(formBlock(p, 0, 0), { first: 0, last: 2 });
  assert.deepEqual(formBlock(p, 3, 0), { first: 3, last: 7 });
  // A threshold that covers the spike (6 ≤ 2.5 + 3.5) leaves one block for the whole model.
  assert.deepEqual(formBlock(p, 0, 3.5), { first: 0, last: 7 });
  assert.deepEqual(formBlock(p, 0, 3.4), { first: 0, last: 2 });
});

test('borrowing keeps the block within its QoS share: the spike runs below its own requirement, the block meets its summed share', () => {
  const p = plan();
  const b = formBlock(p, 3, 0);
  const c = flatClaim(p, b);
  assert.equal(c, 3, 'block 3..7: 400 + 4600/c ≤ 2500 µs first holds at 3 cores');
  assert.ok(c < peakOf(p, b), 'the spike borrowed: the block claims fewer cores than the spike alone needs');
  assert.ok(blockQuietMs(p, b.first, b.last, c) <= blockShareMs(p, b.first, b.last) + 1e-12, 'the block as a whole meets its share');
  assert.ok(blockQuietMs(p, 3, 3, c) > p.shareMs[3]!, 'the spike alone misses its own share at the block claim');
  assert.ok(
    blockQuietMs(p, b.first, b.last, c - 1) > blockShareMs(p, b.first, b.last),
    'one core fewer would miss it: the claim is the fewest',
  );
});

test('threshold at zero idle and at full idle', () => {
  assert.equal(idleCores(16, 20), 0, 'more average demand than cores: nothing idle');
  assert.equal(thresholdFor(idleCores(16, 20), 2.5, 20), 0);
  // Alone on an empty machine: every idle core is this model's.
  assert.equal(idleCores(16, 2.5), 13.5);
  assert.equal(thresholdFor(idleCores(16, 2.5), 2.5, 2.5), 13.5);
  // Two models: idle cores shared in proportion to appetite.
  assert.equal(thresholdFor(12, 1, 4), 3);
  assert.equal(thresholdFor(12, 3, 4), 9);
  const p = plan();
  // At full idle the whole model is one block: its cheap layers sprint on the block's cores, the spike borrows their slack.
  const b = formBlock(p, 0, 13.5);
  assert.deepEqual(b, { first: 0, last: 7 });
  assert.equal(flatClaim(p, b), 3, "400 + 7600/c ≤ 4000 µs first holds at 3 cores, half the spike's own requirement");
});

test('deadline-aware shares: a request that waited gets tighter shares, one ahead gets looser ones', () => {
  const p = plan();
  assert.equal(shareScale(p, 0, 0), 1);
  assert.equal(shareScale(p, 4, 2), 1, 'half the layers done in half the budget: on schedule');
  assert.equal(shareScale(p, 4, 3), 0.5, '1 ms left for 2 ms of shares');
  assert.equal(shareScale(p, 4, 1), 1.5);
  assert.equal(shareScale(p, 4, 5), 0, 'past the QoS');
  const b = { first: 4, last: 7 };
  assert.ok(flatClaim(p, b, 0.5) > flatClaim(p, b, 1));
});

test("a unit's best version and its latency come from the plan's tables at integer levels, and equal bestVersion's at every level", () => {
  // Version 0 slows down 3x at level 4; version 1 is 1.5x slower quiet and immune: the best flips between levels.
  const layers = [
    { us1: 1000, noisy: 3, versions: [[1.5, 1.5]] as const },
    { us1: 400, serialUs: 100, noisy: 1.2, versions: [[0.9, 4]] as const },
  ];
  const p = handPlan('flips', layers, 4, 10);
  const picks = new Set<number>();
  for (let u = 0; u < layers.length; u++) {
    for (let c = 1; c <= 4; c++) {
      for (const level of [0, 1, 2, 2.5, 3, 3.75, 4]) {
        const want = bestVersion(p.table.units[u]!, 4, c, level);
        assert.equal(unitBestVersion(p, u, c, level), want.v, `unit ${u}, ${c} cores, level ${level}`);
        assert.equal(unitBestMs(p, u, c, level), want.ms, `unit ${u}, ${c} cores, level ${level}`);
        picks.add(want.v);
      }
    }
  }
  assert.deepEqual([...picks].sort(), [0, 1], 'the case exercises both versions');
});
