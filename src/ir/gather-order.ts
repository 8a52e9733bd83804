/**
 * A channel gather may write its output channels in any order its readers can absorb. ShuffleNet's
 * shuffles interleave, and composed gathers (channel-moves.ts) compound the interleave: in the
 * model's order one output block of 16 lanes draws on ~5 source blocks at stages 3–4, and on a
 * blocked layout the gather's cost is one whole-line load per (output block, source block) pair.
 * Ordered by (input, channel), every source contributes contiguous runs, so an output block reads
 * about two source blocks.
 *
 * Invariants (why a reorder is only applied when every reader of the output takes it):
 *  - a graph output is never reordered: the user sees the model's channel order;
 *  - a groups=1 conv reading the value as its data input absorbs the order in its weight's input
 *    axis (W'[o][j] = W[o][π(j)]): the same terms, summed in π's order (last bits may differ);
 *  - a depthwise conv (one weight row and bias per channel; only bias and activation epilogues)
 *    computes each channel on its own, so it takes π on its weight rows and bias and passes π on
 *    to its own output, whose readers must absorb it in turn;
 *  - another channel gather absorbs it by renaming the channels it reads;
 *  - anything else (elementwise ops with a second operand, pools, residual adds…) refuses, and the
 *    gather keeps the model's order.
 * Layer workloads do not change (only weights move), so tuning records stay valid.
 */
import type { Tensor } from '../onnx/model.js';
import type { Layer, LayerGraph } from './layer.js';

/** π: new channel j holds old channel perm[j]. */
type Perm = readonly number[];

interface Reader {
  readonly layer: number;
  readonly arg: number;
}

const isGather = (l: Layer) => l.op === 'channelgather';

function readersOf(layers: readonly Layer[]): Map<string, Reader[]> {
  const readers = new Map<string, Reader[]>();
  for (const l of layers) {
    l.inputs.forEach((v, arg) => {
      const list = readers.get(v) ?? [];
      list.push({ layer: l.index, arg });
      readers.set(v, list);
    });
  }
  return readers;
}

const sourcesOf = (l: Layer): readonly number[] => (l.attrs['sources'] as readonly number[] | undefined) ?? [];

const isFloat32 = (t: Tensor | undefined): t is Tensor => t !== undefined && t.data instanceof Float32Array;

/** `t` with its axis-`axis` slices taken in the order `perm` (the axis has perm.length entries). */
function permuteAxis(t: Tensor, axis: number, perm: Perm): Tensor {
  const src = t.data as Float32Array;
  const outer = t.dims.slice(0, axis).reduce((a, b) => a * b, 1);
  const inner = t.dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const n = t.dims[axis]!;
  const out = new Float32Array(src.length);
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < n; j++) {
      out.set(src.subarray((o * n + perm[j]!) * inner, (o * n + perm[j]! + 1) * inner), (o * n + j) * inner);
    }
  }
  return { dtype: t.dtype, dims: t.dims, data: out };
}

const isDepthwise = (l: Layer, channels: number) =>
  l.op === 'conv2d' &&
  l.attrs['groups'] === channels &&
  l.outputShape[1] === channels &&
  l.params['weight']?.dims[0] === channels &&
  l.params['weight']?.dims[1] === 1;

/**
 * Every layer rewrite that lets the readers of `value` (`channels` channels) take the order `perm`,
 * into `edits` (layer index → rewritten layer, built on what `edits` already holds); false when some
 * reader cannot.
 */
function absorb(
  value: string,
  channels: number,
  perm: Perm,
  ctx: { layers: readonly Layer[]; readers: Map<string, Reader[]>; outputs: ReadonlySet<string> },
  edits: Map<number, Layer>,
): boolean {
  if (ctx.outputs.has(value)) return false;
  const current = (i: number) => edits.get(i) ?? ctx.layers[i]!;
  const inverse = new Array<number>(channels);
  perm.forEach((old, j) => {
    inverse[old] = j;
  });
  const renamed = new Set<number>();
  for (const { layer, arg } of ctx.readers.get(value) ?? []) {
    const l = current(layer);
    if (isGather(l)) {
      // One rename covers every argument of this gather that is `value`.
      if (renamed.has(layer)) continue;
      renamed.add(layer);
      const sources = [...sourcesOf(l)];
      for (let k = 0; k < sources.length; k += 2) if (l.inputs[sources[k]!] === value) sources[k + 1] = inverse[sources[k + 1]!]!;
      edits.set(layer, { ...l, attrs: { ...l.attrs, sources } });
      continue;
    }
    // A conv reads its data as argument 0; any later argument is an epilogue operand of the output's shape.
    if (l.op !== 'conv2d' || arg !== 0 || l.inputs.lastIndexOf(value) !== 0 || !isFloat32(l.params['weight'])) return false;
    const weight = l.params['weight']!;
    if (l.attrs['groups'] === 1 && weight.dims.length === 4 && weight.dims[1] === channels) {
      edits.set(layer, { ...l, params: { ...l.params, weight: permuteAxis(weight, 1, perm) } });
      continue;
    }
    if (
      !isDepthwise(l, channels) ||
      !l.epilogue.every((s) => s.kind === 'bias' || s.kind === 'activation') ||
      Object.keys(l.params).some((k) => k !== 'weight' && k !== 'bias')
    )
      return false;
    const bias = l.params['bias'];
    if (bias !== undefined && (!isFloat32(bias) || bias.dims.length !== 1 || bias.dims[0] !== channels)) return false;
    edits.set(layer, { ...l, params: { weight: permuteAxis(weight, 0, perm), ...(bias ? { bias: permuteAxis(bias, 0, perm) } : {}) } });
    if (!absorb(l.outputs[0]!, channels, perm, ctx, edits)) return false;
  }
  return true;
}

/** The order of one gather output's channels by (input, channel); `pairs` is its [input, channel] list. */
export function sourceOrder(pairs: readonly number[]): number[] {
  const n = pairs.length / 2;
  return Array.from({ length: n }, (_, j) => j).sort((a, b) => pairs[2 * a]! - pairs[2 * b]! || pairs[2 * a + 1]! - pairs[2 * b + 1]!);
}

/** The graph with each channel gather's outputs in source order wherever every reader absorbs it. */
export function orderGatherChannels(graph: LayerGraph): LayerGraph {
  const layers = [...graph.layers];
  const ctx = { layers, readers: readersOf(layers), outputs: new Set(graph.outputs.map((o) => o.name)) };
  let changed = false;
  for (let i = 0; i < layers.length; i++) {
    if (!isGather(layers[i]!)) continue;
    // Every output's channel count must be known and the sources must cover them exactly, or nothing is sliced.
    const counts = layers[i]!.outputs.map((o) => graph.shapes.get(o)?.[1]);
    if (counts.some((c) => c === undefined) || counts.reduce((a: number, c) => a + c!, 0) * 2 !== sourcesOf(layers[i]!).length) continue;
    let at = 0;
    for (const out of layers[i]!.outputs) {
      const g = layers[i]!;
      const channels = graph.shapes.get(out)![1]!;
      const pairs = sourcesOf(g).slice(2 * at, 2 * (at + channels));
      const perm = sourceOrder(pairs);
      if (perm.some((p, j) => p !== j)) {
        const edits = new Map<number, Layer>();
        if (absorb(out, channels, perm, ctx, edits)) {
          const sources = [...sourcesOf(g)];
          perm.forEach((old, j) => {
            sources[2 * (at + j)] = pairs[2 * old]!;
            sources[2 * (at + j) + 1] = pairs[2 * old + 1]!;
          });
          layers[i] = { ...g, attrs: { ...g.attrs, sources } };
          for (const [k, l] of edits) layers[k] = l;
          changed = true;
        }
      }
      at += channels;
    }
  }
  return changed ? { ...graph, layers } : graph;
}
