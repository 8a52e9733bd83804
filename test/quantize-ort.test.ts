/**
 * `veltair quantize` end to end: the QDQ model it writes loads and runs in ONNX Runtime, every
 * pattern in it folds into quantized layers, and the whole model run through veltair's integer
 * reference matches ONNX Runtime's INT8 output within one quantization step of the output on at
 * least 99.9% of outputs (the requantization is MLAS's, so in practice they are equal) on a CPU
 * with VNNI; without it ONNX Runtime's INT8 is no exact reference (quantize-fixture.ts
 * ortInt8Inexact) and the figure is only reported. The zoo's MobileNet-V2 (BatchNormalizations
 * folded, ReLU6 as Clip, residual Adds, depthwise convs) is checked the same way. Needs
 * onnxruntime-node (an optional peer): skipped with the reason without it.
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
import { assertWithinOneStepOfOrt, denseBlockCnn, fireSiluCnn, ortInt8Inexact, sharedBiasMlp, smallCnn } from './quantize-fixture.js';
import { buildZooModel } from '../src/zoo/index.js';
import { encodeModel } from '../src/onnx/encode.js';

const skip = ortInstalled() ? false : 'onnxruntime-node is not installed';

test('ONNX Runtime INT8 counts as an exact reference only on a CPU with VNNI', () => {
  assert.equal(ortInt8Inexact(new Set(['avx2', 'fma', 'avx512f', 'avx512_vnni'])), false);
  assert.equal(ortInt8Inexact(new Set(['avx2', 'fma', 'avx_vnni'])), false);
  assert.match(String(ortInt8Inexact(new Set(['avx2', 'fma', 'avx512f', 'avx512bw']))), /no VNNI/);
});

/** The quantized model through ORT and through the integer reference on `inputs`: outputs within one output step, and equal. */
async function compareWithOrt(
  bytes: Uint8Array,
  inputs: ReturnType<typeof generatedSamples>,
): Promise<{ total: number; within: number; exact: number }> {
  const { openOrtSession } = await import('../src/ort/run-model.js');
  const model = decodeModel(bytes, 'model.int8.onnx');
  const graph = lowerToLayers(inferModel(model));
  const [input, output] = [model.graph.inputs[0]!.name, model.graph.outputs[0]!.name];
  const out = model.graph.nodes.find((n) => n.outputs[0] === output)!;
  const step = (model.graph.initializers.get(out.inputs[1]!)!.data as Float32Array)[0]!;
  const ort = await openOrtSession(bytes);
  let [total, within, exact] = [0, 0, 0];
  try {
    for (const sample of inputs) {
      const want = (await ort.run(sample))[output]!.data as Float32Array;
      const x = sample[input]!;
      const got = runReferenceGraph(
        graph,
        new Map<string, Tensor>([[input, { dtype: 'float32', dims: x.shape, data: x.data as Float32Array }]]),
      );
      const ours = got.get(output)!.data as Float32Array;
      assert.equal(ours.length, want.length);
      for (let i = 0; i < want.length; i++) {
        total++;
        if (Math.abs(ours[i]! - want[i]!) <= step * 1.0001) within++;
        if (ours[i] === want[i]) exact++;
      }
    }
  } finally {
    await ort.close();
  }
  return { total, within, exact };
}

test('a quantized model runs in ONNX Runtime and the integer reference matches it within one step', { skip }, async (t) => {
  const float = smallCnn();
  const inputs = decodeModel(float, 'small.onnx').graph.inputs;
  const q = await quantizeModel(float, 'small.onnx', { method: 'minmax', samples: generatedSamples(inputs, 8) });
  assert.deepEqual([q.weights, q.biases], [3, 3]);
  const graph = lowerToLayers(inferModel(decodeModel(q.bytes, 'small.int8.onnx')));
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
  // Inputs beyond the 8 it was calibrated on.
  const r = await compareWithOrt(q.bytes, generatedSamples(inputs, 40).slice(8));
  console.log(`small CNN, integer reference vs ONNX Runtime INT8: ${r.within}/${r.total} outputs within one step, ${r.exact} equal`);
  assertWithinOneStepOfOrt(t, r.within, r.total);
});

test(
  'a bias and Clip bounds that are Identity of other constants: the bias gets its own int32 copy, the Clip folds',
  { skip },
  async (t) => {
    const float = sharedBiasMlp();
    const inputs = decodeModel(float, 'mlp.onnx').graph.inputs;
    const q = await quantizeModel(float, 'mlp.onnx', { method: 'minmax', samples: generatedSamples(inputs, 8) });
    assert.deepEqual([q.weights, q.biases], [2, 2], 'both weights and both biases quantized');
    const graph = lowerToLayers(inferModel(decodeModel(q.bytes, 'mlp.int8.onnx')));
    assert.deepEqual(
      graph.layers.map((l) => l.op),
      ['quantize_linear', 'qmatmul', 'qmatmul', 'dequantize_linear'],
    );
    const r = await compareWithOrt(q.bytes, generatedSamples(inputs, 40).slice(8));
    assertWithinOneStepOfOrt(t, r.within, r.total);
  },
);

test(
  'a Concat of differently scaled inputs, a SiLU and a channel gate fold into qconcat, qlut and qgate, and the reference matches ONNX Runtime',
  { skip },
  async (t) => {
    const float = fireSiluCnn();
    const inputs = decodeModel(float, 'fire.onnx').graph.inputs;
    const q = await quantizeModel(float, 'fire.onnx', { method: 'minmax', samples: generatedSamples(inputs, 8) });
    const graph = lowerToLayers(inferModel(decodeModel(q.bytes, 'fire.int8.onnx')));
    assert.deepEqual(
      graph.layers.map((l) => l.op),
      [
        'quantize_linear',
        'qconv2d',
        'qconv2d',
        'qconv2d',
        'qconcat',
        'qconv2d',
        'qlut',
        'qglobal_avgpool',
        'qconv2d',
        'qconv2d',
        'qgate',
        'qconv2d',
        'dequantize_linear',
      ],
    );
    const concat = graph.layers.find((l) => l.op === 'qconcat')!;
    const scales = concat.attrs.in_scales as number[];
    assert.notEqual(scales[0], scales[1], 'the two expand outputs have their own scales, so the concat requantizes');
    const r = await compareWithOrt(q.bytes, generatedSamples(inputs, 40).slice(8));
    console.log(
      `fire + SiLU + gate, integer reference vs ONNX Runtime INT8: ${r.within}/${r.total} outputs within one step, ${r.exact} equal`,
    );
    assertWithinOneStepOfOrt(t, r.within, r.total);
  },
);

test(
  'an average pool behind an empty Pad and a Concat → BatchNormalization → Relu fold into qavgpool and qconcat, matching ONNX Runtime',
  { skip },
  async (t) => {
    const float = denseBlockCnn();
    const inputs = decodeModel(float, 'dense.onnx').graph.inputs;
    const q = await quantizeModel(float, 'dense.onnx', { method: 'minmax', samples: generatedSamples(inputs, 8) });
    const graph = lowerToLayers(inferModel(decodeModel(q.bytes, 'dense.int8.onnx')));
    assert.deepEqual(
      graph.layers.map((l) => l.op),
      ['quantize_linear', 'qconv2d', 'qavgpool', 'qconv2d', 'qconcat', 'qconv2d', 'dequantize_linear'],
    );
    assert.ok(graph.layers.find((l) => l.op === 'qconcat')!.attrs.affine_scale !== undefined, 'the batch norm folded into the concat');
    const r = await compareWithOrt(q.bytes, generatedSamples(inputs, 40).slice(8));
    console.log(`dense block, integer reference vs ONNX Runtime INT8: ${r.within}/${r.total} outputs within one step, ${r.exact} equal`);
    assertWithinOneStepOfOrt(t, r.within, r.total);
  },
);

test('MobileNet-V2 quantized with percentile ranges: every conv folds, and the reference matches ONNX Runtime', { skip }, async (t) => {
  const float = encodeModel(buildZooModel('mobilenet_v2'));
  const inputs = decodeModel(float, 'mobilenet_v2.onnx').graph.inputs;
  const q = await quantizeModel(float, 'mobilenet_v2.onnx', { method: 'percentile', samples: generatedSamples(inputs, 2) });
  assert.equal(q.batchNormsFolded, 52);
  const ops = lowerToLayers(inferModel(decodeModel(q.bytes, 'mobilenet_v2.int8.onnx'))).layers.map((l) => l.op);
  assert.equal(ops.filter((o) => o === 'qconv2d').length, 52);
  assert.equal(ops.filter((o) => !o.startsWith('q') && !o.endsWith('quantize_linear') && o !== 'flatten').length, 0, ops.join(' '));
  const r = await compareWithOrt(q.bytes, generatedSamples(inputs, 3).slice(2));
  console.log(`MobileNet-V2, integer reference vs ONNX Runtime INT8: ${r.within}/${r.total} outputs within one step, ${r.exact} equal`);
  assertWithinOneStepOfOrt(t, r.within, r.total);
});
