#!/usr/bin/env node
// Source-block loads of a model's channel gathers: per output block of 16 lanes, the distinct
// (input, 16-channel source block) pairs it draws on, times the plane's pixels (one whole-line load
// each). A count from the lowering, not a time. DIST picks the build whose lowering is counted (default:
// this tree's dist/; a worktree of an older commit gives its order). `--best-order` also counts the
// best order of each output's inputs (every permutation up to 8 inputs, channels kept ascending).
// Usage: node bench/gathers/loads.mjs MODEL.onnx [DIST] [--best-order]
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2).filter((a) => a !== '--best-order');
const best = process.argv.includes('--best-order');
const [model, distArg] = args;
if (!model) {
  console.error('usage: node bench/gathers/loads.mjs MODEL.onnx [DIST] [--best-order]');
  process.exit(2);
}
const dist = resolve(distArg ?? fileURLToPath(new URL('../../dist', import.meta.url)));
const { decodeModel } = await import(`${dist}/src/onnx/decode.js`);
const { inferModel } = await import(`${dist}/src/onnx/infer.js`);
const { lowerToLayers } = await import(`${dist}/src/ir/lower.js`);
const graph = lowerToLayers(inferModel(decodeModel(readFileSync(model), model)));

const loads = (pairs) => {
  let n = 0;
  for (let b = 0; 32 * b < pairs.length; b++) {
    const blocks = new Set();
    for (let k = 32 * b; k < Math.min(pairs.length, 32 * b + 32); k += 2) blocks.add(`${pairs[k]}/${pairs[k + 1] >> 4}`);
    n += blocks.size;
  }
  return n;
};
function* orders(items) {
  if (items.length <= 1) {
    yield items;
    return;
  }
  for (let i = 0; i < items.length; i++)
    for (const rest of orders([...items.slice(0, i), ...items.slice(i + 1)])) yield [items[i], ...rest];
}
function bestLoads(pairs) {
  const byInput = new Map();
  for (let k = 0; k < pairs.length; k += 2) byInput.set(pairs[k], [...(byInput.get(pairs[k]) ?? []), pairs[k + 1]]);
  if (byInput.size > 8) return loads(pairs);
  let least = Infinity;
  for (const order of orders([...byInput.keys()])) {
    least = Math.min(least, loads(order.flatMap((i) => [...byInput.get(i)].sort((a, b) => a - b).flatMap((c) => [i, c]))));
  }
  return least;
}

let total = 0,
  totalBest = 0;
for (const l of graph.layers.filter((x) => x.op === 'channelgather')) {
  const sources = l.attrs.sources;
  const pixels = graph.shapes
    .get(l.outputs[0])
    .slice(2)
    .reduce((a, b) => a * b, 1);
  let at = 0,
    n = 0,
    nBest = 0;
  for (const o of l.outputs) {
    const c = graph.shapes.get(o)[1];
    const pairs = sources.slice(2 * at, 2 * (at + c));
    n += loads(pairs);
    if (best) nBest += bestLoads(pairs);
    at += c;
  }
  total += n * pixels;
  totalBest += nBest * pixels;
  console.log(`layer ${l.index}: ${n} loads per pixel${best ? ` (best input order ${nBest})` : ''}, ${pixels} pixels`);
}
console.log(`total loads x pixels: ${total}${best ? `; best input order: ${totalBest}` : ''}`);
