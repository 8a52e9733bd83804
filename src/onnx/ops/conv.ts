/**
 * Convolution, pooling and normalisation operators. Output sizes follow the ONNX spec's formulas
 * for explicit pads, auto_pad (SAME_UPPER/SAME_LOWER/VALID) and ceil_mode; channel counts are
 * checked against the weight so a mismatched model fails here, naming the node.
 */
import type { ValueType } from '../model.js';
import { attrInt, attrInts, attrString } from '../attributes.js';
import { formatShape } from '../shapes.js';
import { quoteForMessage } from '../../errors.js';
import { attrError, hasInput, input, same, shapeError, type OpContext, type OpDef } from './context.js';

interface WindowSpec {
  readonly kernel: readonly number[];
  readonly strides: readonly number[];
  readonly dilations: readonly number[];
  readonly ceilMode: boolean;
}

function listAttr(ctx: OpContext, name: string, rank: number, fallback: number): number[] {
  const v = attrInts(ctx.node, name);
  if (v === undefined || v.length === 0) return new Array<number>(rank).fill(fallback);
  if (v.length !== rank) throw attrError(ctx, `attribute "${name}" has ${v.length} values, expected ${rank}`);
  return [...v];
}

function spatialRank(ctx: OpContext, x: ValueType): number {
  if (x.shape.length < 3) throw shapeError(ctx, `input has shape ${formatShape(x.shape)}; expected [N, C, spatial…]`);
  return x.shape.length - 2;
}

/** Output spatial extents of a sliding window (Conv, MaxPool, AveragePool). */
function windowOutput(ctx: OpContext, spatial: readonly number[], w: WindowSpec): number[] {
  const rank = spatial.length;
  const autoPad = attrString(ctx.node, 'auto_pad', 'NOTSET');
  const pads = listAttr(ctx, 'pads', 2 * rank, 0);
  return spatial.map((size, i) => {
    const s = w.strides[i]!;
    const span = (w.kernel[i]! - 1) * w.dilations[i]! + 1;
    let out: number;
    switch (autoPad) {
      case 'SAME_UPPER':
      case 'SAME_LOWER':
        out = Math.ceil(size / s);
        break;
      case 'VALID':
        out = Math.floor((size - span) / s) + 1;
        break;
      case 'NOTSET':
      case '': {
        const padded = size + pads[i]! + pads[i + rank]!;
        if (w.ceilMode) {
          out = Math.ceil((padded - span) / s) + 1;
          // A window may not start inside the end padding (PyTorch / ONNX reference semantics).
          if ((out - 1) * s >= size + pads[i]!) out--;
        } else {
          out = Math.floor((padded - span) / s) + 1;
        }
        break;
      }
      default:
        throw attrError(ctx, `auto_pad ${quoteForMessage(autoPad, 20)} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID`);
    }
    if (out <= 0 || !Number.isFinite(out)) {
      throw shapeError(
        ctx,
        `window of ${span} (kernel ${w.kernel[i]}, dilation ${w.dilations[i]}) does not fit spatial size ${size} on axis ${i + 2}`,
      );
    }
    return out;
  });
}

const conv: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const w = input(ctx, 1);
    const rank = spatialRank(ctx, x);
    if (w.shape.length !== x.shape.length) {
      throw shapeError(
        ctx,
        `weight shape ${formatShape(w.shape)} has rank ${w.shape.length}, input ${formatShape(x.shape)} has rank ${x.shape.length}`,
      );
    }
    const groups = attrInt(ctx.node, 'group', 1);
    const c = x.shape[1]!;
    const m = w.shape[0]!;
    if (groups < 1 || c % groups !== 0 || w.shape[1]! * groups !== c || m % groups !== 0) {
      throw shapeError(
        ctx,
        `input has ${c} channels (shape ${formatShape(x.shape)}) but the weight ${formatShape(w.shape)} ` +
          `with group=${groups} expects ${w.shape[1]! * groups}`,
      );
    }
    if (hasInput(ctx, 2)) {
      const b = input(ctx, 2);
      if (b.shape.length !== 1 || b.shape[0] !== m)
        throw shapeError(ctx, `bias shape ${formatShape(b.shape)} does not match ${m} output channels`);
    }
    const kernel = listAttr(ctx, 'kernel_shape', rank, 0).map((k, i) => (k === 0 ? w.shape[i + 2]! : k));
    if (kernel.some((k, i) => k !== w.shape[i + 2])) {
      throw shapeError(ctx, `kernel_shape [${kernel.join(', ')}] disagrees with weight shape ${formatShape(w.shape)}`);
    }
    const spatial = windowOutput(ctx, x.shape.slice(2), {
      kernel,
      strides: listAttr(ctx, 'strides', rank, 1),
      dilations: listAttr(ctx, 'dilations', rank, 1),
      ceilMode: false,
    });
    return [{ dtype: x.dtype, shape: [x.shape[0]!, m, ...spatial] }];
  },
};

const convTranspose: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const w = input(ctx, 1);
    const rank = spatialRank(ctx, x);
    const groups = attrInt(ctx.node, 'group', 1);
    if (w.shape.length !== x.shape.length || w.shape[0] !== x.shape[1]) {
      throw shapeError(
        ctx,
        `weight shape ${formatShape(w.shape)} does not match input ${formatShape(x.shape)} (weight dim 0 must equal input channels)`,
      );
    }
    const m = w.shape[1]! * groups;
    const kernel = listAttr(ctx, 'kernel_shape', rank, 0).map((k, i) => (k === 0 ? w.shape[i + 2]! : k));
    const strides = listAttr(ctx, 'strides', rank, 1);
    const dil = listAttr(ctx, 'dilations', rank, 1);
    const outPad = listAttr(ctx, 'output_padding', rank, 0);
    const explicit = attrInts(ctx.node, 'output_shape');
    const autoPad = attrString(ctx.node, 'auto_pad', 'NOTSET');
    const pads = listAttr(ctx, 'pads', 2 * rank, 0);
    const spatial = x.shape.slice(2).map((size, i) => {
      if (explicit !== undefined && explicit.length > 0) return explicit[explicit.length - rank + i]!;
      if (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER') return size * strides[i]!;
      const full = strides[i]! * (size - 1) + outPad[i]! + (kernel[i]! - 1) * dil[i]! + 1;
      return autoPad === 'VALID' ? full : full - pads[i]! - pads[i + rank]!;
    });
    if (spatial.some((d) => d <= 0)) throw shapeError(ctx, `computed output spatial size [${spatial.join(', ')}] is not positive`);
    return [{ dtype: x.dtype, shape: [x.shape[0]!, m, ...spatial] }];
  },
};

function pool(ceilAllowed: boolean): OpDef {
  return {
    infer: (ctx) => {
      const x = input(ctx, 0);
      const rank = spatialRank(ctx, x);
      const kernel = attrInts(ctx.node, 'kernel_shape');
      if (kernel === undefined || kernel.length !== rank) {
        throw attrError(ctx, `attribute "kernel_shape" must list ${rank} sizes`);
      }
      const spatial = windowOutput(ctx, x.shape.slice(2), {
        kernel,
        strides: listAttr(ctx, 'strides', rank, 1),
        dilations: listAttr(ctx, 'dilations', rank, 1),
        ceilMode: ceilAllowed && attrInt(ctx.node, 'ceil_mode', 0) === 1,
      });
      const out = { dtype: x.dtype, shape: [x.shape[0]!, x.shape[1]!, ...spatial] };
      return [out, { dtype: 'int64', shape: out.shape }];
    },
  };
}

const globalPool: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    spatialRank(ctx, x);
    return [{ dtype: x.dtype, shape: [x.shape[0]!, x.shape[1]!, ...x.shape.slice(2).map(() => 1)] }];
  },
};

/** Y has X's shape; the optional statistics outputs (training mode, old opsets) are per channel. */
const batchNorm: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    if (x.shape.length < 2) throw shapeError(ctx, `input has shape ${formatShape(x.shape)}; expected [N, C, …]`);
    const c = x.shape[1]!;
    for (let i = 1; i <= 4; i++) {
      const p = ctx.inputs[i];
      if (p !== undefined && (p.shape.length !== 1 || p.shape[0] !== c)) {
        throw shapeError(ctx, `parameter #${i} has shape ${formatShape(p.shape)}; expected [${c}] for ${c} channels`);
      }
    }
    const stat = { dtype: input(ctx, 1).dtype, shape: [c] };
    return [same(x), stat, stat, stat, stat];
  },
};

const sameAsInput: OpDef = { infer: (ctx) => [same(input(ctx, 0))] };

export const convOps: Readonly<Record<string, OpDef>> = {
  Conv: conv,
  ConvTranspose: convTranspose,
  MaxPool: pool(true),
  AveragePool: pool(true),
  LpPool: pool(false),
  GlobalAveragePool: globalPool,
  GlobalMaxPool: globalPool,
  GlobalLpPool: globalPool,
  BatchNormalization: batchNorm,
  InstanceNormalization: sameAsInput,
  LRN: sameAsInput,
  LpNormalization: sameAsInput,
  MeanVarianceNormalization: sameAsInput,
};
