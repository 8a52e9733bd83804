/**
 * Reductions and normalisations along axes: Reduce*, ArgMax/ArgMin, Softmax family,
 * LayerNormalization. Axes moved from attribute to input in opset 13 (ReduceSum) and 18 (the rest).
 */
import type { OpContext, OpDef } from './context.js';
import { attrInt, attrInts } from '../attributes.js';
import { formatShape } from '../shapes.js';
import { reduceAxes, reshaped } from '../eval.js';
import { constInts, hasInput, input, normAxis, same, shapeError } from './context.js';

/** undefined = reduce nothing (noop_with_empty_axes); otherwise sorted, normalised axes. */
function reductionAxes(ctx: OpContext, rank: number): number[] | undefined {
  const fromInput = ctx.node.opType === 'ReduceSum' ? ctx.opset >= 13 : ctx.opset >= 18;
  const raw = fromInput ? (hasInput(ctx, 1) ? constInts(ctx, 1, 'axes') : []) : [...(attrInts(ctx.node, 'axes') ?? [])];
  if (raw.length === 0) {
    if (attrInt(ctx.node, 'noop_with_empty_axes', 0) === 1) return undefined;
    return Array.from({ length: rank }, (_, i) => i);
  }
  return [...new Set(raw.map((a) => normAxis(ctx, a, rank)))].sort((a, b) => a - b);
}

function reducedShape(ctx: OpContext, shape: readonly number[], axes: readonly number[] | undefined): number[] {
  if (axes === undefined) return [...shape];
  const keep = attrInt(ctx.node, 'keepdims', 1) === 1;
  return keep ? shape.map((d, i) => (axes.includes(i) ? 1 : d)) : shape.filter((_, i) => !axes.includes(i));
}

type Fold = [init: number, step: (acc: number, v: number) => number, finish: (acc: number, n: number) => number];

const FOLDS: Readonly<Record<string, Fold>> = {
  ReduceSum: [0, (a, v) => a + v, (a) => a],
  ReduceMean: [0, (a, v) => a + v, (a, n) => a / n],
  ReduceProd: [1, (a, v) => a * v, (a) => a],
  ReduceMax: [-Infinity, (a, v) => (v > a || Number.isNaN(v) ? v : a), (a) => a],
  ReduceMin: [Infinity, (a, v) => (v < a || Number.isNaN(v) ? v : a), (a) => a],
  ReduceSumSquare: [0, (a, v) => a + v * v, (a) => a],
  ReduceL1: [0, (a, v) => a + Math.abs(v), (a) => a],
  ReduceL2: [0, (a, v) => a + v * v, (a) => Math.sqrt(a)],
};

function reduction(op: string): OpDef {
  const fold = FOLDS[op];
  return {
    infer: (ctx) => {
      const x = input(ctx, 0);
      return [{ dtype: x.dtype, shape: reducedShape(ctx, x.shape, reductionAxes(ctx, x.shape.length)) }];
    },
    evaluate:
      fold === undefined
        ? undefined
        : (ctx, [x], [out]) => {
            const axes = reductionAxes(ctx, x!.dims.length);
            if (axes === undefined) return [x!];
            return [reshaped(reduceAxes(x!, axes, out!.dtype, ...fold), out!.shape)];
          },
  };
}

const REDUCE_OPS = [
  'ReduceSum',
  'ReduceMean',
  'ReduceProd',
  'ReduceMax',
  'ReduceMin',
  'ReduceSumSquare',
  'ReduceL1',
  'ReduceL2',
  'ReduceLogSum',
  'ReduceLogSumExp',
];

const argReduce: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', 0), x.shape.length);
    return [{ dtype: 'int64', shape: reducedShape(ctx, x.shape, [axis]) }];
  },
};

/** Softmax before opset 13 coerces to 2-D internally, which changes values, not the shape. */
const softmaxLike: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    normAxis(ctx, attrInt(ctx.node, 'axis', ctx.opset >= 13 ? -1 : 1), Math.max(1, x.shape.length));
    return [same(x)];
  },
};

const layerNorm: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', -1), x.shape.length);
    const normalized = x.shape.slice(axis);
    const scale = input(ctx, 1);
    if (
      scale.shape.length > normalized.length ||
      scale.shape.some((d, i) => d !== 1 && d !== normalized[normalized.length - scale.shape.length + i])
    ) {
      throw shapeError(ctx, `scale shape ${formatShape(scale.shape)} does not match the normalised dims ${formatShape(normalized)}`);
    }
    const statShape = x.shape.map((d, i) => (i < axis ? d : 1));
    const statType = attrInt(ctx.node, 'stash_type', 1) === 1 ? 'float32' : x.dtype;
    return [same(x), { dtype: statType, shape: statShape }, { dtype: statType, shape: statShape }];
  },
};

/** TopK: the K largest (or smallest) along an axis, values and int64 indices; K must be a constant. */
const topK: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const axis = normAxis(ctx, attrInt(ctx.node, 'axis', -1), x.shape.length);
    const ks = ctx.opset >= 10 ? constInts(ctx, 1, 'K') : [attrInt(ctx.node, 'k', 1)];
    const k = ks[0];
    if (ks.length !== 1 || k === undefined || !Number.isInteger(k) || k < 0 || k > x.shape[axis]!) {
      throw shapeError(ctx, `K ${JSON.stringify(ks)} must be one integer from 0 to the axis length ${x.shape[axis]}`);
    }
    const shape = x.shape.map((d, i) => (i === axis ? k : d));
    return [
      { dtype: x.dtype, shape },
      { dtype: 'int64', shape },
    ];
  },
};

export const reduceOps: Readonly<Record<string, OpDef>> = {
  TopK: topK,
  ...Object.fromEntries(REDUCE_OPS.map((op) => [op, reduction(op)])),
  ArgMax: argReduce,
  ArgMin: argReduce,
  Softmax: softmaxLike,
  LogSoftmax: softmaxLike,
  Hardmax: softmaxLike,
  LayerNormalization: layerNorm,
};
