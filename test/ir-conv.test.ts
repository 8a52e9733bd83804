import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers } from '../src/ir/lower.js';
import { isVeltairError } from '../src/errors.js';
import { fixture, tensor } from './ir-fixture.js';

test('depthwise conv: groups = cin, MACs count one input channel per output', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: [1, 32, 112, 112] },
      outputs: ['y'],
      constants: { w: tensor([32, 1, 3, 3]) },
      nodes: [{ op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: [1, 32, 112, 112], attrs: { group: 32, pads: [1, 1, 1, 1] } }],
    }),
  );
  const l = g.layers[0]!;
  assert.equal(l.op, 'conv2d');
  assert.equal(l.attrs.groups, 32);
  const w = l.workload;
  assert.ok(w !== undefined && w.op === 'conv2d');
  assert.equal(w.groups, w.cin);
  assert.equal(l.macs, 32 * 112 * 112 * 9);
});

test('auto_pad SAME_UPPER with stride 2 is resolved to explicit [t,l,b,r] pads', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: [1, 3, 224, 224] },
      outputs: ['y'],
      constants: { w: tensor([8, 3, 3, 3]) },
      nodes: [
        { op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: [1, 8, 112, 112], attrs: { auto_pad: 'SAME_UPPER', strides: [2, 2] } },
      ],
    }),
  );
  const l = g.layers[0]!;
  assert.deepEqual(l.attrs.pads, [0, 0, 1, 1]);
  assert.deepEqual(l.attrs.strides, [2, 2]);
  assert.deepEqual(l.attrs.kernel, [3, 3]);
  assert.equal(l.macs, 8 * 112 * 112 * 3 * 9);
});

test('1-D conv is lowered as a 2-D conv with H = 1', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: [1, 4, 10] },
      outputs: ['y'],
      constants: { w: tensor([6, 4, 3]) },
      nodes: [{ op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: [1, 6, 5], attrs: { pads: [1, 0], strides: [2] } }],
    }),
  );
  const l = g.layers[0]!;
  const w = l.workload;
  assert.ok(w !== undefined && w.op === 'conv2d');
  assert.deepEqual([w.h, w.w, w.kh, w.kw, w.oh, w.ow, w.strideH, w.strideW], [1, 10, 1, 3, 1, 5, 1, 2]);
  assert.deepEqual(w.pads, [0, 1, 0, 0]);
  assert.deepEqual(l.params.weight?.dims, [6, 4, 1, 3]);
  assert.deepEqual(l.inputShapes, [[1, 4, 10]]);
  assert.equal(l.macs, 6 * 5 * 4 * 3);
});

function expectError(fn: () => unknown, code: string, mentions: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isVeltairError(e), `expected a VeltairError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.match(e.message, new RegExp(mentions));
    assert.ok(e.hint.length > 0);
    return true;
  });
}

test('a conv whose weight is not a constant is rejected, naming the node', () => {
  expectError(
    () =>
      lowerToLayers(
        fixture({
          inputs: { x: [1, 2, 4, 4], w: [3, 2, 1, 1] },
          outputs: ['y'],
          nodes: [{ op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: [1, 3, 4, 4], name: 'dyn_conv' }],
        }),
      ),
    'UNSUPPORTED_OPS',
    'dyn_conv',
  );
});

test('a channel mismatch between input and weight is a SHAPE_MISMATCH', () => {
  expectError(
    () =>
      lowerToLayers(
        fixture({
          inputs: { x: [1, 5, 4, 4] },
          outputs: ['y'],
          constants: { w: tensor([3, 2, 1, 1]) },
          nodes: [{ op: 'Conv', inputs: ['x', 'w'], outputs: 'y', shape: [1, 3, 4, 4], name: 'bad' }],
        }),
      ),
    'SHAPE_MISMATCH',
    'bad',
  );
});

test('MACs beyond 2^53 are a DIM_OVERFLOW naming the node, not a silently rounded count', () => {
  const big = 2 ** 26; // every tensor has 2^52 elements (still exact); the MACs are 2^78
  expectError(
    () =>
      lowerToLayers(
        fixture({
          inputs: { a: [big, big], b: [big, big] },
          outputs: ['y'],
          nodes: [{ op: 'MatMul', inputs: ['a', 'b'], outputs: 'y', shape: [big, big], name: 'huge_mm' }],
        }),
      ),
    'DIM_OVERFLOW',
    'huge_mm',
  );
  expectError(
    () =>
      lowerToLayers(
        fixture({
          inputs: { a: [big, big, 4] },
          outputs: ['y'],
          nodes: [{ op: 'Relu', inputs: ['a'], outputs: 'y', shape: [big, big, 4], name: 'huge_relu' }],
        }),
      ),
    'DIM_OVERFLOW',
    'huge_relu',
  );
});
