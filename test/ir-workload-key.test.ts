import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers, summarise } from '../src/ir/lower.js';
import { canonicalForm } from '../src/ir/workload.js';
import { fixture, tensor, type Attr, type FixtureNode } from './ir-fixture.js';

interface ConvCase {
  readonly shape?: readonly number[];
  readonly out?: readonly number[];
  readonly attrs?: Readonly<Record<string, Attr>>;
  readonly weight?: readonly number[];
  readonly act?: 'Relu' | 'Sigmoid';
  readonly bias?: boolean;
}

/** One conv (+ optional activation) and its workload key. */
function convKey(c: ConvCase = {}): string {
  const shape = c.shape ?? [1, 8, 10, 10];
  const out = c.out ?? [1, 8, 10, 10];
  const weight = c.weight ?? [8, 8, 3, 3];
  const nodes: FixtureNode[] = [
    {
      op: 'Conv',
      inputs: c.bias === false ? ['x', 'w'] : ['x', 'w', 'b'],
      outputs: 'y',
      shape: out,
      attrs: c.attrs ?? { pads: [1, 1, 1, 1] },
    },
  ];
  if (c.act !== undefined) nodes.push({ op: c.act, inputs: ['y'], outputs: 'z', shape: out });
  const g = lowerToLayers(
    fixture({
      inputs: { x: shape },
      outputs: [c.act === undefined ? 'y' : 'z'],
      constants: { w: tensor(weight), b: tensor([weight[0]!]) },
      nodes,
    }),
  );
  return g.layers[0]!.workload!.key;
}

test('identical layers share a key; two in one model count as one unique workload', () => {
  assert.equal(convKey(), convKey());
  const S = [1, 8, 10, 10];
  const g = lowerToLayers(
    fixture({
      inputs: { x: S },
      outputs: ['z'],
      constants: { w1: tensor([8, 8, 3, 3]), w2: tensor([8, 8, 3, 3]) },
      nodes: [
        { op: 'Conv', inputs: ['x', 'w1'], outputs: 'y', shape: S, attrs: { pads: [1, 1, 1, 1] } },
        { op: 'Conv', inputs: ['y', 'w2'], outputs: 'z', shape: S, attrs: { pads: [1, 1, 1, 1] } },
      ],
    }),
  );
  assert.equal(g.layers[0]!.workload!.key, g.layers[1]!.workload!.key);
  assert.deepEqual(summarise(g), { layers: 2, tunableLayers: 2, uniqueWorkloads: 1, macs: 2 * 8 * 100 * 8 * 9 });
});

test('any change of shape, attribute or epilogue kind changes the key', () => {
  const base = convKey();
  const variants: Record<string, string> = {
    batch: convKey({ shape: [2, 8, 10, 10], out: [2, 8, 10, 10] }),
    spatial: convKey({ shape: [1, 8, 12, 10], out: [1, 8, 12, 10] }),
    cout: convKey({ weight: [16, 8, 3, 3], out: [1, 16, 10, 10] }),
    stride: convKey({ attrs: { pads: [1, 1, 1, 1], strides: [2, 2] }, out: [1, 8, 5, 5] }),
    pads: convKey({ attrs: { pads: [2, 0, 0, 2] } }),
    dilation: convKey({ attrs: { pads: [2, 2, 2, 2], dilations: [2, 2] } }),
    groups: convKey({ attrs: { pads: [1, 1, 1, 1], group: 2 }, weight: [8, 4, 3, 3] }),
    noBias: convKey({ bias: false }),
    relu: convKey({ act: 'Relu' }),
    sigmoid: convKey({ act: 'Sigmoid' }),
  };
  for (const [what, key] of Object.entries(variants)) assert.notEqual(key, base, `${what} should change the key`);
  assert.equal(new Set(Object.values(variants)).size, Object.keys(variants).length);
});

test('the canonical form and key of a fixed workload are pinned (a format change must be deliberate)', () => {
  const S = [1, 64, 56, 56];
  const g = lowerToLayers(
    fixture({
      inputs: { x: S },
      outputs: ['z'],
      constants: { w: tensor([64, 64, 3, 3]), b: tensor([64]) },
      nodes: [
        { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: 'y', shape: S, attrs: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } },
        { op: 'Relu', inputs: ['y'], outputs: 'z', shape: S },
      ],
    }),
  );
  const w = g.layers[0]!.workload!;
  assert.equal(
    canonicalForm(w),
    '{"cin":64,"cout":64,"dilationH":1,"dilationW":1,"dtype":"float32","epilogue":["bias","relu"],' +
      '"groups":1,"h":56,"kh":3,"kw":3,"n":1,"oh":56,"op":"conv2d","ow":56,"pads":[1,1,1,1],"strideH":1,"strideW":1,"w":56}',
  );
  assert.equal(w.key, 'conv2d-1bdafe135d5d91e9');
});
