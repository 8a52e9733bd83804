/**
 * The natively run INT8 model against ONNX Runtime's INT8 output on the same QDQ model (written by
 * `veltair quantize`): at least 99.9% of outputs within one quantization step of the output (its
 * DequantizeLinear scale; the tolerance docs/quantize.md states). Needs onnxruntime-node (an
 * optional peer): skipped with the reason without it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeModel } from '../src/onnx/decode.js';
import { ortInstalled } from '../src/ort/available.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { smallCnn } from './quantize-fixture.js';
import { nativeInt8Plan, quantizedGraph } from './int8-runtime-fixture.js';

const skip = ortInstalled() ? false : 'onnxruntime-node is not installed';

test('a quantized small CNN run natively matches ONNX Runtime INT8 within one quantization step', { skip, timeout: 300_000 }, async () => {
  const { bytes, graph, samples } = await quantizedGraph(smallCnn(), 8, 32);
  const model = decodeModel(bytes, 'small.int8.onnx');
  const [input, output] = [model.graph.inputs[0]!.name, model.graph.outputs[0]!.name];
  const last = model.graph.nodes.find((n) => n.outputs[0] === output)!;
  const step = (model.graph.initializers.get(last.inputs[1]!)!.data as Float32Array)[0]!;
  const { openOrtSession } = await import('../src/ort/run-model.js');
  const ort = await openOrtSession(bytes);
  const dir = await mkdtemp(join(tmpdir(), 'veltair-rt-int8-ort-'));
  let [total, within, exact] = [0, 0, 0];
  try {
    const { plan, kernels } = await nativeInt8Plan(graph, dir, 2);
    const exe = await createExecutor(plan.plan, kernels);
    try {
      plan.plan.steps.forEach((s, i) => {
        if (s.versions) exe.setVersion(i, s.versions.length - 1);
      });
      for (const sample of samples) {
        const want = (await ort.run(sample))[output]!.data as Float32Array;
        const got = exe.run([sample[input]!.data as Float32Array])[0] as Float32Array;
        assert.equal(got.length, want.length);
        for (let i = 0; i < want.length; i++) {
          total++;
          if (Math.abs(got[i]! - want[i]!) <= step * 1.0001) within++;
          if (got[i] === want[i]) exact++;
        }
      }
    } finally {
      exe.close();
    }
  } finally {
    await ort.close();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(`small CNN, native INT8 vs ONNX Runtime INT8: ${within}/${total} outputs within one step, ${exact} equal`);
  assert.ok(within / total >= 0.999, `${within}/${total} outputs within one quantization step`);
});
