/**
 * The INT8 kernels on the layers `veltair quantize` actually produces: a small CNN and MobileNet-V2
 * (3×3 stem at stride 2, depthwise 3×3 at strides 1 and 2, 1×1 expand/project, the classifier
 * matmul) are quantized from generated calibration inputs, lowered, and run through the integer
 * reference layer by layer; every qconv2d / qmatmul layer's generated kernel, on the fastest INT8
 * path this CPU has (toolchain/isa.ts), reproduces the reference output of that layer exactly from
 * the same input. The scales, zero points, biases and clamps are the quantizer's, not chosen.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeModel } from '../src/onnx/decode.js';
import { encodeModel } from '../src/onnx/encode.js';
import { inferModel } from '../src/onnx/infer.js';
import { nums } from '../src/onnx/eval.js';
import type { Tensor } from '../src/onnx/model.js';
import { lowerToLayers } from '../src/ir/lower.js';
import type { Layer } from '../src/ir/layer.js';
import { QUANTIZED_LAYER_OPS } from '../src/ir/quantized.js';
import { generatedSamples, quantizeModel } from '../src/quantize/quantize-model.js';
import { runQuantizedLayer } from '../src/quantize/reference.js';
import { generateInt8Kernel } from '../src/codegen/int8-kernel.js';
import { packInt8 } from '../src/codegen/int8-pack.js';
import { int8ProblemOf } from '../src/space/int8-problem.js';
import { int8Space } from '../src/space/int8-knobs.js';
import { int8PathsAt } from '../src/toolchain/isa.js';
import { seededRng } from '../src/random.js';
import { buildZooModel } from '../src/zoo/index.js';
import { buildDriver, fromNhwc, runDriver, toNhwc, type DriverCase } from './int8-fixture.js';
import { smallCnn } from './quantize-fixture.js';

const VIEWS = new Set(['flatten', 'reshape', 'squeeze', 'unsqueeze', 'identity']);

/** Every qconv2d / qmatmul layer of the quantized model with its reference input and output on one input. */
async function quantizedLayers(float: Uint8Array, file: string, calibration: number): Promise<{ layer: Layer; x: Tensor; y: Tensor }[]> {
  const inputs = decodeModel(float, file).graph.inputs;
  const samples = generatedSamples(inputs, calibration + 1);
  const q = await quantizeModel(float, file, { method: 'minmax', samples: samples.slice(0, calibration) });
  const graph = lowerToLayers(inferModel(decodeModel(q.bytes, file)));
  const feed = samples[calibration]!;
  const values = new Map<string, Tensor>(
    Object.entries(feed).map(([k, v]) => [k, { dtype: v.dtype, dims: v.shape, data: v.data as Tensor['data'] }]),
  );
  const out: { layer: Layer; x: Tensor; y: Tensor }[] = [];
  for (const l of graph.layers) {
    const ins = l.inputs.map((v) => values.get(v)!);
    if (VIEWS.has(l.op)) {
      values.set(l.outputs[0]!, { ...ins[0]!, dims: l.outputShape });
      continue;
    }
    assert.ok(QUANTIZED_LAYER_OPS.has(l.op), `${l.op} is not a quantized layer`);
    const y = runQuantizedLayer(l, ins);
    values.set(l.outputs[0]!, y);
    if (l.op === 'qconv2d' || l.op === 'qmatmul') out.push({ layer: l, x: ins[0]!, y });
  }
  return out;
}

async function checkModel(name: string, float: Uint8Array, calibration: number): Promise<{ layers: number; depthwise: number }> {
  const path = int8PathsAt('native')[0]!;
  const layers = await quantizedLayers(float, `${name}.onnx`, calibration);
  const dir = await mkdtemp(join(tmpdir(), `veltair-int8-${name}-`));
  try {
    const rng = seededRng(7);
    const cases: (DriverCase & { layer: Layer; expected: number[] })[] = layers.map(({ layer, x, y }) => {
      const problem = int8ProblemOf(layer);
      const s = rng.pick(int8Space(problem, path));
      return {
        layer,
        problem,
        kernel: generateInt8Kernel(problem, s),
        packed: packInt8(layer, problem, s),
        input: toNhwc(layer, x),
        outputs: y.dims.reduce((a, b) => a * b, 1),
        expected: Array.from(nums(y)),
      };
    });
    const exe = await buildDriver(dir, cases);
    for (const [i, c] of cases.entries()) {
      const got = fromNhwc(c.layer, await runDriver(exe, dir, i, c, 2));
      const bad = got.findIndex((v, j) => v !== c.expected[j]);
      assert.equal(
        bad,
        -1,
        `${name} layer ${c.layer.index} (${c.layer.op}) on ${path}: output ${bad} is ${got[bad]}, the reference ${c.expected[bad]}`,
      );
    }
    return { layers: cases.length, depthwise: cases.filter((c) => c.problem.depthwise).length };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('a quantized small CNN: every conv and matmul kernel equals the integer reference', { timeout: 300_000 }, async () => {
  assert.deepEqual(await checkModel('small', smallCnn(), 8), { layers: 3, depthwise: 0 });
});

test(
  'quantized MobileNet-V2: all 52 convs (depthwise, 1×1, strided) and the classifier equal the reference',
  { timeout: 600_000 },
  async () => {
    assert.deepEqual(await checkModel('mobilenet_v2', encodeModel(buildZooModel('mobilenet_v2')), 1), { layers: 53, depthwise: 17 });
  },
);
