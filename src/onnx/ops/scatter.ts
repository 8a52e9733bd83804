/**
 * ScatterND: a copy of `data` with the slices that `indices` names replaced by (or combined with) `updates`.
 * Exports write it for slice assignment (`mask[a:b, c:d] = k`): Swin's shifted-window masks and Swin-V2's
 * zeroed key bias. Those are built from shapes and constants, so folding them here is what lets such models
 * compile; a ScatterND on run-time values has no lowering and is refused by the runtime's preflight.
 */
import type { Tensor, TensorData } from '../model.js';
import { attrString } from '../attributes.js';
import { formatShape, product } from '../shapes.js';
import { allocData, nums, storeFor } from '../eval.js';
import { quoteForMessage } from '../../errors.js';
import { attrError, input, shapeError, type OpContext, type OpDef } from './context.js';

type Combine = (old: number, update: number) => number;

/** The opset each reduction arrived in (ScatterND-16 added add and mul, ScatterND-18 max and min). */
const REDUCTION_OPSET: Readonly<Record<string, number>> = { none: 11, add: 16, mul: 16, max: 18, min: 18 };

const REDUCTIONS: Readonly<Record<string, Combine>> = {
  none: (_old, update) => update,
  add: (old, update) => old + update,
  mul: (old, update) => old * update,
  max: (old, update) => Math.max(old, update),
  min: (old, update) => Math.min(old, update),
};

function reductionOf(ctx: OpContext): Combine {
  const name = attrString(ctx.node, 'reduction', 'none');
  const combine = REDUCTIONS[name];
  if (combine === undefined)
    throw attrError(ctx, `reduction ${quoteForMessage(name, 20)} is not one of ${Object.keys(REDUCTIONS).join(', ')}`);
  const since = REDUCTION_OPSET[name]!;
  if (ctx.opset < since)
    throw attrError(ctx, `reduction ${quoteForMessage(name, 20)} needs opset ${since}; the model imports ${ctx.opset}`);
  return combine;
}

/** The flat offset of every slice `indices` names, checked against `dataDims` (negative indices count from the end). */
function sliceOffsets(ctx: OpContext, dataDims: readonly number[], indices: Tensor): number[] {
  const depth = indices.dims[indices.dims.length - 1]!;
  const sliceSize = product(dataDims.slice(depth));
  const idx = nums(indices);
  const offsets: number[] = [];
  // Counted from the index shape, not idx.length / depth: a depth of 0 names the whole of data once per tuple.
  const tuples = product(indices.dims.slice(0, -1));
  for (let t = 0; t < tuples; t++) {
    const start = t * depth;
    let flat = 0;
    for (let axis = 0; axis < depth; axis++) {
      const dim = dataDims[axis]!;
      const raw = idx[start + axis]!;
      const k = raw < 0 ? raw + dim : raw;
      if (k < 0 || k >= dim) throw shapeError(ctx, `index ${raw} is out of range for axis ${axis} of size ${dim}`);
      flat = flat * dim + k;
    }
    offsets.push(flat * sliceSize);
  }
  return offsets;
}

const scatterNdOp: OpDef = {
  infer: (ctx) => {
    const data = input(ctx, 0);
    const indices = input(ctx, 1);
    const updates = input(ctx, 2);
    reductionOf(ctx);
    const depth = indices.shape[indices.shape.length - 1];
    if (depth === undefined || depth > data.shape.length) {
      throw shapeError(ctx, `indices ${formatShape(indices.shape)} cannot index data ${formatShape(data.shape)}`);
    }
    const expected = [...indices.shape.slice(0, -1), ...data.shape.slice(depth)];
    if (formatShape(expected) !== formatShape(updates.shape)) {
      const into = `indices ${formatShape(indices.shape)} into data ${formatShape(data.shape)}`;
      throw shapeError(ctx, `updates are ${formatShape(updates.shape)}; ${into} need ${formatShape(expected)}`);
    }
    return [{ dtype: data.dtype, shape: data.shape }];
  },
  evaluate: (ctx, [data, indices, updates], [out]) => {
    const combine = reductionOf(ctx);
    const store = storeFor(out!.dtype);
    const src = nums(data!);
    const dst = allocData(out!.dtype, src.length) as unknown as number[];
    for (let i = 0; i < src.length; i++) dst[i] = src[i]!;
    const upd = nums(updates!);
    const sliceSize = product(data!.dims.slice(indices!.dims[indices!.dims.length - 1]!));
    sliceOffsets(ctx, data!.dims, indices!).forEach((offset, s) => {
      for (let j = 0; j < sliceSize; j++) dst[offset + j] = store(combine(dst[offset + j]!, upd[s * sliceSize + j]!));
    });
    return [{ dtype: out!.dtype, dims: out!.shape, data: dst as unknown as TensorData }];
  },
};

export const scatterOps: Readonly<Record<string, OpDef>> = {
  ScatterND: scatterNdOp,
};
