import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers } from '../src/ir/lower.js';
import { fixture, scalar } from './ir-fixture.js';

const QK = [1, 16, 384, 64];
const SCORES = [1, 16, 384, 384];

test('attention Q·Kᵀ with Kᵀ a last-two-axes Transpose → batch_matmul transB, Transpose consumed', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { q: QK, k: QK },
      outputs: ['s'],
      nodes: [
        { op: 'Transpose', inputs: ['k'], outputs: 'kt', shape: [1, 16, 64, 384], attrs: { perm: [0, 1, 3, 2] } },
        { op: 'MatMul', inputs: ['q', 'kt'], outputs: 's', shape: SCORES, name: 'qk' },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['batch_matmul'],
  );
  const l = g.layers[0]!;
  assert.deepEqual(l.inputs, ['q', 'k']);
  assert.deepEqual(l.inputShapes, [QK, QK]);
  assert.equal(l.attrs.transB, 1);
  const w = l.workload;
  assert.ok(w !== undefined && w.op === 'batch_matmul');
  assert.deepEqual({ batch: w.batch, m: w.m, k: w.k, n: w.n, transB: w.transB }, { batch: 16, m: 384, k: 64, n: 384, transB: true });
  assert.equal(l.macs, 16 * 384 * 64 * 384);
  assert.equal(g.shapes.has('kt'), false);
});

test('a Transpose that something else also reads stays; the batch_matmul reads it plainly', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { q: QK, k: QK },
      outputs: ['s', 'kt'],
      nodes: [
        { op: 'Transpose', inputs: ['k'], outputs: 'kt', shape: [1, 16, 64, 384], attrs: { perm: [0, 1, 3, 2] } },
        { op: 'MatMul', inputs: ['q', 'kt'], outputs: 's', shape: SCORES },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['transpose', 'batch_matmul'],
  );
  assert.equal(g.layers[1]!.workload?.op === 'batch_matmul' && g.layers[1]!.workload.transB, false);
});

test('a head-splitting Transpose (not a last-two swap) is not folded into transB', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { q: QK, k: [1, 384, 16, 64] },
      outputs: ['s'],
      nodes: [
        { op: 'Transpose', inputs: ['k'], outputs: 'kt', shape: [1, 16, 64, 384], attrs: { perm: [0, 2, 3, 1] } },
        { op: 'MatMul', inputs: ['q', 'kt'], outputs: 's', shape: SCORES },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['transpose', 'batch_matmul'],
  );
});

test('scores·V, then a residual-free scale: batch_matmul without transB; the Div stays a layer', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { p: SCORES, v: QK },
      outputs: ['o'],
      constants: { d: scalar(8) },
      nodes: [
        { op: 'MatMul', inputs: ['p', 'v'], outputs: 'c', shape: QK },
        { op: 'Div', inputs: ['c', 'd'], outputs: 'o', shape: QK },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['batch_matmul', 'div'],
  );
  const w = g.layers[0]!.workload;
  assert.ok(w !== undefined && w.op === 'batch_matmul');
  assert.deepEqual({ batch: w.batch, m: w.m, k: w.k, n: w.n, transB: w.transB }, { batch: 16, m: 384, k: 384, n: 64, transB: false });
});

test('two activations with truly broadcast batch dims stay a non-tunable matmul with exact MACs', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { a: [2, 1, 4, 8], b: [1, 3, 8, 5] },
      outputs: ['y'],
      nodes: [{ op: 'MatMul', inputs: ['a', 'b'], outputs: 'y', shape: [2, 3, 4, 5] }],
    }),
  );
  const l = g.layers[0]!;
  assert.deepEqual({ op: l.op, tunable: l.tunable, macs: l.macs }, { op: 'matmul', tunable: false, macs: 2 * 3 * 4 * 5 * 8 });
});

test('a 2-D activation right operand folds the left batch into rows', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { a: [2, 3, 4, 8], b: [8, 5] },
      outputs: ['y'],
      nodes: [{ op: 'MatMul', inputs: ['a', 'b'], outputs: 'y', shape: [2, 3, 4, 5] }],
    }),
  );
  const w = g.layers[0]!.workload;
  assert.ok(w !== undefined && w.op === 'batch_matmul');
  assert.deepEqual({ batch: w.batch, m: w.m }, { batch: 1, m: 24 });
});
