#!/usr/bin/env node
// A compiled bundle's output against ONNX Runtime on one seeded input, at each thread count:
// the largest absolute difference and the largest reference magnitude. Exit 1 if a difference exceeds
// 1e-4 × (1 + max |reference|), or if the reference is constant (that would prove nothing).
// Usage: node bench/torchvision/against-ort.mjs MODEL.onnx BUNDLE [THREADS…]
import { compareWithOrt } from '../../dist/src/bench/against-ort.js';

const [model, bundle, ...threadArgs] = process.argv.slice(2);
if (!model || !bundle) {
  console.error('usage: node bench/torchvision/against-ort.mjs MODEL.onnx BUNDLE [THREADS…]');
  process.exit(2);
}
let ok = true;
for (const c of await compareWithOrt(model, bundle, (threadArgs.length ? threadArgs : ['1', '2']).map(Number))) {
  ok &&= c.maxDiff <= 1e-4 * (1 + c.maxRef) && c.refSpread > 0;
  console.log(`${c.threads} thread(s): max |diff| ${c.maxDiff.toExponential(2)}, max |reference| ${c.maxRef.toExponential(2)}`);
}
process.exit(ok ? 0 : 1);
