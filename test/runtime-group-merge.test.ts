/**
 * Grouped convs narrower than the vector, with their groups merged (space/problem.ts groupMerge):
 * a RegNetY-like block (1x1 conv, grouped 3x3 with 8 channels per group, squeeze-excite gate, 1x1
 * conv with the residual), a ResNeXt-like grouped conv (4 per group) and 5 groups merged with the
 * last kernel group part padding, each planned at the network's widest vector width with no reorder
 * around the grouped conv, through real generated kernels, against ONNX Runtime at 1 and 2 threads
 * in every version combination.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { groupMerge } from '../src/space/problem.js';
import { localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { repair, widthsFor } from '../src/space/knobs.js';
import { matchesOrt, model, prepare, t } from './runtime-kernels-fixture.js';

const REGNET_Y_BLOCK = model(
  [1, 32, 9, 9],
  [1, 32, 9, 9],
  [
    ['w1', t([48, 32, 1, 1], 1)],
    ['b1', t([48], 2)],
    ['wg', t([48, 8, 3, 3], 3)],
    ['bg', t([48], 4)],
    ['se1', t([8, 48, 1, 1], 5)],
    ['se2', t([48, 8, 1, 1], 6)],
    ['w3', t([32, 48, 1, 1], 7)],
  ],
  [
    { op: 'Conv', inputs: ['x', 'w1', 'b1'], outputs: ['a'], attrs: { kernel_shape: [1, 1] } },
    { op: 'Relu', inputs: ['a'], outputs: ['ar'] },
    { op: 'Conv', inputs: ['ar', 'wg', 'bg'], outputs: ['g'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], group: 6 } },
    { op: 'Relu', inputs: ['g'], outputs: ['gr'] },
    { op: 'GlobalAveragePool', inputs: ['gr'], outputs: ['p'] },
    { op: 'Conv', inputs: ['p', 'se1'], outputs: ['s1'], attrs: { kernel_shape: [1, 1] } },
    { op: 'Relu', inputs: ['s1'], outputs: ['s1r'] },
    { op: 'Conv', inputs: ['s1r', 'se2'], outputs: ['s2'], attrs: { kernel_shape: [1, 1] } },
    { op: 'Sigmoid', inputs: ['s2'], outputs: ['gate'] },
    { op: 'Mul', inputs: ['gr', 'gate'], outputs: ['m'] },
    { op: 'Conv', inputs: ['m', 'w3'], outputs: ['o'], attrs: { kernel_shape: [1, 1] } },
    { op: 'Add', inputs: ['o', 'x'], outputs: ['y'] },
  ],
);

const RESNEXT_GROUPED = model(
  [2, 64, 7, 6],
  [2, 64, 4, 3],
  [
    ['w', t([64, 4, 3, 3], 8)],
    ['b', t([64], 9)],
  ],
  [
    {
      op: 'Conv',
      inputs: ['x', 'w', 'b'],
      outputs: ['c'],
      attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [2, 2], group: 16 },
    },
    { op: 'Relu', inputs: ['c'], outputs: ['y'] },
  ],
);

// 5 groups of 4: merged in pairs (V = 8) or fours (V = 16), the last kernel group part padding.
const RAGGED = model(
  [1, 20, 6, 5],
  [1, 20, 6, 5],
  [
    ['w', t([20, 4, 3, 3], 10)],
    ['b', t([20], 11)],
    ['w2', t([20, 20, 1, 1], 12)],
  ],
  [
    { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], group: 5 } },
    { op: 'Relu', inputs: ['c'], outputs: ['r'] },
    { op: 'Conv', inputs: ['r', 'w2'], outputs: ['y'], attrs: { kernel_shape: [1, 1] } },
  ],
);

for (const [name, spec, seed, perGroup] of [
  ['a RegNetY block (8 channels per group)', REGNET_Y_BLOCK, 21, 8],
  ['a strided ResNeXt grouped conv over a batch of two (4 per group)', RESNEXT_GROUPED, 22, 4],
  ['a grouped conv whose group count the merge does not divide', RAGGED, 23, 4],
] as const) {
  test(
    `${name} runs its grouped conv at the network's width, groups merged where narrower than the vector, no reorder, and matches ONNX Runtime`,
    { timeout: 240_000 },
    async () => {
      let merged = 0;
      // Every layer at the widest width the machine has, both versions; the grouped conv can only take it merged.
      const p = await prepare(spec, (w, target) => {
        const vec = widthsFor(w, target)[0]!;
        if (groupMerge(w, vec) > 1) merged++;
        return [localityGreedy(w, target, 1), parallelHeavy(w, target, 2)].map((s) => repair({ ...s, vec }, w, target));
      });
      try {
        // A group as wide as the vector (8 channels at AVX2's 8 floats) fills it whole: nothing to merge.
        assert.equal(merged, perGroup < p.vec ? 1 : 0, `the grouped conv at ${p.vec} lanes, ${perGroup} channels per group`);
        const reorders = p.plan.steps.filter((s) => s.op === 'reorder').map((s) => s.op === 'reorder' && `${s.from}>${s.to}`);
        assert.ok(
          reorders.every((r) => r === `nchw>nchw${p.vec}c` || r === `nchw${p.vec}c>nchw` || r === `nchw>rows${p.vec}`),
          `only the graph's edges and the squeeze-excite vector reorder: ${reorders.join(', ')}`,
        );
        await matchesOrt(p, spec, seed);
      } finally {
        await rm(p.cache, { recursive: true, force: true });
      }
    },
  );
}
