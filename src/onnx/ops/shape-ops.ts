/**
 * Operators that rearrange or generate shapes: Shape, Size, Reshape, Flatten, Transpose, Squeeze,
 * Unsqueeze, Expand, Tile, Constant, ConstantOfShape, Range, DepthToSpace, SpaceToDepth. Their
 * evaluators are what make exporter shape sub-graphs fold away.
 */
import type { Tensor } from '../model.js';
import { attrInt, attrInts, attrTensor, hasAttr } from '../attributes.js';
import { broadcastShapes, formatShape, product, stridesOf } from '../shapes.js';
import { allocData, broadcastStrides, intsTensor, nums, reshaped, stridedCopy, tensorOf } from '../eval.js';
import { attrError, constInts, constScalar, hasInput, input, normAxis, shapeError, type OpContext, type OpDef } from './context.js';

function shapeRange(ctx: OpContext, rank: number): [number, number] {
  const clampAxis = (a: number): number => Math.min(rank, Math.max(0, a < 0 ? a + rank : a));
  const start = ctx.opset >= 15 ? clampAxis(attrInt(ctx.node, 'start', 0)) : 0;
  const end = ctx.opset >= 15 && hasAttr(ctx.node, 'end') ? clampAxis(attrInt(ctx.node, 'end', rank)) : rank;
  return [start, Math.max(start, end)];
}

const shapeOp: OpDef = {
  foldsFromTypes: true,
  infer: (ctx) => {
    const [s, e] = shapeRange(ctx, input(ctx, 0).shape.length);
    return [{ dtype: 'int64', shape: [e - s] }];
  },
  evaluate: (ctx) => {
    const shape = input(ctx, 0).shape;
    const [s, e] = shapeRange(ctx, shape.length);
    return [intsTensor(shape.slice(s, e))];
  },
};

const sizeOp: OpDef = {
  foldsFromTypes: true,
  infer: () => [{ dtype: 'int64', shape: [] }],
  evaluate: (ctx) => [intsTensor([product(input(ctx, 0).shape)], [])],
};

function reshapeTarget(ctx: OpContext, from: readonly number[]): number[] {
  const requested = ctx.opset < 5 ? [...(attrInts(ctx.node, 'shape') ?? [])] : constInts(ctx, 1, 'target shape');
  const allowZero = attrInt(ctx.node, 'allowzero', 0) === 1;
  const out = requested.map((d, i) => {
    if (d === 0 && !allowZero) {
      if (i >= from.length) {
        throw shapeError(
          ctx,
          `target shape [${requested.join(', ')}] copies dim ${i} (0) but the input ${formatShape(from)} has rank ${from.length}`,
        );
      }
      return from[i]!;
    }
    return d;
  });
  const unknown = out.filter((d) => d === -1).length;
  if (unknown > 1 || out.some((d) => d < -1)) throw shapeError(ctx, `target shape [${requested.join(', ')}] is invalid`);
  const total = product(from);
  const known = product(out.filter((d) => d !== -1));
  if (unknown === 1) {
    if (known === 0 || total % known !== 0) {
      throw shapeError(ctx, `cannot reshape ${formatShape(from)} (${total} elements) to [${requested.join(', ')}]`);
    }
    return out.map((d) => (d === -1 ? total / known : d));
  }
  if (known !== total)
    throw shapeError(ctx, `cannot reshape ${formatShape(from)} (${total} elements) to [${requested.join(', ')}] (${known} elements)`);
  return out;
}

const reshapeOp: OpDef = {
  infer: (ctx) => [{ dtype: input(ctx, 0).dtype, shape: reshapeTarget(ctx, input(ctx, 0).shape) }],
  evaluate: (_ctx, [x], [out]) => [reshaped(x!, out!.shape)],
};

const flattenOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const r = x.shape.length;
    const raw = attrInt(ctx.node, 'axis', 1);
    const axis = raw < 0 ? raw + r : raw;
    if (axis < 0 || axis > r) throw attrError(ctx, `axis ${raw} is out of range for rank ${r}`);
    return [{ dtype: x.dtype, shape: [product(x.shape.slice(0, axis)), product(x.shape.slice(axis))] }];
  },
  evaluate: (_ctx, [x], [out]) => [reshaped(x!, out!.shape)],
};

function permutation(ctx: OpContext, rank: number): number[] {
  const perm = attrInts(ctx.node, 'perm');
  if (perm === undefined || perm.length === 0) return Array.from({ length: rank }, (_, i) => rank - 1 - i);
  const sorted = [...perm].sort((a, b) => a - b);
  if (perm.length !== rank || sorted.some((p, i) => p !== i))
    throw attrError(ctx, `perm [${perm.join(', ')}] is not a permutation of ${rank} axes`);
  return [...perm];
}

const transposeOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    return [{ dtype: x.dtype, shape: permutation(ctx, x.shape.length).map((p) => x.shape[p]!) }];
  },
  evaluate: (ctx, [x], [out]) => {
    const s = stridesOf(x!.dims);
    return [
      stridedCopy(
        x!,
        out!.shape,
        permutation(ctx, x!.dims.length).map((p) => s[p]!),
        0,
      ),
    ];
  },
};

/** Squeeze/Unsqueeze axes: an attribute before opset 13, an (optional for Squeeze) input from 13. */
function axesOperand(ctx: OpContext): number[] | undefined {
  if (ctx.opset < 13) return attrInts(ctx.node, 'axes')?.slice();
  return hasInput(ctx, 1) ? constInts(ctx, 1, 'axes') : undefined;
}

const squeezeOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const axes = axesOperand(ctx)?.map((a) => normAxis(ctx, a, x.shape.length));
    if (axes === undefined) return [{ dtype: x.dtype, shape: x.shape.filter((d) => d !== 1) }];
    for (const a of axes) {
      if (x.shape[a] !== 1) throw shapeError(ctx, `cannot squeeze axis ${a} of shape ${formatShape(x.shape)}: its size is not 1`);
    }
    return [{ dtype: x.dtype, shape: x.shape.filter((_, i) => !axes.includes(i)) }];
  },
  evaluate: (_ctx, [x], [out]) => [reshaped(x!, out!.shape)],
};

const unsqueezeOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const raw = axesOperand(ctx);
    if (raw === undefined) throw attrError(ctx, 'Unsqueeze needs axes');
    const rank = x.shape.length + raw.length;
    const axes = raw.map((a) => normAxis(ctx, a, rank));
    if (new Set(axes).size !== axes.length) throw attrError(ctx, `axes [${raw.join(', ')}] repeat an axis`);
    const shape: number[] = [];
    let next = 0;
    for (let i = 0; i < rank; i++) shape.push(axes.includes(i) ? 1 : x.shape[next++]!);
    return [{ dtype: x.dtype, shape }];
  },
  evaluate: (_ctx, [x], [out]) => [reshaped(x!, out!.shape)],
};

const expandOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const target = constInts(ctx, 1, 'target shape');
    const shape = broadcastShapes([x.shape, target]);
    if (shape === undefined) throw shapeError(ctx, `input ${formatShape(x.shape)} cannot be expanded to [${target.join(', ')}]`);
    return [{ dtype: x.dtype, shape }];
  },
  evaluate: (_ctx, [x], [out]) => [stridedCopy(x!, out!.shape, broadcastStrides(out!.shape, x!.dims), 0)],
};

const tileOp: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const reps = constInts(ctx, 1, 'repeats');
    if (reps.length !== x.shape.length || reps.some((r) => r < 0)) {
      throw shapeError(ctx, `repeats [${reps.join(', ')}] do not match input rank ${x.shape.length}`);
    }
    return [{ dtype: x.dtype, shape: x.shape.map((d, i) => d * reps[i]!) }];
  },
  evaluate: (ctx, [x], [out]) => {
    // Tile = copy from an interleaved [r0, d0, r1, d1, …] view where repeat axes have stride 0.
    const reps = constInts(ctx, 1, 'repeats');
    const s = stridesOf(x!.dims);
    const dims = x!.dims.flatMap((d, i) => [reps[i]!, d]);
    const strides = x!.dims.flatMap((_, i) => [0, s[i]!]);
    return [reshaped(stridedCopy(x!, dims, strides, 0), out!.shape)];
  },
};

function constantValue(ctx: OpContext): Tensor {
  const n = ctx.node;
  const t = attrTensor(n, 'value');
  if (t !== undefined) return t;
  const a = (name: string) => n.attributes.get(name);
  const vf = a('value_float');
  if (vf?.kind === 'float' || vf?.kind === 'int') return tensorOf('float32', [], [vf.value]);
  const vfs = a('value_floats');
  if (vfs?.kind === 'floats' || vfs?.kind === 'ints') return tensorOf('float32', [vfs.value.length], vfs.value);
  const vi = a('value_int');
  if (vi?.kind === 'int') return intsTensor([vi.value], []);
  const vis = a('value_ints');
  if (vis?.kind === 'ints') return intsTensor(vis.value);
  const vs = a('value_string');
  if (vs?.kind === 'string') return { dtype: 'string', dims: [], data: [vs.value] };
  const vss = a('value_strings');
  if (vss?.kind === 'strings') return { dtype: 'string', dims: [vss.value.length], data: [...vss.value] };
  throw attrError(ctx, 'Constant has no supported value attribute (value, value_float(s), value_int(s), value_string(s))');
}

const constantOp: OpDef = {
  infer: (ctx) => {
    const t = constantValue(ctx);
    return [{ dtype: t.dtype, shape: t.dims }];
  },
  evaluate: (ctx) => [constantValue(ctx)],
};

function fillValue(ctx: OpContext): Tensor {
  return attrTensor(ctx.node, 'value') ?? tensorOf('float32', [1], [0]);
}

const constantOfShapeOp: OpDef = {
  infer: (ctx) => {
    const shape = constInts(ctx, 0, 'shape');
    if (shape.some((d) => d < 0)) throw shapeError(ctx, `shape [${shape.join(', ')}] has a negative dimension`);
    return [{ dtype: fillValue(ctx).dtype, shape }];
  },
  evaluate: (ctx, _ins, [out]) => {
    const v = nums(fillValue(ctx))[0] ?? 0;
    const data = allocData(out!.dtype, product(out!.shape)) as Float64Array;
    data.fill(v);
    return [{ dtype: out!.dtype, dims: out!.shape, data }];
  },
};

function rangeCount(ctx: OpContext): number {
  const start = constScalar(ctx, 0, 'start');
  const limit = constScalar(ctx, 1, 'limit');
  const delta = constScalar(ctx, 2, 'delta');
  if (delta === 0) throw attrError(ctx, 'Range delta is 0');
  return Math.max(Math.ceil((limit - start) / delta), 0);
}

const rangeOp: OpDef = {
  infer: (ctx) => [{ dtype: input(ctx, 0).dtype, shape: [rangeCount(ctx)] }],
  evaluate: (ctx, _ins, [out]) => {
    const start = constScalar(ctx, 0, 'start');
    const delta = constScalar(ctx, 2, 'delta');
    return [
      tensorOf(
        out!.dtype,
        out!.shape,
        Array.from({ length: out!.shape[0]! }, (_, i) => start + i * delta),
      ),
    ];
  },
};

function blockRearrange(toSpace: boolean): OpDef {
  return {
    infer: (ctx) => {
      const x = input(ctx, 0);
      const b = attrInt(ctx.node, 'blocksize', 0);
      if (x.shape.length !== 4 || b < 1)
        throw shapeError(ctx, `needs a 4-D input and blocksize ≥ 1; got ${formatShape(x.shape)}, blocksize ${b}`);
      const [n, c, h, w] = x.shape as [number, number, number, number];
      if (toSpace) {
        if (c % (b * b) !== 0) throw shapeError(ctx, `channels ${c} are not divisible by blocksize² = ${b * b}`);
        return [{ dtype: x.dtype, shape: [n, c / (b * b), h * b, w * b] }];
      }
      if (h % b !== 0 || w % b !== 0) throw shapeError(ctx, `spatial size ${h}x${w} is not divisible by blocksize ${b}`);
      return [{ dtype: x.dtype, shape: [n, c * b * b, h / b, w / b] }];
    },
  };
}

export const shapeOps: Readonly<Record<string, OpDef>> = {
  Shape: shapeOp,
  Size: sizeOp,
  Reshape: reshapeOp,
  Flatten: flattenOp,
  Transpose: transposeOp,
  Squeeze: squeezeOp,
  Unsqueeze: unsqueezeOp,
  Expand: expandOp,
  Tile: tileOp,
  Constant: constantOp,
  ConstantOfShape: constantOfShapeOp,
  Range: rangeOp,
  DepthToSpace: blockRearrange(true),
  SpaceToDepth: blockRearrange(false),
};
