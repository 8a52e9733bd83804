/**
 * The graph plan: what the runtime executes. Values get a physical layout, every consumer that
 * needs another layout reads a 'reorder' step's output instead, and every value gets an offset in
 * one activation arena.
 *
 * Layout rules (see layout.ts for the names):
 *  - conv2d runs in nchw{V}c, dense / batch_matmul in rows{V}, V = the vector width of the layer's
 *    usable versions (the target's widest, unless the family has none at that width);
 *  - residual_add operands use the layer's output layout; channel_mul gates the blocked layout of
 *    their own rank ([N][Cpad] for conv, [Npad] for dense);
 *  - pooling, channel-broadcast add/mul, unary activations and channel concat (every input's
 *    channels a multiple of V) keep a blocked input blocked, so conv chains never leave it; they
 *    must write zeros to padded channels;
 *  - every other op, graph inputs and graph outputs are natural ('nchw', row-major);
 *  - Reshape/Flatten/Squeeze/Unsqueeze of a natural value are in place: they share its bytes.
 */
import type { Layer, LayerGraph } from '../ir/layer.js';
import type { DType } from '../onnx/model.js';
import { internalError } from '../errors.js';
import { assignArena, type StorageGroup } from './arena.js';
import { blockedLayout, canonicalLayout, dtypeBytes, layoutElements, NATURAL, parseLayout, rowsLayout, type Layout } from './layout.js';

export interface PlanValue {
  readonly id: number;
  /** The model's name of the logical value (display only). */
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly layout: Layout;
  readonly bytes: number;
  readonly offset: number;
}

export type PlanStep =
  | { readonly index: number; readonly op: 'layer'; readonly layer: number; readonly layout: Layout;
      readonly inputs: readonly number[]; readonly outputs: readonly number[];
      /** Tunable layers: the version ids the runtime may pick from (all in `layout`). */
      readonly versions?: readonly string[];
      /** View ops: the output shares the input's bytes; nothing to do. */
      readonly inPlace?: true }
  | { readonly index: number; readonly op: 'reorder'; readonly from: Layout; readonly to: Layout;
      readonly inputs: readonly [number]; readonly outputs: readonly [number] };

export interface GraphPlan {
  readonly vectorWidth: number;
  readonly inputs: readonly { readonly name: string; readonly value: number }[];
  readonly outputs: readonly { readonly name: string; readonly value: number }[];
  readonly values: readonly PlanValue[];
  readonly steps: readonly PlanStep[];
  readonly arenaBytes: number;
}

/** A tunable layer's place in the plan: the vector width it runs at and the versions usable there. */
export interface LayerChoice { readonly vec: number; readonly versions: readonly string[] }

const UNARY = new Set(['relu', 'sigmoid', 'clip', 'hardsigmoid', 'hardswish', 'leakyrelu', 'tanh']);
const POOLS = new Set(['maxpool', 'averagepool', 'globalaveragepool']);
const VIEWS = new Set(['reshape', 'flatten', 'squeeze', 'unsqueeze']);
const BINARY = new Set(['add', 'mul']);

const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/** Can this non-tunable layer run on nchw{vec}c inputs and write nchw{vec}c? */
function runsBlocked(l: Layer, vec: number): boolean {
  const shapes = l.inputShapes;
  if (Object.keys(l.params).length > 0 || shapes.some((s) => s.length !== 4) || l.outputShape.length !== 4) return false;
  if (l.dtype !== 'float32' || l.outputs.length !== 1) return false;
  if (UNARY.has(l.op) || POOLS.has(l.op)) return shapes.length === 1;
  if (BINARY.has(l.op)) {
    const [a, b] = shapes;
    return shapes.length === 2 && same(a!, l.outputShape)
      && (same(b!, a!) || (b![1] === a![1] && b![2] === 1 && b![3] === 1 && (b![0] === 1 || b![0] === a![0])));
  }
  if (l.op === 'concat') return l.attrs['axis'] === 1 && shapes.every((s) => s[1]! % vec === 0);
  return false;
}

interface Needs { readonly layout: Layout; readonly inputs: readonly Layout[]; readonly outputs: readonly Layout[] }

function tunableNeeds(l: Layer, vec: number): Needs {
  const own = l.op === 'conv2d' ? blockedLayout(vec) : rowsLayout(vec);
  const extras = l.epilogue.filter((s) => s.kind === 'residual_add' || s.kind === 'channel_mul');
  const args = l.inputs.length - extras.length;
  const gateLayout = (shape: readonly number[]) => (shape.length === 4 ? blockedLayout(vec) : rowsLayout(vec));
  const inputs = l.inputs.map((_, i) => {
    if (i < args) return own;
    const step = extras[i - args]!;
    return step.kind === 'residual_add' ? own : gateLayout(l.inputShapes[i] ?? []);
  });
  return { layout: own, inputs, outputs: l.outputs.map(() => own) };
}

export function buildGraphPlan(graph: LayerGraph, choices: ReadonlyMap<number, LayerChoice>, vectorWidth: number): GraphPlan {
  const values: Omit<PlanValue, 'offset'>[] = [];
  const steps: PlanStep[] = [];
  const shapeOf = (name: string): readonly number[] => {
    const s = graph.shapes.get(name);
    if (s === undefined) throw internalError(`plan: value ${JSON.stringify(name)} has no shape`);
    return s;
  };
  const dtypes = new Map<string, DType>(graph.inputs.map((i) => [i.name, i.dtype]));
  const physical = new Map<string, Map<Layout, number>>();
  const producedIn = new Map<string, Layout>();
  const aliasOf = new Map<number, number>();

  const newValue = (name: string, layout: Layout): number => {
    const shape = shapeOf(name);
    const dtype = dtypes.get(name) ?? 'float32';
    const canon = canonicalLayout(shape, layout);
    const id = values.length;
    values.push({ id, name, shape, dtype, layout: canon, bytes: layoutElements(shape, canon) * dtypeBytes(dtype) });
    const m = physical.get(name) ?? new Map<Layout, number>();
    m.set(canon, id);
    physical.set(name, m);
    return id;
  };
  const produce = (name: string, layout: Layout): number => {
    const id = newValue(name, layout);
    producedIn.set(name, values[id]!.layout);
    return id;
  };
  /** The value `name` in `layout`, reordering once per (value, layout). */
  const read = (name: string, layout: Layout): number => {
    const want = canonicalLayout(shapeOf(name), layout);
    const have = physical.get(name)?.get(want);
    if (have !== undefined) return have;
    const from = producedIn.get(name);
    if (from === undefined) throw internalError(`plan: value ${JSON.stringify(name)} is read before it is written`);
    const src = physical.get(name)!.get(from)!;
    const id = newValue(name, want);
    steps.push({ index: steps.length, op: 'reorder', from, to: want, inputs: [src], outputs: [id] });
    return id;
  };

  const inputs = graph.inputs.map((i) => ({ name: i.name, value: produce(i.name, NATURAL) }));
  for (const l of graph.layers) {
    for (const o of l.outputs) dtypes.set(o, graph.dtypes?.get(o) ?? l.dtype);
    const choice = choices.get(l.index);
    let needs: Needs;
    if (l.tunable) {
      if (!choice) throw internalError(`plan: tunable layer ${l.index} has no usable version`);
      needs = tunableNeeds(l, choice.vec);
    } else {
      const first = l.inputs[0] === undefined ? undefined : producedIn.get(l.inputs[0]);
      const p = first === undefined ? undefined : parseLayout(first);
      const blocked = p?.kind === 'blocked' && runsBlocked(l, p.vec) ? first! : NATURAL;
      needs = { layout: blocked, inputs: l.inputs.map(() => blocked), outputs: l.outputs.map(() => blocked) };
    }
    const ins = l.inputs.map((v, i) => read(v, needs.inputs[i]!));
    const outs = l.outputs.map((v, i) => produce(v, needs.outputs[i]!));
    const inPlace = VIEWS.has(l.op) && outs.length === 1 && ins.length === 1 && values[ins[0]!]!.bytes === values[outs[0]!]!.bytes;
    if (inPlace) aliasOf.set(outs[0]!, ins[0]!);
    steps.push({
      index: steps.length, op: 'layer', layer: l.index, layout: needs.layout, inputs: ins, outputs: outs,
      ...(l.tunable ? { versions: [...choice!.versions] } : {}),
      ...(inPlace ? { inPlace: true as const } : {}),
    });
  }
  const outputs = graph.outputs.map((o) => ({ name: o.name, value: read(o.name, NATURAL) }));
  const offsets = arenaOffsets(values, steps, inputs.map((i) => i.value), outputs.map((o) => o.value), aliasOf);
  return {
    vectorWidth, inputs, outputs,
    values: values.map((v) => ({ ...v, offset: offsets.offsets.get(v.id)! })),
    steps, arenaBytes: offsets.bytes,
  };
}

/** Lifetimes per storage group (a value plus its in-place views), then the arena. */
function arenaOffsets(values: readonly Omit<PlanValue, 'offset'>[], steps: readonly PlanStep[], graphInputs: readonly number[],
  graphOutputs: readonly number[], aliasOf: ReadonlyMap<number, number>): { offsets: Map<number, number>; bytes: number } {
  const root = (id: number): number => { let r = id; while (aliasOf.has(r)) r = aliasOf.get(r)!; return r; };
  const first = new Map<number, number>(), last = new Map<number, number>();
  const touch = (id: number, step: number) => {
    const r = root(id);
    first.set(r, Math.min(first.get(r) ?? step, step));
    last.set(r, Math.max(last.get(r) ?? step, step));
  };
  for (const id of graphInputs) touch(id, -1);
  for (const s of steps) { for (const v of s.outputs) touch(v, s.index); for (const v of s.inputs) touch(v, s.index); }
  for (const id of graphOutputs) touch(id, steps.length);
  const groups: StorageGroup[] = values.filter((v) => root(v.id) === v.id)
    .map((v) => ({ id: v.id, bytes: v.bytes, first: first.get(v.id) ?? -1, last: last.get(v.id) ?? steps.length }));
  const arena = assignArena(groups);
  const offsets = new Map(values.map((v) => [v.id, arena.offsets.get(root(v.id))!]));
  return { offsets, bytes: arena.bytes };
}
