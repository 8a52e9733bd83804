import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers } from '../src/ir/lower.js';
import { fixture } from './ir-fixture.js';

const X = [2, 3, 4];

function softmax(opset: number, axis?: number) {
  return lowerToLayers(
    fixture({
      inputs: { x: X },
      outputs: ['y'],
      constants: {},
      opset,
      nodes: [{ op: 'Softmax', inputs: ['x'], outputs: 'y', shape: X, ...(axis === undefined ? {} : { attrs: { axis } }) }],
    }),
  ).layers[0]!;
}

test('before opset 13, Softmax on a non-last axis flattens to 2-D (coerce2d), given or defaulted', () => {
  assert.equal(softmax(11).attrs.coerce2d, 1);
  assert.equal(softmax(11, 1).attrs.coerce2d, 1);
  assert.equal(softmax(11, 0).attrs.coerce2d, 1);
});

test('Softmax on the last axis, or from opset 13 on, is a per-axis softmax', () => {
  assert.equal(softmax(11, 2).attrs.coerce2d, undefined);
  assert.equal(softmax(11, -1).attrs.coerce2d, undefined);
  assert.equal(softmax(13, 1).attrs.coerce2d, undefined);
  assert.equal(softmax(13).attrs.coerce2d, undefined);
});
