/**
 * The segmentation and inception convolutions, through real generated kernels and the native executor, against ONNX Runtime at 1
 * and 2 threads with the versions alternated (two combinations): DeepLabV3's atrous pyramid (3×3 at dilations 12, 24 and 36 on a map
 * small enough that most taps land in the padding, concatenated and projected by a 1×1), and Inception-V3's
 * factorised 7×7 (a 1×7 then a 7×1, each padded on one axis only, then a 1×3 / 3×1 pair as its 8×8 blocks use).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import type { NodeSpec } from '../src/onnx/encode.js';
import { matchesOrt, model, prepare, t } from './runtime-kernels-fixture.js';

const C = 16;

const atrous = (d: number, w: string, b: string, out: string): NodeSpec[] => [
  { op: 'Conv', inputs: ['x', w, b], outputs: [`${out}c`], attrs: { kernel_shape: [3, 3], pads: [d, d, d, d], dilations: [d, d] } },
  { op: 'Relu', inputs: [`${out}c`], outputs: [out] },
];

const ASPP = model(
  [1, C, 17, 15],
  [1, 8, 17, 15],
  [
    ['w12', t([C, C, 3, 3], 1)],
    ['b12', t([C], 2)],
    ['w24', t([C, C, 3, 3], 3)],
    ['b24', t([C], 4)],
    ['w36', t([C, C, 3, 3], 5)],
    ['b36', t([C], 6)],
    ['proj', t([8, 3 * C, 1, 1], 7)],
  ],
  [
    ...atrous(12, 'w12', 'b12', 'a'),
    ...atrous(24, 'w24', 'b24', 'b'),
    ...atrous(36, 'w36', 'b36', 'c'),
    { op: 'Concat', inputs: ['a', 'b', 'c'], outputs: ['cat'], attrs: { axis: 1 } },
    { op: 'Conv', inputs: ['cat', 'proj'], outputs: ['y'], attrs: { kernel_shape: [1, 1] } },
  ],
);

const FACTORISED = model(
  [1, C, 17, 17],
  [1, C, 17, 17],
  [
    ['w17', t([C, C, 1, 7], 8)],
    ['b17', t([C], 9)],
    ['w71', t([C, C, 7, 1], 10)],
    ['b71', t([C], 11)],
    ['w13', t([C, C, 1, 3], 12)],
    ['w31', t([C, C, 3, 1], 13)],
  ],
  [
    { op: 'Conv', inputs: ['x', 'w17', 'b17'], outputs: ['p'], attrs: { kernel_shape: [1, 7], pads: [0, 3, 0, 3] } },
    { op: 'Relu', inputs: ['p'], outputs: ['pr'] },
    { op: 'Conv', inputs: ['pr', 'w71', 'b71'], outputs: ['q'], attrs: { kernel_shape: [7, 1], pads: [3, 0, 3, 0] } },
    { op: 'Relu', inputs: ['q'], outputs: ['qr'] },
    { op: 'Conv', inputs: ['qr', 'w13'], outputs: ['r'], attrs: { kernel_shape: [1, 3], pads: [0, 1, 0, 1] } },
    { op: 'Conv', inputs: ['qr', 'w31'], outputs: ['s'], attrs: { kernel_shape: [3, 1], pads: [1, 0, 1, 0] } },
    { op: 'Add', inputs: ['r', 's'], outputs: ['y'] },
  ],
);

for (const [name, spec, seed, kernels] of [
  ["DeepLabV3's atrous pyramid (dilations 12, 24, 36; most taps in the padding)", ASPP, 21, 4],
  ["Inception-V3's factorised kernels (1×7, 7×1, 1×3, 3×1)", FACTORISED, 22, 4],
] as const) {
  test(`${name} matches ONNX Runtime through generated kernels`, { timeout: 300_000 }, async () => {
    const p = await prepare(spec);
    try {
      assert.equal(p.graph.layers.filter((l) => l.op === 'conv2d').length, kernels, 'every conv is a tuned conv2d');
      await matchesOrt(p, spec, seed);
    } finally {
      await rm(p.cache, { recursive: true, force: true });
    }
  });
}
