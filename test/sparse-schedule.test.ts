/** The table schedule: n rehashes per epoch means exactly n inside every epoch, evenly spaced; rebuilds win over rehashes; nothing at the epoch's end. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultTableRefresh, indexAction, rehashEveryFor, REHASHES_PER_EPOCH } from '../src/sparse/table-refresh.js';

function actions(rows: number, batch: number, s: { rehashEvery: number; rebuildEvery: number }) {
  const out: [number, string][] = [];
  for (let start = 0; start < rows; start += batch) {
    const a = indexAction(s, start, Math.min(rows, start + batch), rows);
    if (a) out.push([start + batch, a]);
  }
  return out;
}

test('n rehashes per epoch are n evenly spaced rehashes inside the epoch', () => {
  for (const [rows, batch] of [
    [100000, 256],
    [3000, 64],
    [5000, 100],
  ] as const) {
    for (const n of [0, 1, 3, 8]) {
      const got = actions(rows, batch, { rehashEvery: rehashEveryFor(rows, batch, n), rebuildEvery: 0 });
      assert.equal(got.length, n, `${n} per epoch over ${rows} rows, batch ${batch}`);
      assert.ok(got.every(([, a]) => a === 'rehash'));
    }
  }
  assert.deepEqual(
    actions(100000, 256, defaultTableRefresh(100000, 256)).map(([at]) => at),
    [50176],
  );
  assert.equal(REHASHES_PER_EPOCH, 1);
});

test('a rebuild at the same point replaces the rehash; the epoch end triggers nothing (the next epoch rebuilds)', () => {
  assert.deepEqual(actions(1000, 100, { rehashEvery: 200, rebuildEvery: 400 }), [
    [200, 'rehash'],
    [400, 'rebuild'],
    [600, 'rehash'],
    [800, 'rebuild'],
  ]);
  assert.equal(indexAction({ rehashEvery: 100, rebuildEvery: 0 }, 900, 1000, 1000), null);
});
