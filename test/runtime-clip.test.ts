/**
 * Clip as ONNX defines it, standalone (UNARY, ops_unary.c) and inside a fused elementwise chain
 * (ELEMENTWISE_CHAIN, ops_chain.c), both against ONNX Runtime: y = min(max(x, min), max), a NaN stays
 * NaN, a missing bound is numeric_limits<float>::lowest() / max() (so ±Infinity clamps to ±FLT_MAX),
 * and min > max gives max everywhere. The two ops once had their own unary switch and disagreed on
 * exactly these inputs (the standalone op's scalar tail let a NaN through while its vector body
 * clamped it, and kept min where min > max; the chain clamped a NaN to min). The input has 36
 * elements per row block so that both the vector body and the scalar tail of every width run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../src/onnx/model.js';
import { check, graphOf, named, seeded, type Case, type Feed } from './runtime-harness.js';

const SPECIAL = [NaN, Infinity, -Infinity, 3.4e38, -3.4e38, 0, -0, 5, -5, 0.25];

/** Seeded values with the special ones spread over vector bodies and tails alike. */
function specials(dims: number[]): Feed & { name: string } {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = seeded(n, 41, -3, 3);
  for (let i = 0; i < n; i += 3) data[i] = SPECIAL[(i / 3) % SPECIAL.length]!;
  return named('x', { dtype: 'float32', dims, data });
}

const s = (v: number): Tensor => ({ dtype: 'float32', dims: [], data: new Float32Array([v]) });

const BOUNDS: { name: string; inputs: string[]; inits: [string, Tensor][] }[] = [
  {
    name: 'min and max',
    inputs: ['x', 'lo', 'hi'],
    inits: [
      ['lo', s(-1)],
      ['hi', s(1.5)],
    ],
  },
  { name: 'no bounds', inputs: ['x'], inits: [] },
  { name: 'min only', inputs: ['x', 'lo'], inits: [['lo', s(-1)]] },
  { name: 'max only', inputs: ['x', '', 'hi'], inits: [['hi', s(1.5)]] },
  {
    name: 'min > max',
    inputs: ['x', 'lo', 'hi'],
    inits: [
      ['lo', s(1)],
      ['hi', s(-1)],
    ],
  },
];

const standalone = (b: (typeof BOUNDS)[number]): Case => ({
  name: `Clip, ${b.name}`,
  node: { op: 'Clip', inputs: b.inputs },
  feeds: [specials([4, 36])],
  out: [4, 36],
  inits: b.inits,
  atol: 0,
  rtol: 0,
});

/** x·k then Clip then + k: one elementwise chain (k per channel, so the chain runs on blocked layouts too). */
const chained = (b: (typeof BOUNDS)[number]): Case => ({
  name: `Clip in a chain, ${b.name}`,
  nodes: [
    { op: 'Mul', inputs: ['x', 'k'], outputs: ['m'] },
    { op: 'Clip', inputs: ['m', ...b.inputs.slice(1)], outputs: ['c'] },
    { op: 'Add', inputs: ['c', 'k'], outputs: ['y'] },
  ],
  feeds: [specials([2, 9, 2, 18])],
  out: [2, 9, 2, 18],
  inits: [...b.inits, ['k', { dtype: 'float32', dims: [9, 1, 1], data: new Float32Array(9).fill(1) }]],
  atol: 0,
  rtol: 0,
});

for (const b of BOUNDS) {
  test(`native ${standalone(b).name} matches ONNX Runtime`, async () => {
    await check(standalone(b));
  });
  for (const vec of [undefined, 8, 16]) {
    const c = chained(b);
    test(`native ${c.name}, ${vec ? `nchw${vec}c` : 'natural'}, matches ONNX Runtime`, async () => {
      await check({ ...c, ...(vec ? { vec } : {}) });
    });
  }
}

test('the chained cases do lower Clip into an elementwise chain', () => {
  for (const b of BOUNDS) {
    const c = chained(b);
    const { graph } = graphOf({
      inputs: c.feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.dims] })),
      outputs: [{ name: 'y', dtype: 'float32', shape: [...c.out] }],
      initializers: c.inits ?? [],
      nodes: c.nodes!,
    });
    assert.deepEqual(
      graph.layers.map((l) => l.op),
      ['elementwise_chain'],
      b.name,
    );
    assert.match(String(graph.layers[0]!.attrs['program']), /clip\(/, b.name);
  }
});
