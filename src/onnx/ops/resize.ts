/**
 * Resize (opset 10: scales input; 11+: roi, scales, sizes; 18: axes) and the older Upsample
 * (scales attribute before opset 9, input after): output dims are floor(dim × scale) or the sizes.
 */
import type { Tensor } from '../model.js';
import { attrFloats, attrInts, nodeLabel } from '../attributes.js';
import { formatShape } from '../shapes.js';
import { nums } from '../eval.js';
import { quoteForMessage, userError } from '../../errors.js';
import { attrError, hasInput, input, normAxis, shapeError, type OpContext, type OpDef } from './context.js';

function constFloats(ctx: OpContext, i: number, role: string): number[] {
  const t: Tensor | undefined = ctx.constants[i];
  if (t === undefined) {
    throw userError(
      'DYNAMIC_SHAPE',
      `${nodeLabel(ctx.node)}: its ${role} (input ${quoteForMessage(ctx.node.inputs[i] ?? '')}) is computed at run time, so the output shape is not static`,
      'veltair compiles static shapes; pin every symbolic input dimension with --input-shape NAME=1x3x224x224 so shape sub-graphs fold',
    );
  }
  return Array.from(nums(t));
}

function scaled(ctx: OpContext, shape: readonly number[], scales: readonly number[], axes: readonly number[]): number[] {
  if (scales.length !== axes.length) throw shapeError(ctx, `${scales.length} scales for input ${formatShape(shape)}`);
  const out = [...shape];
  axes.forEach((a, i) => {
    out[a] = Math.floor(shape[a]! * scales[i]!);
  });
  return out;
}

const resize: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const rank = x.shape.length;
    const axes = (attrInts(ctx.node, 'axes') ?? Array.from({ length: rank }, (_, i) => i)).map((a) => normAxis(ctx, a, rank));
    if (ctx.opset < 11) return [{ dtype: x.dtype, shape: scaled(ctx, x.shape, constFloats(ctx, 1, 'scales'), axes) }];
    const sizesGiven = hasInput(ctx, 3) && (ctx.constants[3] === undefined || nums(ctx.constants[3]).length > 0);
    if (sizesGiven) {
      const sizes = constFloats(ctx, 3, 'sizes');
      if (sizes.length !== axes.length) throw shapeError(ctx, `${sizes.length} sizes for input ${formatShape(x.shape)}`);
      const policy = ctx.node.attributes.get('keep_aspect_ratio_policy');
      if (policy !== undefined && !(policy.kind === 'string' && policy.value === 'stretch')) {
        throw attrError(ctx, 'keep_aspect_ratio_policy other than "stretch" is not supported');
      }
      const out = [...x.shape];
      axes.forEach((a, i) => {
        out[a] = sizes[i]!;
      });
      return [{ dtype: x.dtype, shape: out }];
    }
    if (!hasInput(ctx, 2)) throw attrError(ctx, 'Resize needs scales or sizes');
    return [{ dtype: x.dtype, shape: scaled(ctx, x.shape, constFloats(ctx, 2, 'scales'), axes) }];
  },
};

const upsample: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const axes = x.shape.map((_, i) => i);
    const scales = ctx.opset < 9 ? [...(attrFloats(ctx.node, 'scales') ?? [])] : constFloats(ctx, 1, 'scales');
    return [{ dtype: x.dtype, shape: scaled(ctx, x.shape, scales, axes) }];
  },
};

export const resizeOps: Readonly<Record<string, OpDef>> = { Resize: resize, Upsample: upsample };
