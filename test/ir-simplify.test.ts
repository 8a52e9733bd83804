import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers, summarise } from '../src/ir/lower.js';
import { fixture, int64s, tensor } from './ir-fixture.js';

const S = [1, 2, 3, 4];

test('Identity and inference Dropout disappear; the graph output keeps its name', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: S },
      outputs: ['y'],
      nodes: [
        { op: 'Identity', inputs: ['x'], outputs: 'a', shape: S },
        { op: 'Relu', inputs: ['a'], outputs: 'b', shape: S },
        { op: 'Dropout', inputs: ['b'], outputs: ['c', ''], shape: S },
        { op: 'Identity', inputs: ['c'], outputs: 'y', shape: S },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => [l.op, l.inputs, l.outputs]),
    [['relu', ['x'], ['y']]],
  );
  assert.deepEqual([...g.shapes.keys()].sort(), ['x', 'y']);
});

test('Identity from a graph input straight to a graph output stays as a copy layer', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: S },
      outputs: ['y'],
      nodes: [{ op: 'Identity', inputs: ['x'], outputs: 'y', shape: S }],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => [l.op, l.macs]),
    [['identity', 0]],
  );
});

test('a chain of views collapses into one reshape; a shape-preserving view vanishes', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: S },
      outputs: ['y'],
      constants: { s1: int64s([1, 24]), s2: int64s([1, 24]), ax: int64s([1]) },
      nodes: [
        { op: 'Flatten', inputs: ['x'], outputs: 'f', shape: [1, 24], attrs: { axis: 1 } },
        { op: 'Reshape', inputs: ['f', 's1'], outputs: 'r', shape: [1, 24] },
        { op: 'Unsqueeze', inputs: ['r', 'ax'], outputs: 'u', shape: [1, 1, 24] },
        { op: 'Relu', inputs: ['u'], outputs: 'y', shape: [1, 1, 24] },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['reshape', 'relu'],
  );
  const view = g.layers[0]!;
  assert.deepEqual([view.inputs, view.outputs, view.attrs.shape, view.macs, Object.keys(view.params)], [['x'], ['u'], [1, 1, 24], 0, []]);
});

test('views that end at the original shape vanish entirely', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: S },
      outputs: ['y'],
      constants: { back: int64s(S) },
      nodes: [
        { op: 'Flatten', inputs: ['x'], outputs: 'f', shape: [1, 24] },
        { op: 'Reshape', inputs: ['f', 'back'], outputs: 'r', shape: S },
        { op: 'Sigmoid', inputs: ['r'], outputs: 'y', shape: S },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => [l.op, l.inputs]),
    [['sigmoid', ['x']]],
  );
});

test('a view whose intermediate is read elsewhere is not merged, and keeps its own op name', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: S },
      outputs: ['y', 'f'],
      constants: { ax: int64s([0]) },
      nodes: [
        { op: 'Flatten', inputs: ['x'], outputs: 'f', shape: [1, 24] },
        { op: 'Unsqueeze', inputs: ['f', 'ax'], outputs: 'y', shape: [1, 1, 24] },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['flatten', 'unsqueeze'],
  );
  assert.deepEqual(g.layers[1]!.attrs.shape, [1, 1, 24]);
});

test('non-tunable op counts follow the documented convention', () => {
  const X = [1, 4, 8, 8];
  const g = lowerToLayers(
    fixture({
      inputs: { x: X },
      outputs: ['p', 'gp', 'sm', 't'],
      constants: {},
      nodes: [
        {
          op: 'MaxPool',
          inputs: ['x'],
          outputs: 'p',
          shape: [1, 4, 4, 4],
          attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 0, 0] },
        },
        { op: 'GlobalAveragePool', inputs: ['x'], outputs: 'gp', shape: [1, 4, 1, 1] },
        { op: 'Softmax', inputs: ['x'], outputs: 'sm', shape: X, attrs: { axis: -1 } },
        { op: 'Transpose', inputs: ['x'], outputs: 't', shape: [1, 8, 8, 4], attrs: { perm: [0, 2, 3, 1] } },
      ],
    }),
  );
  const byOp = Object.fromEntries(g.layers.map((l) => [l.op, l]));
  assert.equal(byOp.maxpool!.macs, 64 * 9);
  assert.deepEqual(byOp.maxpool!.attrs.pads, [1, 1, 0, 0]);
  assert.deepEqual(byOp.maxpool!.attrs.kernel, [3, 3]);
  assert.equal(byOp.globalaveragepool!.macs, 256);
  assert.equal(byOp.softmax!.macs, 256);
  assert.equal(byOp.softmax!.attrs.axis, 3);
  assert.equal(byOp.transpose!.macs, 0);
  assert.deepEqual(summarise(g), { layers: 4, tunableLayers: 0, uniqueWorkloads: 0, macs: 576 + 512 });
});

test('layer names default to opType_index; control constants become attrs, data constants params', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: [2, 6] },
      outputs: ['y'],
      constants: { starts: int64s([1]), ends: int64s([5]), axes: int64s([-1]), scale: tensor([4], [1, 2, 3, 4]) },
      nodes: [
        { op: 'Slice', inputs: ['x', 'starts', 'ends', 'axes'], outputs: 's', shape: [2, 4] },
        { op: 'Mul', inputs: ['s', 'scale'], outputs: 'y', shape: [2, 4], name: 'scale_it' },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.name),
    ['Slice_0', 'scale_it'],
  );
  assert.deepEqual([g.layers[0]!.attrs.starts, g.layers[0]!.attrs.ends, g.layers[0]!.attrs.axes], [[1], [5], [1]]);
  assert.deepEqual(Object.keys(g.layers[0]!.params), []);
  assert.deepEqual(Object.keys(g.layers[1]!.params), ['B']);
  assert.equal(g.layers[1]!.macs, 8);
});
