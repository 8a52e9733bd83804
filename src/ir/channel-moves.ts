/**
 * Channel shuffles as one data movement. A Reshape [N, C, …] → [N, a, b, …], a Transpose swapping
 * those two axes and a Reshape back to [N, C, …] is a permutation of the channels (ShuffleNet's
 * channel shuffle, with a = groups); it becomes one veltair.ChannelGather node that names, for
 * every output channel, the input and channel it comes from. The Concat feeding it (along
 * channels) and the Slices / Split reading it (along channels, step 1) join the same node, so
 * ShuffleNet's concat → shuffle → chunk is one pass over the data, in whatever layout the plan
 * gives it (src/bundle/plan-layouts.ts: blocked stays blocked).
 * Only when every intermediate value has that one reader and is not a graph output.
 */
import type { OnnxNode } from '../onnx/model.js';
import { attrInt, attrInts } from '../onnx/attributes.js';
import {
  VELTAIR_DOMAIN,
  consumersOf,
  indexGraph,
  numbers,
  replaceNodes,
  shapeOf,
  soleConsumer,
  synthNode,
  type GraphIndex,
  type WorkGraph,
} from './work-graph.js';

type Source = readonly [number, number];

const isOp = (n: OnnxNode | undefined, op: string): n is OnnxNode => n !== undefined && n.domain === '' && n.opType === op;
const out = (n: OnnxNode) => n.outputs[0] ?? '';
const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/** Output channel → input channel of the reshape–transpose–reshape starting at `r1`, with its three nodes. */
function shuffleAt(g: WorkGraph, ix: GraphIndex, r1: OnnxNode): { nodes: OnnxNode[]; x: string; y: string; perm: number[] } | undefined {
  if (!isOp(r1, 'Reshape')) return undefined;
  const x = r1.inputs[0] ?? '';
  const xs = shapeOf(g, x),
    mid = shapeOf(g, out(r1));
  if (xs.length < 2 || mid.length !== xs.length + 1 || mid[0] !== xs[0] || !same(mid.slice(3), xs.slice(2))) return undefined;
  const [a, b] = [mid[1]!, mid[2]!];
  if (a * b !== xs[1] || a < 2 || b < 2) return undefined;
  const t = soleConsumer(g, ix, out(r1));
  const perm = t && isOp(t, 'Transpose') ? attrInts(t, 'perm') : undefined;
  if (
    !t ||
    !perm ||
    perm.length !== mid.length ||
    perm[0] !== 0 ||
    perm[1] !== 2 ||
    perm[2] !== 1 ||
    perm.slice(3).some((p, i) => p !== i + 3)
  )
    return undefined;
  const r2 = soleConsumer(g, ix, out(t));
  if (!isOp(r2, 'Reshape') || !same(shapeOf(g, out(r2)), xs)) return undefined;
  // transposed [N, b, a, …]: output channel i·a + j holds input channel j·b + i.
  const channels = Array.from({ length: xs[1]! }, (_, c) => (c % a) * b + Math.floor(c / a));
  return { nodes: [r1, t, r2], x, y: out(r2), perm: channels };
}

function constInts(g: WorkGraph, v: string | undefined): number[] | undefined {
  const t = v === undefined || v === '' ? undefined : g.constants.get(v);
  return t === undefined || Array.isArray(t.data) ? undefined : [...numbers(t)];
}

/** A reader of the shuffled value that takes a channel range: [first channel, count], or undefined. */
function channelRange(g: WorkGraph, n: OnnxNode, channels: number): [number, number][] | undefined {
  if (n.domain !== '') return undefined;
  if (n.opType === 'Slice') {
    const [starts, ends, axes, steps] = [1, 2, 3, 4].map((i) => constInts(g, n.inputs[i]));
    if (
      !starts ||
      !ends ||
      starts.length !== 1 ||
      (axes && (axes.length !== 1 || (axes[0] !== 1 && axes[0] !== 1 - shapeOf(g, n.inputs[0]!).length)))
    )
      return undefined;
    if (!axes || (steps && steps[0] !== 1)) return undefined;
    const clamp = (v: number) => Math.min(Math.max(v < 0 ? v + channels : v, 0), channels);
    const s = clamp(starts[0]!),
      e = clamp(ends[0]!);
    return e > s && shapeOf(g, out(n))[1] === e - s ? [[s, e - s]] : undefined;
  }
  if (n.opType === 'Split') {
    const rank = shapeOf(g, n.inputs[0]!).length;
    const axis = attrInt(n, 'axis', 0);
    if (axis !== 1 && axis !== 1 - rank) return undefined;
    let c0 = 0;
    return n.outputs.map((o) => {
      const c = shapeOf(g, o)[1]!;
      const r: [number, number] = [c0, c];
      c0 += c;
      return r;
    });
  }
  return undefined;
}

function fuseShuffle(g: WorkGraph, ix: GraphIndex, r1: OnnxNode): { nodes: Set<OnnxNode>; node: OnnxNode } | undefined {
  const sh = shuffleAt(g, ix, r1);
  if (!sh) return undefined;
  const nodes = new Set(sh.nodes);
  // Producer: a channel Concat whose only reader is the shuffle.
  const cat = ix.producer.get(sh.x);
  const rank = shapeOf(g, sh.x).length;
  let inputs: string[] = [sh.x];
  let source = (c: number): Source => [0, sh.perm[c]!];
  if (
    isOp(cat, 'Concat') &&
    [1, 1 - rank].includes(attrInt(cat, 'axis', 0)) &&
    soleConsumer(g, ix, sh.x) === r1 &&
    new Set(cat.inputs).size === cat.inputs.length &&
    cat.inputs.every((v) => !g.constants.has(v))
  ) {
    nodes.add(cat);
    inputs = [...cat.inputs];
    const starts: number[] = [];
    let c0 = 0;
    for (const v of inputs) {
      starts.push(c0);
      c0 += shapeOf(g, v)[1]!;
    }
    source = (c: number) => {
      const ch = sh.perm[c]!;
      let i = starts.length - 1;
      while (starts[i]! > ch) i--;
      return [i, ch - starts[i]!];
    };
  }
  // Readers: Slices / a Split over channel ranges, when nothing else reads the shuffled value.
  const channels = shapeOf(g, sh.y)[1]!;
  const readers = g.graphOutputs.has(sh.y) ? [] : [...new Set(consumersOf(ix, sh.y))];
  const ranges = readers.map((n) => ({ n, r: channelRange(g, n, channels) }));
  let outputs: string[] = [sh.y];
  let map: Source[][] = [Array.from({ length: channels }, (_, c) => source(c))];
  // The fused node stands where the last absorbed reader stood: everything reading its outputs must come after that.
  const lastPos = Math.max(...[...nodes, ...readers].map((n) => ix.position.get(n)!));
  const readsLater = readers.every((n) => n.outputs.every((o) => consumersOf(ix, o).every((m) => ix.position.get(m)! > lastPos)));
  if (readers.length > 0 && readsLater && ranges.every((x) => x.r !== undefined) && consumersOf(ix, sh.y).length === readers.length) {
    outputs = [];
    map = [];
    for (const { n, r } of ranges) {
      nodes.add(n);
      n.outputs.forEach((o, k) => {
        outputs.push(o);
        map.push(Array.from({ length: r![k]![1] }, (_, c) => source(r![k]![0] + c)));
      });
    }
  }
  const node = synthNode(
    r1.name,
    'ChannelGather',
    inputs,
    outputs,
    {
      sources: { kind: 'ints', value: map.flatMap((list) => list.flatMap(([i, c]) => [i, c])) },
      axis: { kind: 'int', value: 1 },
    },
    VELTAIR_DOMAIN,
  );
  return { nodes, node };
}

/** Replace every recognised channel shuffle (with its concat and slices) by one ChannelGather. */
export function recogniseChannelMoves(g: WorkGraph): void {
  for (;;) {
    const ix = indexGraph(g);
    let found: { nodes: Set<OnnxNode>; node: OnnxNode } | undefined;
    for (const n of g.nodes) if ((found = fuseShuffle(g, ix, n)) !== undefined) break;
    if (!found) return;
    replaceNodes(g, found.nodes, [found.node]);
  }
}

/** Where each output channel of a ChannelGather comes from, flattened [input, channel, …], outputs in order. */
const sourcesOf = (n: OnnxNode): readonly number[] => attrInts(n, 'sources') ?? [];

/** A ChannelGather with new inputs, outputs and sources, its other attributes kept. */
const regather = (n: OnnxNode, inputs: readonly string[], outputs: readonly string[], sources: number[]): OnnxNode =>
  synthNode(
    n.name,
    'ChannelGather',
    inputs,
    outputs,
    { ...Object.fromEntries(n.attributes), sources: { kind: 'ints', value: sources } },
    VELTAIR_DOMAIN,
  );

/**
 * A gather output whose only reader is another gather is never written: the reader takes those
 * channels from where the first gather would have copied them. ShuffleNet's pass-through half
 * (out of one unit's concat → shuffle → split, into the next unit's concat) is otherwise copied
 * once per unit; composed, each unit writes only the half its branch convs read. Inputs stay
 * within the native op's 64.
 */
export function composeChannelGathers(g: WorkGraph): void {
  const isGather = (n: OnnxNode | undefined): n is OnnxNode =>
    n !== undefined && n.domain === VELTAIR_DOMAIN && n.opType === 'ChannelGather';
  for (;;) {
    const ix = indexGraph(g);
    let done = true;
    for (const reader of g.nodes) {
      if (!isGather(reader)) continue;
      const k = reader.inputs.findIndex((v) => {
        const p = ix.producer.get(v);
        return isGather(p) && p !== reader && !g.graphOutputs.has(v) && consumersOf(ix, v).length === 1;
      });
      if (k < 0) continue;
      const writer = ix.producer.get(reader.inputs[k]!)!;
      const o = writer.outputs.indexOf(reader.inputs[k]!);
      const wSrc = sourcesOf(writer),
        rSrc = sourcesOf(reader);
      // first[i]: the writer's first source entry (in channels) of output i.
      const first = [0];
      for (const w of writer.outputs) first.push(first[first.length - 1]! + shapeOf(g, w)[1]!);
      const inputs = reader.inputs.filter((_, i) => i !== k);
      const slot = (name: string) => {
        if (!inputs.includes(name)) inputs.push(name);
        return inputs.indexOf(name);
      };
      const sources: number[] = [];
      for (let j = 0; j < rSrc.length; j += 2) {
        const [i, c] = [rSrc[j]!, rSrc[j + 1]!];
        if (i === k) sources.push(slot(writer.inputs[wSrc[2 * (first[o]! + c)]!]!), wSrc[2 * (first[o]! + c) + 1]!);
        else sources.push(slot(reader.inputs[i]!), c);
      }
      if (inputs.length > 64) continue;
      const kept = writer.outputs.flatMap((w, i) => (i === o ? [] : [w]));
      const keptSources = writer.outputs.flatMap((_, i) => (i === o ? [] : wSrc.slice(2 * first[i]!, 2 * first[i + 1]!)));
      const replacement = kept.length === 0 ? [] : [regather(writer, writer.inputs, kept, keptSources)];
      const composed = regather(reader, inputs, reader.outputs, sources);
      g.nodes = g.nodes.flatMap((n) => (n === writer ? replacement : n === reader ? [composed] : [n]));
      done = false;
      break;
    }
    if (done) return;
  }
}
