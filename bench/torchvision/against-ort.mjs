#!/usr/bin/env node
// A compiled bundle's output against ONNX Runtime on one seeded input, at each thread count:
// the largest absolute difference and the largest reference magnitude. Exit 1 if a difference exceeds
// 1e-4 × (1 + max |reference|). Usage: node bench/torchvision/against-ort.mjs MODEL.onnx BUNDLE [THREADS…]
import * as ort from 'onnxruntime-node';
import { loadBundle } from '../../dist/src/runtime/session.js';
import { seededFloats } from '../../dist/src/random.js';

const [model, bundle, ...threadArgs] = process.argv.slice(2);
if (!model || !bundle) { console.error('usage: node bench/torchvision/against-ort.mjs MODEL.onnx BUNDLE [THREADS…]'); process.exit(2); }
const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
const name = session.inputNames[0];
const meta = session.inputMetadata?.[0];
const shape = (meta?.shape ?? [1, 3, 224, 224]).map((d) => (typeof d === 'number' ? d : 1));
const input = seededFloats(shape.reduce((a, b) => a * b, 1), 7, -1, 1);
const reference = (await session.run({ [name]: new ort.Tensor('float32', input, shape) }))[session.outputNames[0]].data;
let ok = true;
for (const threads of (threadArgs.length ? threadArgs : ['1', '2']).map(Number)) {
  const s = await loadBundle(bundle, { threads });
  try {
    const out = Object.values(await s.run({ [name]: input }))[0].data;
    let diff = 0, mag = 0;
    for (let i = 0; i < reference.length; i++) { diff = Math.max(diff, Math.abs(out[i] - reference[i])); mag = Math.max(mag, Math.abs(reference[i])); }
    ok &&= diff <= 1e-4 * (1 + mag);
    console.log(`${threads} thread(s): max |diff| ${diff.toExponential(2)}, max |reference| ${mag.toExponential(2)}`);
  } finally {
    s.close();
  }
}
process.exit(ok ? 0 : 1);
