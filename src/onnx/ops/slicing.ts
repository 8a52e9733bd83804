/**
 * Operators that cut and join along axes: Concat, Split, Slice, Gather, GatherElements, Pad.
 * Slice follows the spec's clamping rules (negative indices, negative steps, INT64_MAX ends).
 */
import type { TensorData, ValueType } from '../model.js';
import { attrInt, attrInts } from '../attributes.js';
import { formatShape, product, stridesOf } from '../shapes.js';
import { allocData, nums, stridedCopy } from '../eval.js';
import { attrError, constInts, hasInput, input, normAxis, shapeError, type OpContext, type OpDef } from './context.js';

const concatOp: OpDef = {
  infer: (ctx) => {
    const ins = ctx.inputs.filter((t): t is ValueType => t !== undefined);
    const first = ins[0] ?? input(ctx, 0);
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', 0), first.shape.length);
    let total = 0;
    for (const t of ins) {
      const ok = t.shape.length === first.shape.length && t.shape.every((d, i) => i === axis || d === first.shape[i]);
      if (!ok) throw shapeError(ctx, `inputs ${ins.map((u) => formatShape(u.shape)).join(', ')} differ outside axis ${axis}`);
      total += t.shape[axis]!;
    }
    return [{ dtype: first.dtype, shape: first.shape.map((d, i) => (i === axis ? total : d)) }];
  },
  evaluate: (ctx, ins, [out]) => {
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', 0), out!.shape.length);
    const outer = product(out!.shape.slice(0, axis));
    const inner = product(out!.shape.slice(axis + 1));
    const data = allocData(out!.dtype, product(out!.shape)) as unknown as unknown[];
    const rowLen = out!.shape[axis]! * inner;
    let offset = 0;
    for (const t of ins) {
      const src = t.data as unknown as unknown[];
      const chunk = t.dims[axis]! * inner;
      for (let o = 0; o < outer; o++) {
        for (let j = 0; j < chunk; j++) data[o * rowLen + offset + j] = src[o * chunk + j];
      }
      offset += chunk;
    }
    return [{ dtype: out!.dtype, dims: out!.shape, data: data as unknown as TensorData }];
  },
};

function splitSizes(ctx: OpContext, dim: number): number[] {
  const outputs = ctx.node.outputs.length;
  const explicit = ctx.opset < 13 ? attrInts(ctx.node, 'split')?.slice() : hasInput(ctx, 1) ? constInts(ctx, 1, 'split sizes') : undefined;
  if (explicit !== undefined && explicit.length > 0) {
    if (explicit.length !== outputs || explicit.reduce((a, b) => a + b, 0) !== dim) {
      throw shapeError(ctx, `split sizes [${explicit.join(', ')}] do not cover dimension ${dim} with ${outputs} outputs`);
    }
    return explicit;
  }
  if (ctx.opset >= 18 && attrInt(ctx.node, 'num_outputs', 0) > 0) {
    const n = attrInt(ctx.node, 'num_outputs', 0);
    const chunk = Math.ceil(dim / n);
    return Array.from({ length: n }, (_, i) => Math.max(0, Math.min(chunk, dim - i * chunk)));
  }
  if (dim % outputs !== 0) throw shapeError(ctx, `dimension ${dim} cannot be split evenly into ${outputs} outputs`);
  return new Array<number>(outputs).fill(dim / outputs);
}

const splitOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', 0), x.shape.length);
    return splitSizes(ctx, x.shape[axis]!).map((s) => ({ dtype: x.dtype, shape: x.shape.map((d, i) => (i === axis ? s : d)) }));
  },
  evaluate: (ctx, [x], outs) => {
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', 0), x!.dims.length);
    const strides = stridesOf(x!.dims);
    let start = 0;
    return outs.map((o) => {
      const t = stridedCopy(x!, o.shape, strides, start * strides[axis]!);
      start += o.shape[axis]!;
      return t;
    });
  },
};

interface SliceAxis {
  readonly axis: number;
  readonly start: number;
  readonly step: number;
  readonly count: number;
}

function sliceOperands(ctx: OpContext): { starts: number[]; ends: number[]; axes: number[]; steps: number[] } {
  if (ctx.opset < 10) {
    const starts = [...(attrInts(ctx.node, 'starts') ?? [])];
    const ends = [...(attrInts(ctx.node, 'ends') ?? [])];
    const axes = attrInts(ctx.node, 'axes')?.slice() ?? starts.map((_, i) => i);
    return { starts, ends, axes, steps: starts.map(() => 1) };
  }
  const starts = constInts(ctx, 1, 'starts');
  const ends = constInts(ctx, 2, 'ends');
  const axes = hasInput(ctx, 3) ? constInts(ctx, 3, 'axes') : starts.map((_, i) => i);
  const steps = hasInput(ctx, 4) ? constInts(ctx, 4, 'steps') : starts.map(() => 1);
  if (ends.length !== starts.length || axes.length !== starts.length || steps.length !== starts.length) {
    throw attrError(ctx, `starts/ends/axes/steps have different lengths (${starts.length}/${ends.length}/${axes.length}/${steps.length})`);
  }
  return { starts, ends, axes, steps };
}

function sliceAxes(ctx: OpContext, shape: readonly number[]): SliceAxis[] {
  const { starts, ends, axes, steps } = sliceOperands(ctx);
  return axes.map((raw, i) => {
    const axis = normAxis(ctx, raw, shape.length);
    const dim = shape[axis]!;
    const step = steps[i]!;
    if (step === 0) throw attrError(ctx, `step 0 on axis ${raw}`);
    let s = starts[i]!;
    let e = ends[i]!;
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = Math.min(Math.max(s, 0), dim);
      e = Math.min(Math.max(e, 0), dim);
    } else {
      s = Math.min(Math.max(s, 0), dim - 1);
      e = Math.min(Math.max(e, -1), dim - 1);
    }
    const count = step > 0 ? Math.max(0, Math.ceil((e - s) / step)) : Math.max(0, Math.ceil((s - e) / -step));
    return { axis, start: s, step, count };
  });
}

const sliceOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const shape = [...x.shape];
    for (const a of sliceAxes(ctx, x.shape)) shape[a.axis] = a.count;
    return [{ dtype: x.dtype, shape }];
  },
  evaluate: (ctx, [x], [out]) => {
    const strides = stridesOf(x!.dims);
    const steps = [...strides];
    let start = 0;
    for (const a of sliceAxes(ctx, x!.dims)) {
      steps[a.axis] = strides[a.axis]! * a.step;
      if (a.count > 0) start += a.start * strides[a.axis]!;
    }
    return [stridedCopy(x!, out!.shape, steps, start)];
  },
};

const gatherOp: OpDef = {
  infer: (ctx) => {
    const data = input(ctx, 0);
    const idx = input(ctx, 1);
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', 0), data.shape.length);
    return [{ dtype: data.dtype, shape: [...data.shape.slice(0, axis), ...idx.shape, ...data.shape.slice(axis + 1)] }];
  },
  evaluate: (ctx, [data, indices], [out]) => {
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', 0), data!.dims.length);
    const dim = data!.dims[axis]!;
    const outer = product(data!.dims.slice(0, axis));
    const inner = product(data!.dims.slice(axis + 1));
    const idx = Array.from(nums(indices!), (i) => {
      const k = i < 0 ? i + dim : i;
      if (k < 0 || k >= dim) throw shapeError(ctx, `index ${i} is out of range for axis ${axis} of size ${dim}`);
      return k;
    });
    const src = data!.data as unknown as unknown[];
    const dst = allocData(out!.dtype, product(out!.shape)) as unknown as unknown[];
    let w = 0;
    for (let o = 0; o < outer; o++) {
      for (const k of idx) {
        const base = (o * dim + k) * inner;
        for (let j = 0; j < inner; j++) dst[w++] = src[base + j];
      }
    }
    return [{ dtype: out!.dtype, dims: out!.shape, data: dst as unknown as TensorData }];
  },
};

const gatherElementsOp: OpDef = {
  infer: (ctx) => {
    const data = input(ctx, 0);
    const idx = input(ctx, 1);
    if (idx.shape.length !== data.shape.length)
      throw shapeError(ctx, `indices ${formatShape(idx.shape)} and data ${formatShape(data.shape)} differ in rank`);
    return [{ dtype: data.dtype, shape: idx.shape }];
  },
};

function padAmounts(ctx: OpContext, rank: number): number[] {
  if (ctx.opset < 11) {
    const pads = attrInts(ctx.node, 'pads') ?? attrInts(ctx.node, 'paddings') ?? [];
    if (pads.length !== 2 * rank) throw attrError(ctx, `pads has ${pads.length} values, expected ${2 * rank}`);
    return [...pads];
  }
  const pads = constInts(ctx, 1, 'pads');
  const axes = hasInput(ctx, 3) ? constInts(ctx, 3, 'axes').map((a) => normAxis(ctx, a, rank)) : undefined;
  if (axes === undefined) {
    if (pads.length !== 2 * rank) throw attrError(ctx, `pads has ${pads.length} values, expected ${2 * rank}`);
    return pads;
  }
  if (pads.length !== 2 * axes.length) throw attrError(ctx, `pads has ${pads.length} values for ${axes.length} axes`);
  const full = new Array<number>(2 * rank).fill(0);
  axes.forEach((a, i) => {
    full[a] = pads[i]!;
    full[a + rank] = pads[i + axes.length]!;
  });
  return full;
}

const padOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const r = x.shape.length;
    const pads = padAmounts(ctx, r);
    const shape = x.shape.map((d, i) => d + pads[i]! + pads[i + r]!);
    if (shape.some((d) => d < 0))
      throw shapeError(ctx, `pads [${pads.join(', ')}] remove more than the input ${formatShape(x.shape)} holds`);
    return [{ dtype: x.dtype, shape }];
  },
};

export const slicingOps: Readonly<Record<string, OpDef>> = {
  Concat: concatOp,
  Split: splitOp,
  Slice: sliceOp,
  Gather: gatherOp,
  GatherElements: gatherElementsOp,
  Pad: padOp,
};
