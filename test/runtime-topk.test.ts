/**
 * TopK in the native runtime against ONNX Runtime: largest and smallest, along the last axis and an
 * inner one, ties resolved in index order as ONNX requires, K = D, and a 100k-class row (the
 * extreme-classification shape, where the vector skip of the scan does the work). Values and
 * int64 indices both checked.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModelSpec } from '../src/onnx/encode.js';
import { f32, runAgainstOrt, type Feed } from './runtime-harness.js';

function topkModel(shape: number[], k: number, attrs: Record<string, number>): ModelSpec {
  const axis = attrs['axis'] ?? -1;
  const a = axis < 0 ? axis + shape.length : axis;
  const out = shape.map((d, i) => (i === a ? k : d));
  return {
    inputs: [{ name: 'x', dtype: 'float32', shape }],
    outputs: [
      { name: 'values', dtype: 'float32', shape: out },
      { name: 'indices', dtype: 'int64', shape: out },
    ],
    initializers: [['k', { dtype: 'int64', dims: [1], data: new Float64Array([k]) }]],
    nodes: [{ op: 'TopK', inputs: ['x', 'k'], outputs: ['values', 'indices'], attrs }],
  };
}

async function check(shape: number[], k: number, attrs: Record<string, number>, feed: Feed = f32(shape, 7)) {
  const { ours, reference } = await runAgainstOrt(topkModel(shape, k, attrs), [feed]);
  assert.deepEqual(Array.from(ours[0] as Float32Array), Array.from(reference[0] as Float32Array), 'values');
  assert.deepEqual(Array.from(ours[1] as BigInt64Array), Array.from(reference[1] as BigInt64Array), 'indices');
}

test('TopK largest and smallest, last and inner axes, K = D', async () => {
  await check([3, 17], 5, { axis: -1, largest: 1 });
  await check([3, 17], 4, { axis: -1, largest: 0 });
  await check([2, 9, 4], 3, { axis: 1, largest: 1 });
  await check([2, 9, 4], 9, { axis: 1, largest: 0 });
  await check([5, 33], 33, { axis: 1 });
});

test('TopK ties come out in index order, as ONNX specifies', async () => {
  const data = new Float32Array([1, 3, 3, 2, 3, 1, 0, 3, 2, 2, 1, 3]);
  await check([2, 6], 3, { axis: 1, largest: 1 }, { dtype: 'float32', dims: [2, 6], data });
  await check([2, 6], 3, { axis: 1, largest: 0 }, { dtype: 'float32', dims: [2, 6], data });
});

test('TopK over 100k classes', async () => {
  await check([2, 100_003], 5, { axis: -1, largest: 1 }, f32([2, 100_003], 11, -3, 3));
});
