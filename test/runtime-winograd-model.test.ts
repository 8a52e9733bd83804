/**
 * A small CNN whose 3×3 stride-1 convs all run Winograd versions (forced: both versions of every
 * eligible layer are Winograd schedules, the rest direct), through real generated kernels, packed
 * weights (the pack-time weight transform), the graph plan and the native executor, against ONNX
 * Runtime at 1 and 2 threads in every version combination. Bound: rel err 1e-3 element-wise, with
 * an absolute floor of 1e-4 of the output's largest magnitude (outputs near zero carry the
 * transforms' rounding of the whole layer, not their own); the per-layer bound against the direct
 * conv is in codegen-winograd.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { localityGreedy, parallelHeavy, winogradDefault } from '../src/space/presets.js';
import { repair } from '../src/space/knobs.js';
import { winogradEligible } from '../src/space/winograd.js';
import type { Workload } from '../src/ir/workload.js';
import type { Target } from '../src/toolchain/target.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { OP } from '../src/runtime/ops.js';
import { assertClose, seeded } from './runtime-harness.js';
import { model, prepare, t } from './runtime-kernels-fixture.js';

const CNN = model(
  [1, 8, 13, 11],
  [1, 10, 11, 9],
  [
    ['w1', t([16, 8, 3, 3], 1)],
    ['b1', t([16], 2)],
    ['w2', t([16, 16, 3, 3], 3)],
    ['b2', t([16], 4)],
    ['w3', t([12, 16, 3, 3], 5)],
    ['b3', t([12], 6)],
    ['w4', t([10, 12, 1, 1], 7)],
  ],
  [
    { op: 'Conv', inputs: ['x', 'w1', 'b1'], outputs: ['a'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
    { op: 'Relu', inputs: ['a'], outputs: ['ar'] },
    { op: 'Conv', inputs: ['ar', 'w2', 'b2'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
    { op: 'Add', inputs: ['c', 'ar'], outputs: ['s'] },
    { op: 'Relu', inputs: ['s'], outputs: ['sr'] },
    { op: 'Conv', inputs: ['sr', 'w3', 'b3'], outputs: ['d'], attrs: { kernel_shape: [3, 3] } },
    { op: 'Relu', inputs: ['d'], outputs: ['dr'] },
    { op: 'Conv', inputs: ['dr', 'w4'], outputs: ['y'], attrs: { kernel_shape: [1, 1] } },
  ],
);

/** Two Winograd versions (its default at 1 thread, a parallel-heavy one at 2) for eligible convs; the usual two otherwise. */
function forcedWinograd(w: Workload, target: Target) {
  if (!winogradEligible(w)) return [localityGreedy(w, target, 1), parallelHeavy(w, target, 2)];
  return [winogradDefault(w, target, 1)!, repair({ ...parallelHeavy(w, target, 2), algo: 'winograd' }, w, target)];
}

test('a small CNN with its 3×3 convs forced to Winograd stays within rel err 1e-3 of ONNX Runtime', { timeout: 600_000 }, async () => {
  const p = await prepare(CNN, forcedWinograd);
  try {
    const tunable = p.graph.layers.filter((l) => l.tunable);
    assert.equal(tunable.filter((l) => winogradEligible(l.workload!)).length, 3, 'three 3×3 convs run Winograd');
    const residual = tunable.find((l) => l.workload!.epilogue.includes('residual_add'));
    assert.ok(residual && winogradEligible(residual.workload!), 'the residual add is fused into a Winograd layer');
    const dims = [1, 8, 13, 11];
    const x = seeded(8 * 13 * 11, 11, -1, 1);
    const session = await ort.InferenceSession.create(p.bytes, { intraOpNumThreads: 1 });
    const ref = (await session.run({ x: new ort.Tensor('float32', x, dims) }))['y']!.data as Float32Array;
    const floor = 1e-4 * ref.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const exec = await createExecutor(p.translated.plan, p.so);
    try {
      const kernels = p.translated.plan.steps.map((s, i) => (s.op === OP.KERNEL ? i : -1)).filter((i) => i >= 0);
      for (const threads of [1, 2]) {
        exec.setAllThreads(threads);
        for (const version of [0, 1]) {
          kernels.forEach((s, i) => exec.setVersion(s, (version + i) % 2));
          assertClose(exec.run([x])[0] as Float32Array, ref, `${threads} thread(s), versions from ${version}`, 1e-3, floor);
        }
      }
    } finally {
      exec.close();
    }
  } finally {
    await rm(p.cache, { recursive: true, force: true });
  }
});
