import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pickTask, taskCost, taskPriority, type TaskProgress } from '../src/tune/trial-allocator.js';

const task = (weight: number, history: number[], exhausted = false): TaskProgress => ({ weight, history, exhausted });

test('task cost is the geometric mean of the per-level bests', () => {
  assert.ok(Math.abs(taskCost({ 0: 1, 1: 4 }) - 2) < 1e-12);
  assert.equal(taskCost({}), Infinity);
});

test('warm-up batches go first, in task order', () => {
  assert.equal(pickTask([task(1, [5, 5]), task(1, []), task(9, [])]), 1);
});

test('an improving task beats a flat one of equal weight and cost', () => {
  const flat = task(1, [10, 10, 10, 10]),
    improving = task(1, [16, 14, 12, 10]);
  assert.ok(taskPriority(improving) > taskPriority(flat));
  assert.equal(pickTask([flat, improving]), 1);
});

test('weight scales priority: a frequent layer wins an otherwise equal contest', () => {
  assert.equal(pickTask([task(1, [10, 9, 8]), task(3, [10, 9, 8])]), 1);
  assert.ok(Math.abs(taskPriority(task(3, [10, 9, 8])) - 3 * taskPriority(task(1, [10, 9, 8]))) < 1e-12);
});

test('exhausted tasks are skipped, failing tasks go last, nothing left gives undefined', () => {
  assert.equal(pickTask([task(5, [3, 2], true), task(1, [3, 3])]), 1);
  assert.equal(pickTask([task(5, [Infinity, Infinity]), task(1, [3, 3])]), 1);
  assert.equal(pickTask([task(1, [1], true)]), undefined);
});

test('on synthetic improvement curves the budget follows weight × remaining improvement', () => {
  // task i's best cost after n trials: floor_i + gap_i / (1 + n / 4)  (made-up curves)
  const curves = [
    { weight: 1, floor: 1, gap: 0.1 }, // nearly converged, rare
    { weight: 4, floor: 1, gap: 5 }, // frequent and far from its floor
    { weight: 1, floor: 1, gap: 5 }, // far from its floor, rare
  ];
  const hist: number[][] = curves.map(() => []);
  for (let step = 0; step < 120; step++) {
    const i = pickTask(curves.map((c, k) => task(c.weight, hist[k]!)))!;
    const c = curves[i]!;
    for (let b = 0; b < 2; b++) hist[i]!.push(c.floor + c.gap / (1 + hist[i]!.length / 4));
  }
  const trials = hist.map((h) => h.length);
  assert.ok(
    trials.every((n) => n >= 2),
    'every task had its warm-up',
  );
  assert.ok(trials[1]! > trials[2]!, `weight matters: ${trials}`);
  assert.ok(trials[2]! > trials[0]!, `remaining improvement matters: ${trials}`);
});
