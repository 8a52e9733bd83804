#!/usr/bin/env node
// Where veltair's INT8 layers part from ONNX Runtime's on a quantized model: every QuantizeLinear output of
// the QDQ model is made a graph output, ORT runs the model once, and each veltair layer is run by the
// integer reference (src/quantize/reference.ts) on ORT's own values of its inputs, so each layer is judged
// alone, with no earlier difference carried into it. Prints each layer whose output differs (how many
// elements, by how many steps). Usage: node bench/quantized/layer-diff.mjs MODEL.int8.onnx [SAMPLE]
// SAMPLE: the index of `veltair quantize --generated`'s input (default 8, the first after calibration).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = join(dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(join(here, 'package.json'));
const onnxProto = require('onnx-proto');
const ort = require('onnxruntime-node');
const { decodeModel } = await import(join(here, 'dist/src/onnx/decode.js'));
const { inferModel } = await import(join(here, 'dist/src/onnx/infer.js'));
const { lowerToLayers } = await import(join(here, 'dist/src/ir/lower.js'));
const { runQuantizedLayer } = await import(join(here, 'dist/src/quantize/reference.js'));
const { seededFloats } = await import(join(here, 'dist/src/random.js'));

const [file, sampleArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/quantized/layer-diff.mjs MODEL.int8.onnx [SAMPLE]');
  process.exit(2);
}
const sample = Number(sampleArg ?? 8);
const bytes = readFileSync(file);
const model = decodeModel(bytes, file);
const graph = lowerToLayers(inferModel(model));
const proto = onnxProto.onnx.ModelProto.decode(bytes);
for (const n of proto.graph.node.filter((x) => x.opType === 'QuantizeLinear'))
  proto.graph.output.push({ name: n.output[0], type: { tensorType: { elemType: onnxProto.onnx.TensorProto.DataType.UINT8 } } });
const session = await ort.InferenceSession.create(onnxProto.onnx.ModelProto.encode(proto).finish(), { graphOptimizationLevel: 'all' });
const input = model.graph.inputs[0];
const shape = input.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
// generatedSamples' input `sample` (src/quantize/quantize-model.ts), for a one-input model
const data = seededFloats(
  shape.reduce((a, b) => a * b, 1),
  100 + 7919 * sample,
);
const fromOrt = await session.run({ [input.name]: new ort.Tensor('float32', data, shape) });
const VIEWS = new Set(['flatten', 'reshape', 'squeeze', 'unsqueeze', 'identity']);
const values = new Map([[input.name, { dtype: 'float32', dims: shape, data }]]);
let differing = 0;
for (const l of graph.layers) {
  const ins = l.inputs.map((v) => values.get(v));
  if (VIEWS.has(l.op)) {
    values.set(l.outputs[0], { ...ins[0], dims: l.outputShape });
    continue;
  }
  const ours = runQuantizedLayer(l, ins);
  const theirs = fromOrt[l.outputs[0]];
  if (theirs === undefined || theirs.type !== 'uint8') {
    values.set(l.outputs[0], ours);
    continue;
  }
  let [count, most] = [0, 0];
  for (let i = 0; i < theirs.data.length; i++) {
    const d = Math.abs(theirs.data[i] - ours.data[i]);
    if (d > 0) count++;
    most = Math.max(most, d);
  }
  if (count > 0) {
    differing++;
    console.log(`layer ${l.index} ${l.op} ${JSON.stringify(l.name)}: ${count} of ${theirs.data.length} differ, by up to ${most} steps`);
  }
  values.set(l.outputs[0], { dtype: 'uint8', dims: l.outputShape, data: Uint8Array.from(theirs.data) });
}
console.log(`${graph.layers.length} layers, ${differing} differing on ORT's inputs (sample ${sample})`);
