/**
 * `veltair quantize` end to end: the QDQ model it writes loads and runs in ONNX Runtime, every
 * pattern in it folds into quantized layers, and the whole model run through veltair's integer
 * reference matches ONNX Runtime's INT8 output within one quantization step of the output on at
 * least 99.9% of outputs. Needs onnxruntime-node (an optional peer): skipped with the reason without it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { lowerToLayers } from '../src/ir/lower.js';
import { ortInstalled } from '../src/ort/available.js';
import { generatedSamples, quantizeModel } from '../src/quantize/quantize-model.js';
import { runReferenceGraph } from '../src/quantize/run-graph.js';
import type { Tensor } from '../src/onnx/model.js';
import { smallCnn } from './quantize-fixture.js';

const skip = ortInstalled() ? false : 'onnxruntime-node is not installed';

test('a quantized model runs in ONNX Runtime and the integer reference matches it within one step', { skip }, async () => {
  const { openOrtSession } = await import('../src/ort/run-model.js');
  const float = smallCnn();
  const inputs = decodeModel(float, 'small.onnx').graph.inputs;
  const q = await quantizeModel(float, 'small.onnx', { method: 'minmax', samples: generatedSamples(inputs, 8) });
  assert.deepEqual([q.weights, q.biases], [3, 3]);

  const model = decodeModel(q.bytes, 'small.int8.onnx');
  const graph = lowerToLayers(inferModel(model));
  assert.deepEqual(
    graph.layers.map((l) => l.op),
    [
      'quantize_linear',
      'qconv2d',
      'qmaxpool',
      'qconv2d',
      'qadd',
      'qglobal_avgpool',
      'dequantize_linear',
      'flatten',
      'quantize_linear',
      'qmatmul',
      'dequantize_linear',
    ],
  );
  const out = model.graph.nodes.find((n) => n.outputs[0] === 'logits')!;
  const step = (model.graph.initializers.get(out.inputs[1]!)!.data as Float32Array)[0]!;

  const ort = await openOrtSession(q.bytes);
  let total = 0;
  let within = 0;
  try {
    // Inputs beyond the 8 it was calibrated on.
    for (const sample of generatedSamples(inputs, 40).slice(8)) {
      const want = (await ort.run(sample)).logits!.data as Float32Array;
      const x = sample.input!;
      const got = runReferenceGraph(
        graph,
        new Map<string, Tensor>([['input', { dtype: 'float32', dims: x.shape, data: x.data as Float32Array }]]),
      );
      const ours = got.get('logits')!.data as Float32Array;
      assert.equal(ours.length, want.length);
      for (let i = 0; i < want.length; i++) {
        total++;
        if (Math.abs(ours[i]! - want[i]!) <= step * 1.0001) within++;
      }
    }
  } finally {
    await ort.close();
  }
  console.log(`integer reference vs ONNX Runtime INT8: ${within}/${total} outputs within one step (${step})`);
  assert.ok(within / total >= 0.999, `${within}/${total} outputs within one quantization step`);
});
