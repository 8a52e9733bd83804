#!/usr/bin/env node
// Accuracy of the INT8 bundles of bench/quantized/suite.sh, on inputs none of them was calibrated on:
//  - top-1 of veltair INT8 against veltair FP32 (the float model's own bundle) on N generated inputs;
//  - veltair INT8 against ONNX Runtime's INT8 on the same QDQ model, on the first K of them: outputs
//    within one quantization step of the model output, and equal.
// Inputs are `veltair quantize --generated`'s (seeded uniform floats), starting after the 8 it
// calibrated on. Usage: node bench/quantized/agreement.mjs WORK [--inputs N] [--ort K] [--threads T] [NAME...]
// Writes WORK/results/NAME.agreement.json and prints one line per model.
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { INT8_SET } from './models.mjs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = join(dirname(fileURLToPath(import.meta.url)), '../..');
const { loadBundle } = await import(join(here, 'dist/src/runtime/session.js'));
const { decodeModel } = await import(join(here, 'dist/src/onnx/decode.js'));
const { seededFloats } = await import(join(here, 'dist/src/random.js'));
const { openOrtSession } = await import(join(here, 'dist/src/ort/run-model.js'));

const CALIBRATED = 8;

function parseArgs(argv) {
  const [work, ...rest] = argv;
  if (!work) throw new Error('usage: agreement.mjs WORK [--inputs N] [--ort K] [--threads T] [NAME...]');
  const opts = { work, inputs: 1000, ort: 20, threads: 2, names: [] };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--inputs' || a === '--ort' || a === '--threads') opts[a.slice(2)] = Number(rest[++i]);
    else opts.names.push(a);
  }
  if (opts.names.length === 0) opts.names = INT8_SET;
  return opts;
}

const argmax = (a) => a.reduce((best, v, i) => (v > a[best] ? i : best), 0);

/** The input like generatedSamples' sample `s` (src/quantize/quantize-model.ts), for a one-input model. */
function sample(input, s) {
  const shape = input.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const count = shape.reduce((a, b) => a * b, 1);
  return { dtype: 'float32', shape, data: seededFloats(count, 100 + 7919 * s) };
}

const VIEWS = new Set(['Flatten', 'Reshape', 'Squeeze', 'Unsqueeze', 'Identity']);

/** The scale of the DequantizeLinear behind the model's output (through views): one quantization step of it. */
function outputStep(model) {
  let v = model.graph.outputs[0].name;
  for (;;) {
    const n = model.graph.nodes.find((x) => x.outputs[0] === v);
    if (n === undefined) return undefined;
    if (n.opType === 'DequantizeLinear') return model.graph.initializers.get(n.inputs[1]).data[0];
    if (!VIEWS.has(n.opType)) return undefined;
    v = n.inputs[0];
  }
}

async function measure(opts, name) {
  const int8Path = join(opts.work, 'models', `${name}.int8.onnx`);
  const bytes = readFileSync(int8Path);
  const model = decodeModel(bytes, int8Path);
  const input = model.graph.inputs[0];
  const output = model.graph.outputs[0].name;
  const step = outputStep(model);
  const int8 = await loadBundle(join(opts.work, 'bundles', `${name}.int8.bundle`), { threads: opts.threads });
  const fp32 = await loadBundle(join(opts.work, 'bundles', `${name}.bundle`), { threads: opts.threads });
  const ort = await openOrtSession(bytes, opts.threads);
  const r = { model: name, inputs: opts.inputs, top1Agree: 0, ortInputs: 0, ortOutputs: 0, ortWithinStep: 0, ortEqual: 0, step };
  // Why top-1 can disagree: how many classes FP32 picks at all, and its margin (top-1 − top-2) in INT8 output steps.
  const classes = new Set();
  const margins = [];
  try {
    for (let k = 0; k < opts.inputs; k++) {
      const x = sample(input, CALIBRATED + k);
      const q = (await int8.run({ [input.name]: x }))[output].data;
      const f = (await fp32.run({ [input.name]: x }))[output].data;
      if (argmax(q) === argmax(f)) r.top1Agree++;
      classes.add(argmax(f));
      if (step !== undefined) {
        const sorted = Array.from(f).sort((a, b) => b - a);
        margins.push((sorted[0] - sorted[1]) / step);
      }
      if (k < opts.ort && step !== undefined) {
        const o = (await ort.run({ [input.name]: x }))[output].data;
        r.ortInputs++;
        for (let i = 0; i < o.length; i++) {
          r.ortOutputs++;
          if (Math.abs(o[i] - q[i]) <= step * 1.0001) r.ortWithinStep++;
          if (o[i] === q[i]) r.ortEqual++;
        }
      }
    }
    r.fp32Classes = classes.size;
    r.fp32MarginSteps = margins.length ? margins.sort((a, b) => a - b)[margins.length >> 1] : undefined;
  } finally {
    int8.close();
    fp32.close();
    await ort.close();
  }
  return r;
}

const opts = parseArgs(process.argv.slice(2));
for (const name of opts.names) {
  if (!existsSync(join(opts.work, 'bundles', `${name}.int8.bundle`, 'manifest.json'))) {
    console.error(`${name}: no INT8 bundle in ${opts.work}/bundles`);
    continue;
  }
  const r = await measure(opts, name);
  writeFileSync(join(opts.work, 'results', `${name}.agreement.json`), JSON.stringify(r, null, 2) + '\n');
  const pct = (a, b) => (b === 0 ? 'n/a' : `${((100 * a) / b).toFixed(2)}%`);
  console.log(
    `${name}: top-1 INT8 = FP32 on ${r.top1Agree}/${r.inputs} (${pct(r.top1Agree, r.inputs)}); ` +
      `vs ORT INT8 on ${r.ortInputs} inputs: ${pct(r.ortWithinStep, r.ortOutputs)} of ${r.ortOutputs} outputs within one step, ` +
      `${pct(r.ortEqual, r.ortOutputs)} equal; FP32 picks ${r.fp32Classes} classes, median top-1 margin ${r.fp32MarginSteps?.toFixed(2)} steps`,
  );
}
