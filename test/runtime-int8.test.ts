/**
 * The native executor runs a quantized model: QuantizeLinear into channels-last u8, INT8 kernel steps
 * (every version of each layer), quantized MaxPool / Add / GlobalAveragePool, DequantizeLinear out,
 * and its output equals the integer reference (src/quantize/run-graph.ts) bit for bit, at one and two
 * threads, with teams on and off. The kernels' own exactness per path is test/codegen-int8.test.ts's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { runReferenceGraph } from '../src/quantize/run-graph.js';
import { OP } from '../src/runtime/ops.js';
import type { Tensor } from '../src/onnx/model.js';
import { smallCnn } from './quantize-fixture.js';
import { fixturePaths, nativeInt8Plan, quantizedGraph } from './int8-runtime-fixture.js';

test('a quantized small CNN runs natively and equals the integer reference exactly, on every version', { timeout: 300_000 }, async () => {
  const { graph, samples } = await quantizedGraph(smallCnn(), 8, 3);
  const dir = await mkdtemp(join(tmpdir(), 'veltair-rt-int8-'));
  try {
    const { plan, kernels } = await nativeInt8Plan(graph, dir, 2);
    const ops = plan.plan.steps.map((s) => s.op);
    for (const op of [OP.QUANTIZE, OP.QKERNEL, OP.QMAXPOOL, OP.QADD, OP.QGLOBAL_AVGPOOL, OP.DEQUANTIZE])
      assert.ok(ops.includes(op), `no step ${op}`);
    assert.ok(!ops.includes(OP.REORDER), 'integer values flow channels-last without reorders');
    const exe = await createExecutor(plan.plan, kernels);
    try {
      const qsteps = ops.flatMap((op, i) => (op === OP.QKERNEL ? [i] : []));
      const input = graph.inputs[0]!.name;
      const output = graph.outputs[0]!.name;
      for (const [si, sample] of samples.entries()) {
        const x = sample[input]!;
        const want = runReferenceGraph(
          graph,
          new Map<string, Tensor>([[input, { dtype: 'float32', dims: x.shape, data: x.data as Float32Array }]]),
        );
        const expected = Array.from(want.get(output)!.data as Float32Array);
        fixturePaths().forEach((path, v) => {
          for (const s of qsteps) exe.setVersion(s, v);
          for (const [threads, teams] of [
            [1, true],
            [2, true],
            [2, false],
          ] as const) {
            exe.setAllThreads(threads);
            exe.setTeams(teams);
            const got = Array.from(exe.run([x.data as Float32Array])[0] as Float32Array);
            assert.deepEqual(got, expected, `sample ${si}, ${path} versions, ${threads} threads, teams ${teams}`);
          }
        });
      }
    } finally {
      exe.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('an INT8 kernel built for another layer is refused when the plan is loaded', { timeout: 300_000 }, async () => {
  const { graph } = await quantizedGraph(smallCnn(), 8, 0);
  const dir = await mkdtemp(join(tmpdir(), 'veltair-rt-int8-bad-'));
  try {
    const { plan, kernels } = await nativeInt8Plan(graph, dir, 1);
    const [a, b] = plan.plan.steps.flatMap((s, i) => (s.op === OP.QKERNEL ? [i] : []));
    const steps = [...plan.plan.steps];
    // the second conv's versions (and their constant offsets) on the first conv's step
    steps[a!] = { ...steps[a!]!, versions: steps[b!]!.versions!, ints: steps[b!]!.ints };
    await assert.rejects(
      createExecutor({ ...plan.plan, steps }, kernels),
      /INT8 kernel vt_q[0-9a-f]{16} \(version 0\): its input size differs/,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
