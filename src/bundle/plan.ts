/**
 * The graph plan: what the runtime executes. Values get a physical layout, every consumer that
 * needs another layout reads a 'reorder' step's output instead, values that are slices of other
 * values share their bytes, and every storage root gets an offset in one activation arena.
 *
 * Layout rules (see layout.ts for the names):
 *  - conv2d runs in nchw{V}c, dense / batch_matmul in rows{V}, V = the vector width of the layer's
 *    usable versions (the target's widest, unless the family has none at that width); a conv with
 *    very few input channels (an RGB stem) reads a value that exists in the natural layout (the
 *    graph input) as it is, through its kernel's `_run_nchw`: no reorder unless another reader needs one;
 *  - residual_add operands use the layer's output layout; channel_mul gates the blocked layout of
 *    their own rank ([N][Cpad] for conv, [Npad] for dense);
 *  - a non-tunable layer with a blocked form runs blocked when an input arrives blocked
 *    (plan-layouts.ts), so blocked values flow through pooling, elementwise ops and chains, batch
 *    norm, channel concat / split / slice / shuffle; everything else, graph inputs and graph
 *    outputs are natural ('nchw', row-major);
 *  - Reshape/Flatten/Squeeze/Unsqueeze of a natural value are in place: they share its bytes; so
 *    is one of a blocked [N, C, 1, 1] to [N, C], read as rows{V} (plan-layouts.ts);
 *  - concat inputs are written straight into their slice of the concat buffer, and split/slice
 *    outputs are slices of their input, where the bytes are contiguous (plan-views.ts): `viewOf`;
 *  - quantized layers keep integer values channels-last (plan-quant.ts); qconv2d / qmatmul get
 *    versions (INT8 kernels) when `choices` has them.
 */
import type { Layer, LayerGraph } from '../ir/layer.js';
import type { DType } from '../onnx/model.js';
import { internalError } from '../errors.js';
import { assignArena, type StorageGroup } from './arena.js';
import { blockedLayout, canonicalLayout, dtypeBytes, layoutElements, NATURAL, rowsLayout, type Layout } from './layout.js';
import { globalPoolReadBlocked, nonTunableNeeds, readsNchw, sliceOnChannels, VIEW_OPS, type Needs } from './plan-layouts.js';
import { channelSliceOffset, Placement, type ViewRef } from './plan-views.js';
import { isQuantizedLayer, quantNeeds } from './plan-quant.js';

export interface PlanValue {
  readonly id: number;
  /** The model's name of the logical value (display only). */
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly layout: Layout;
  readonly bytes: number;
  readonly offset: number;
  /** The value lives inside another one's bytes (an in-place view, a concat input's slice, a split part). */
  readonly viewOf?: ViewRef;
}

export type PlanStep =
  | {
      readonly index: number;
      readonly op: 'layer';
      readonly layer: number;
      readonly layout: Layout;
      readonly inputs: readonly number[];
      readonly outputs: readonly number[];
      /** Tunable layers: the version ids the runtime may pick from (all in `layout`). */
      readonly versions?: readonly string[];
      /** Nothing to do: every output already shares its bytes with the data it holds (views, placed concats, splits). */
      readonly inPlace?: true;
    }
  | {
      readonly index: number;
      readonly op: 'reorder';
      readonly from: Layout;
      readonly to: Layout;
      readonly inputs: readonly [number];
      readonly outputs: readonly [number];
    };

export interface GraphPlan {
  readonly vectorWidth: number;
  readonly inputs: readonly { readonly name: string; readonly value: number }[];
  readonly outputs: readonly { readonly name: string; readonly value: number }[];
  readonly values: readonly PlanValue[];
  readonly steps: readonly PlanStep[];
  readonly arenaBytes: number;
}

/** A tunable layer's place in the plan: the vector width it runs at and the versions usable there. */
export interface LayerChoice {
  readonly vec: number;
  readonly versions: readonly string[];
}

/**
 * A tunable layer's layouts. A small-cin conv (readsNchw) takes its data input in the natural
 * layout when `natural(value)` says that layout exists: its kernel's `_run_nchw` reads it as is.
 */
function tunableNeeds(l: Layer, vec: number, natural: (value: string) => boolean): Needs {
  const own = l.op === 'conv2d' ? blockedLayout(vec) : rowsLayout(vec);
  const extras = l.epilogue.filter((s) => s.kind === 'residual_add' || s.kind === 'channel_mul');
  const args = l.inputs.length - extras.length;
  const gateLayout = (shape: readonly number[]) => (shape.length === 4 ? blockedLayout(vec) : rowsLayout(vec));
  const inputs = l.inputs.map((v, i) => {
    if (i === 0 && readsNchw(l, vec) && natural(v)) return NATURAL;
    if (i < args) return own;
    const step = extras[i - args]!;
    return step.kind === 'residual_add' ? own : gateLayout(l.inputShapes[i] ?? []);
  });
  return { layout: own, inputs, outputs: l.outputs.map(() => own) };
}

type DraftValue = Omit<PlanValue, 'offset' | 'viewOf'>;
type LayerStep = Extract<PlanStep, { op: 'layer' }>;

export function buildGraphPlan(graph: LayerGraph, choices: ReadonlyMap<number, LayerChoice>, vectorWidth: number): GraphPlan {
  const values: DraftValue[] = [];
  const steps: PlanStep[] = [];
  const shapeOf = (name: string): readonly number[] => {
    const s = graph.shapes.get(name);
    if (s === undefined) throw internalError(`plan: value ${JSON.stringify(name)} has no shape`);
    return s;
  };
  const dtypes = new Map<string, DType>(graph.inputs.map((i) => [i.name, i.dtype]));
  const physical = new Map<string, Map<Layout, number>>();
  const producedIn = new Map<string, Layout>();
  const placement = new Placement((id) => ({ ...values[id]!, elementBytes: dtypeBytes(values[id]!.dtype) }));

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
  const layerOf = new Map(graph.layers.map((l) => [l.index, l]));
  const readers = new Map<string, Layer[]>();
  for (const l of graph.layers)
    for (const v of l.inputs) {
      if (!readers.has(v)) readers.set(v, []);
      readers.get(v)!.push(l);
    }
  const graphOutputs = new Set(graph.outputs.map((o) => o.name));
  const poolReadBlocked = (v: string) =>
    globalPoolReadBlocked(
      v,
      (x) => readers.get(x) ?? [],
      (x) => graphOutputs.has(x),
    );
  for (const l of graph.layers) {
    for (const o of l.outputs) dtypes.set(o, graph.dtypes?.get(o) ?? l.dtype);
    const choice = choices.get(l.index);
    let needs: Needs;
    if (l.tunable) {
      if (!choice) throw internalError(`plan: tunable layer ${l.index} has no usable version`);
      needs = tunableNeeds(l, choice.vec, (v) => physical.get(v)?.has(NATURAL) === true);
    } else if (isQuantizedLayer(l)) {
      needs = quantNeeds(l, (v) => producedIn.get(v));
    } else {
      needs = nonTunableNeeds(l, { producedIn: (v) => producedIn.get(v), poolReadBlocked });
    }
    const ins = l.inputs.map((v, i) => read(v, needs.inputs[i]!));
    const outs = l.outputs.map((v, i) => produce(v, needs.outputs[i]!));
    const inPlace = VIEW_OPS.has(l.op) && outs.length === 1 && ins.length === 1 && values[ins[0]!]!.bytes === values[outs[0]!]!.bytes;
    if (inPlace) placement.attach(outs[0]!, ins[0]!, 0);
    steps.push({
      index: steps.length,
      op: 'layer',
      layer: l.index,
      layout: needs.layout,
      inputs: ins,
      outputs: outs,
      ...(choice ? { versions: [...choice.versions] } : {}),
      ...(inPlace ? { inPlace: true as const } : {}),
    });
  }
  const outputs = graph.outputs.map((o) => ({ name: o.name, value: read(o.name, NATURAL) }));
  const planned = placeSlices(steps, values, layerOf, placement, new Set(inputs.map((i) => i.value)));
  const offsets = arenaOffsets(
    values,
    planned,
    placement,
    inputs.map((i) => i.value),
    outputs.map((o) => o.value),
  );
  return {
    vectorWidth,
    inputs,
    outputs,
    values: values.map((v) => {
      const view = placement.viewOf(v.id);
      return { ...v, offset: offsets.offsets.get(v.id)!, ...(view ? { viewOf: view } : {}) };
    }),
    steps: planned,
    arenaBytes: offsets.bytes,
  };
}

/** Channel-axis slice offsets of a concat's inputs / a split's outputs (undefined: not contiguous). */
function sliceOffsets(parts: readonly DraftValue[], whole: DraftValue): (number | undefined)[] {
  let c0 = 0;
  return parts.map((p, i) => {
    const c = p.shape[1] ?? 0;
    const off = channelSliceOffset({ ...whole, elementBytes: dtypeBytes(whole.dtype) }, c0, c, i === parts.length - 1);
    c0 += c;
    return p.layout === whole.layout && p.dtype === whole.dtype ? off : undefined;
  });
}

function sliceStart(l: Layer): number | undefined {
  const starts = l.attrs['starts'];
  const s = Array.isArray(starts) ? starts[0] : starts;
  if (typeof s !== 'number') return undefined;
  const dim = l.inputShapes[0]![1]!;
  const start = s < 0 ? s + dim : s;
  return Math.min(Math.max(start, 0), dim);
}

/** Concat inputs into their slices, split / slice outputs as slices of their input; steps with nothing left to do become in place. */
function placeSlices(
  steps: readonly PlanStep[],
  values: readonly DraftValue[],
  layerOf: ReadonlyMap<number, Layer>,
  placement: Placement,
  graphInputs: ReadonlySet<number>,
): PlanStep[] {
  const movable = (id: number) => !graphInputs.has(id);
  return steps.map((s): PlanStep => {
    if (s.op !== 'layer' || s.inPlace) return s;
    const l = layerOf.get(s.layer)!;
    if (l.tunable || (l.attrs['axis'] !== 1 && l.op !== 'slice')) return s;
    if (l.op === 'concat' && s.outputs.length === 1) {
      // A constant part (ViT's class token) is a param, not a step input: the inputs' slices would
      // start at the wrong channel, so such a concat copies.
      if (Object.keys(l.params).length > 0) return s;
      const out = values[s.outputs[0]!]!;
      const offs = sliceOffsets(
        s.inputs.map((i) => values[i]!),
        out,
      );
      const placed = placement.placeConcat(
        out.id,
        s.inputs.map((id, i) => ({ id, offset: offs[i] })),
        movable,
      );
      return placed.every(Boolean) ? inPlaceStep(s) : s;
    }
    const src = values[s.inputs[0]!];
    if (src === undefined || s.inputs.length !== 1) return s;
    let parts: (number | undefined)[] | undefined;
    if (l.op === 'split') {
      parts = sliceOffsets(
        s.outputs.map((o) => values[o]!),
        src,
      );
    } else if (l.op === 'slice' && s.outputs.length === 1 && sliceOnChannels(l)) {
      const start = sliceStart(l);
      const out = values[s.outputs[0]!]!;
      const last = start !== undefined && start + (out.shape[1] ?? 0) === src.shape[1];
      parts =
        start === undefined || out.layout !== src.layout
          ? [undefined]
          : [channelSliceOffset({ ...src, elementBytes: dtypeBytes(src.dtype) }, start, out.shape[1] ?? 0, last)];
    }
    if (parts === undefined || parts.some((p) => p === undefined)) return s;
    s.outputs.forEach((o, i) => placement.attach(o, src.id, parts![i]!));
    return inPlaceStep(s);
  });
}

const inPlaceStep = (s: LayerStep): LayerStep => ({ ...s, inPlace: true });

/** Lifetimes per storage root (a value and every view inside it), then the arena; a view's offset is its root's plus its own. */
function arenaOffsets(
  values: readonly DraftValue[],
  steps: readonly PlanStep[],
  placement: Placement,
  graphInputs: readonly number[],
  graphOutputs: readonly number[],
): { offsets: Map<number, number>; bytes: number } {
  const first = new Map<number, number>(),
    last = new Map<number, number>();
  const touch = (id: number, step: number) => {
    const r = placement.rootOf(id).root;
    first.set(r, Math.min(first.get(r) ?? step, step));
    last.set(r, Math.max(last.get(r) ?? step, step));
  };
  for (const id of graphInputs) touch(id, -1);
  for (const s of steps) {
    for (const v of s.outputs) touch(v, s.index);
    for (const v of s.inputs) touch(v, s.index);
  }
  for (const id of graphOutputs) touch(id, steps.length);
  const groups: StorageGroup[] = values
    .filter((v) => placement.viewOf(v.id) === undefined)
    .map((v) => ({ id: v.id, bytes: v.bytes, first: first.get(v.id) ?? -1, last: last.get(v.id) ?? steps.length }));
  const arena = assignArena(groups);
  const offsets = new Map(
    values.map((v) => {
      const r = placement.rootOf(v.id);
      return [v.id, arena.offsets.get(r.root)! + r.offset];
    }),
  );
  return { offsets, bytes: arena.bytes };
}
