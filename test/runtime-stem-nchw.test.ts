/**
 * Small-cin convs fed the graph input as it is (plain NCHW, the kernel's `_run_nchw`), through
 * real generated kernels, against ONNX Runtime at 1 and 2 threads in every version combination:
 * a strided RGB stem over a batch of two, a 4-channel 1x1 stem (the flattened problem), and an
 * input with a second reader that needs it blocked (a depthwise conv: one reorder stays) next to a
 * small-cin conv whose input exists only blocked (its `_run` gathers it). The executor refuses a
 * natural-input step whose size or kernel does not fit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { VeltairError } from '../src/errors.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { KERNEL_READS_NCHW } from '../src/runtime/native-plan.js';
import { OP } from '../src/runtime/ops.js';
import { matchesOrt, model, prepare, t } from './runtime-kernels-fixture.js';

const STRIDED_STEM = model(
  [2, 3, 15, 13],
  [2, 20, 8, 7],
  [
    ['w', t([20, 3, 3, 3], 1)],
    ['b', t([20], 2)],
  ],
  [
    { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [2, 2] } },
    { op: 'Relu', inputs: ['c'], outputs: ['y'] },
  ],
);

const FLAT_STEM = model(
  [1, 4, 7, 9],
  [1, 24, 7, 9],
  [['w', t([24, 4, 1, 1], 3)]],
  [{ op: 'Conv', inputs: ['x', 'w'], outputs: ['y'], attrs: { kernel_shape: [1, 1] } }],
);

const SHARED_INPUT = model(
  [1, 3, 10, 10],
  [1, 16, 10, 10],
  [
    ['w', t([16, 3, 3, 3], 4)],
    ['dw', t([3, 1, 3, 3], 5)],
    ['pw', t([16, 3, 1, 1], 6)],
  ],
  [
    { op: 'Conv', inputs: ['x', 'w'], outputs: ['a'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
    { op: 'Conv', inputs: ['x', 'dw'], outputs: ['d'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], group: 3 } },
    { op: 'Conv', inputs: ['d', 'pw'], outputs: ['e'], attrs: { kernel_shape: [1, 1] } },
    { op: 'Add', inputs: ['a', 'e'], outputs: ['y'] },
  ],
);

/** The native kernel steps reading plain NCHW (their one int), by the name of the value they write. */
function nchwKernels(p: Awaited<ReturnType<typeof prepare>>): string[] {
  const { plan, planOfStep } = p.translated;
  return plan.steps.flatMap((s, i) => {
    if (s.op !== OP.KERNEL || s.ints[0] !== KERNEL_READS_NCHW) return [];
    const step = p.plan.steps[planOfStep[i]!]!;
    return [p.plan.values[step.outputs[0]!]!.name];
  });
}

for (const [name, spec, seed] of [
  ['a strided RGB stem over a batch of two', STRIDED_STEM, 11],
  ['a 4-channel 1x1 stem', FLAT_STEM, 12],
] as const) {
  test(`${name} reads the graph input as it is and matches ONNX Runtime at 1 and 2 threads`, { timeout: 240_000 }, async () => {
    const p = await prepare(spec);
    try {
      assert.equal(p.plan.steps.filter((s) => s.op === 'reorder' && s.from === 'nchw').length, 0, 'no reorder of the input');
      assert.deepEqual(nchwKernels(p), ['y'], 'the stem (its ReLU fused) runs _run_nchw');
      await matchesOrt(p, spec, seed);
    } finally {
      await rm(p.cache, { recursive: true, force: true });
    }
  });
}

test(
  'an input with a blocked reader keeps one reorder for it; the stem reads it as it is; all match ONNX Runtime',
  { timeout: 240_000 },
  async () => {
    const p = await prepare(SHARED_INPUT);
    try {
      const reorders = p.plan.steps.filter((s) => s.op === 'reorder').map((s) => s.op === 'reorder' && `${s.from}>${s.to}`);
      assert.deepEqual(reorders, [`nchw>nchw${p.vec}c`, `nchw${p.vec}c>nchw`]);
      // The stem carries the Add as a residual epilogue (blocked e), so it writes y.
      assert.deepEqual(nchwKernels(p), ['y'], 'only the stem; the 1x1 conv over the depthwise output gathers its blocked input itself');
      await matchesOrt(p, SHARED_INPUT, 13);

      // A natural-input step is checked like any other: a wrong size, or a kernel with no _run_nchw, is refused at load.
      const { plan } = p.translated;
      const stem = plan.steps.find((s) => s.op === OP.KERNEL && s.ints[0] === KERNEL_READS_NCHW)!;
      const edited = (edit: (s: typeof stem) => typeof stem) => ({ ...plan, steps: plan.steps.map((s) => (s === stem ? edit(s) : s)) });
      await assert.rejects(
        createExecutor(
          edited((s) => ({ ...s, inputBytes: s.inputBytes!.map((b, j) => (j === 0 ? b - 4 : b)) })),
          p.so,
        ),
        (e: unknown) => e instanceof VeltairError && e.code === 'BAD_BUNDLE' && e.message.includes('does not match the plan (input size)'),
      );
      const blockedStep = plan.steps.find((s) => s.op === OP.KERNEL && s.ints.length === 0 && s !== stem)!;
      const wrong = { ...plan, steps: plan.steps.map((s) => (s === blockedStep ? { ...s, ints: [KERNEL_READS_NCHW] } : s)) };
      await assert.rejects(
        createExecutor(wrong, p.so),
        (e: unknown) => e instanceof VeltairError && e.code === 'BAD_BUNDLE' && /_run_nchw|does not match the plan/.test(e.message),
      );
    } finally {
      await rm(p.cache, { recursive: true, force: true });
    }
  },
);
