/**
 * Quantized operators: QuantizeLinear / DequantizeLinear (the QDQ form) and the QOperator form
 * (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, and ONNX Runtime's com.microsoft
 * QLinearAdd and QLinearGlobalAveragePool). Shapes follow Conv / MatMul; the folds are the integer
 * reference of quant-math.ts, so constant folding and the reference that layers are checked against
 * are one implementation.
 */
import type { DType, OnnxNode, Tensor, ValueType } from '../model.js';
import { attrInt, attrInts, attrString } from '../attributes.js';
import { broadcastShapes, formatShape } from '../shapes.js';
import { mapBroadcast, nums, tensorOf } from '../eval.js';
import {
  conv2dAccumulate,
  dequantizeValue,
  isQuantDType,
  matmulAccumulate,
  perChannel,
  quantizeValue,
  requantize,
  requantMultiplier,
  type Conv2dGeometry,
  type QuantDType,
} from '../quant-math.js';
import { convOps } from './conv.js';
import { matmulOps } from './matmul.js';
import { attrError, hasInput, input, shapeError, typed, type OpContext, type OpDef } from './context.js';

/** The context a float rule sees for a quantized node: its float-shaped operands picked out. */
function subContext(ctx: OpContext, picks: readonly number[]): OpContext {
  return {
    ...ctx,
    inputs: picks.map((i) => (i < 0 ? undefined : ctx.inputs[i])),
    constants: picks.map((i) => (i < 0 ? undefined : ctx.constants[i])),
  };
}

function quantDType(ctx: OpContext, d: DType, role: string): QuantDType {
  if (!isQuantDType(d)) throw shapeError(ctx, `its ${role} is ${d}; quantized operators take uint8, int8 or int32`);
  return d;
}

/** A scale or zero point: one value, or one per channel along `axis` of a tensor of `shape`. */
function checkQuantParam(ctx: OpContext, i: number, shape: readonly number[], axis: number | undefined, role: string): void {
  if (!hasInput(ctx, i)) return;
  const p = input(ctx, i).shape;
  const count = p.reduce((a, b) => a * b, 1);
  if (count === 1) return;
  if (axis === undefined || p.length !== 1 || p[0] !== shape[axis])
    throw shapeError(ctx, `its ${role} has shape ${formatShape(p)}; expected one value or one per channel (${shape[axis ?? 0]})`);
}

function values(t: Tensor | undefined, fallback: number): number[] {
  return t === undefined ? [fallback] : Array.from(nums(t));
}

/** A per-axis parameter reshaped to broadcast against a tensor of `rank` along `axis`. */
function alongAxis(t: Tensor, rank: number, axis: number): Tensor {
  if (nums(t).length === 1) return { ...t, dims: [] };
  return { ...t, dims: Array.from({ length: rank }, (_, d) => (d === axis ? t.dims[0]! : 1)) };
}

/** The quantization axis; read only for per-axis parameters (a per-tensor scale ignores it). */
function axisOf(ctx: OpContext, rank: number): number {
  const a = attrInt(ctx.node, 'axis', 1);
  const axis = a < 0 ? a + rank : a;
  if (axis < 0 || axis >= Math.max(rank, 1)) throw attrError(ctx, `axis ${a} is out of range for rank ${rank}`);
  return axis;
}

function perAxis(ctx: OpContext, i: number): boolean {
  return input(ctx, i).shape.reduce((a, b) => a * b, 1) > 1;
}

const quantizeLinear: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    checkQuantParam(ctx, 1, x.shape, perAxis(ctx, 1) ? axisOf(ctx, x.shape.length) : undefined, 'scale');
    const out = hasInput(ctx, 2) ? quantDType(ctx, input(ctx, 2).dtype, 'zero point') : 'uint8';
    return [typed(out, x.shape)];
  },
  evaluate: (ctx, [x, scale, zero], [out]) => {
    const d = out!.dtype as QuantDType;
    const rank = x!.dims.length;
    const axis = nums(scale!).length > 1 ? axisOf(ctx, rank) : 0;
    const z = zero ?? tensorOf(d, [], [0]);
    return [
      mapBroadcast(d, out!.shape, [x!, alongAxis(scale!, rank, axis), alongAxis(z, rank, axis)], (v, s, zp) => quantizeValue(v, s, zp, d)),
    ];
  },
};

const dequantizeLinear: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    quantDType(ctx, x.dtype, 'input');
    checkQuantParam(ctx, 1, x.shape, perAxis(ctx, 1) ? axisOf(ctx, x.shape.length) : undefined, 'scale');
    return [typed('float32', x.shape)];
  },
  evaluate: (ctx, [x, scale, zero], [out]) => {
    const rank = x!.dims.length;
    const axis = nums(scale!).length > 1 ? axisOf(ctx, rank) : 0;
    const z = zero ?? tensorOf(x!.dtype, [], [0]);
    return [mapBroadcast('float32', out!.shape, [x!, alongAxis(scale!, rank, axis), alongAxis(z, rank, axis)], dequantizeValue)];
  },
};

/** Resolved 2-D convolution geometry of a Conv-like node (explicit pads or auto_pad). */
export function conv2dGeometry(node: OnnxNode, x: readonly number[], w: readonly number[], out: readonly number[]): Conv2dGeometry {
  const strides = attrInts(node, 'strides') ?? [1, 1];
  const dilations = attrInts(node, 'dilations') ?? [1, 1];
  const pads = attrInts(node, 'pads') ?? [0, 0, 0, 0];
  const autoPad = attrString(node, 'auto_pad', 'NOTSET');
  const begin = [0, 1].map((i) => {
    if (autoPad !== 'SAME_UPPER' && autoPad !== 'SAME_LOWER') return autoPad === 'VALID' ? 0 : (pads[i] ?? 0);
    const span = (w[i + 2]! - 1) * (dilations[i] ?? 1) + 1;
    const total = Math.max(0, (out[i + 2]! - 1) * (strides[i] ?? 1) + span - x[i + 2]!);
    return autoPad === 'SAME_UPPER' ? Math.floor(total / 2) : Math.ceil(total / 2);
  });
  return {
    n: x[0]!,
    c: x[1]!,
    h: x[2]!,
    w: x[3]!,
    m: w[0]!,
    kh: w[2]!,
    kw: w[3]!,
    oh: out[2]!,
    ow: out[3]!,
    group: attrInt(node, 'group', 1),
    strides: [strides[0] ?? 1, strides[1] ?? 1],
    dilations: [dilations[0] ?? 1, dilations[1] ?? 1],
    padBegin: [begin[0]!, begin[1]!],
  };
}

function conv2dOnly(ctx: OpContext, x: ValueType): void {
  if (x.shape.length !== 4) throw shapeError(ctx, `input has shape ${formatShape(x.shape)}; quantized convolutions are 2-D (NCHW)`);
}

/** Shape rule of a quantized conv whose x, w and optional bias sit at these input positions. */
function quantConvInfer(xi: number, wi: number, bi: number, wZeroI: number, outDtype: (ctx: OpContext) => DType): OpDef['infer'] {
  return (ctx) => {
    const x = input(ctx, xi);
    const w = input(ctx, wi);
    conv2dOnly(ctx, x);
    quantDType(ctx, x.dtype, 'input');
    quantDType(ctx, w.dtype, 'weight');
    checkQuantParam(ctx, wZeroI, w.shape, 0, 'weight zero point');
    const [shape] = convOps.Conv!.infer(subContext(ctx, [xi, wi, bi]));
    return [typed(outDtype(ctx), shape!.shape)];
  };
}

const qlinearConv: OpDef = {
  infer: (ctx) => {
    checkQuantParam(ctx, 4, input(ctx, 3).shape, 0, 'weight scale');
    return quantConvInfer(0, 3, 8, 5, (c) => quantDType(c, input(c, 7).dtype, 'output zero point'))(ctx);
  },
  evaluate: (ctx, [x, xs, xz, w, ws, wz, ys, yz, b], [out]) => {
    const g = conv2dGeometry(ctx.node, x!.dims, w!.dims, out!.shape);
    const acc = conv2dAccumulate(nums(x!), values(xz, 0)[0]!, nums(w!), perChannel(values(wz, 0), g.m), g);
    const bias = b === undefined ? new Array<number>(g.m).fill(0) : Array.from(nums(b));
    const wScale = perChannel(values(ws, 1), g.m);
    const d = out!.dtype as QuantDType;
    const plane = g.oh * g.ow;
    const res = Array.from(acc, (a, i) => {
      const oc = Math.floor(i / plane) % g.m;
      return requantize(a + bias[oc]!, requantMultiplier(values(xs, 1)[0]!, wScale[oc]!, values(ys, 1)[0]!), values(yz, 0)[0]!, d);
    });
    return [tensorOf(d, out!.shape, res)];
  },
};

const convInteger: OpDef = {
  infer: quantConvInfer(0, 1, -1, 3, () => 'int32'),
  evaluate: (ctx, [x, w, xz, wz], [out]) => {
    const g = conv2dGeometry(ctx.node, x!.dims, w!.dims, out!.shape);
    return [
      {
        dtype: 'int32',
        dims: out!.shape,
        data: conv2dAccumulate(nums(x!), values(xz, 0)[0]!, nums(w!), perChannel(values(wz, 0), g.m), g),
      },
    ];
  },
};

/** Matrix dims of a quantized MatMul; B may be 2-D (shared) or carry A's batch. */
function matmulDims(ctx: OpContext, a: readonly number[], b: readonly number[]) {
  if (a.length < 2 || b.length < 2)
    throw shapeError(ctx, `quantized MatMul needs inputs of rank ≥ 2, got ${formatShape(a)} × ${formatShape(b)}`);
  const batchA = a.slice(0, -2);
  const batchB = b.slice(0, -2);
  const bBatched = b.length > 2;
  if (bBatched && JSON.stringify(broadcastShapes([batchA, batchB])) !== JSON.stringify(batchA))
    throw shapeError(ctx, `B's batch ${formatShape(batchB)} must equal A's ${formatShape(batchA)}`);
  return { batch: batchA.reduce((p, d) => p * d, 1), rows: a[a.length - 2]!, k: a[a.length - 1]!, cols: b[b.length - 1]!, bBatched };
}

function quantMatmulInfer(ai: number, bi: number, bZeroI: number, outDtype: (ctx: OpContext) => DType): OpDef['infer'] {
  return (ctx) => {
    const a = input(ctx, ai);
    const b = input(ctx, bi);
    quantDType(ctx, a.dtype, 'A');
    quantDType(ctx, b.dtype, 'B');
    checkQuantParam(ctx, bZeroI, b.shape, b.shape.length - 1, 'B zero point');
    const [shape] = matmulOps.MatMul!.infer(subContext(ctx, [ai, bi]));
    matmulDims(ctx, a.shape, b.shape);
    return [typed(outDtype(ctx), shape!.shape)];
  };
}

const qlinearMatMul: OpDef = {
  infer: (ctx) => {
    checkQuantParam(ctx, 4, input(ctx, 3).shape, input(ctx, 3).shape.length - 1, 'B scale');
    return quantMatmulInfer(0, 3, 5, (c) => quantDType(c, input(c, 7).dtype, 'output zero point'))(ctx);
  },
  evaluate: (ctx, [a, as, az, b, bs, bz, ys, yz], [out]) => {
    const dims = matmulDims(ctx, a!.dims, b!.dims);
    const acc = matmulAccumulate(nums(a!), values(az, 0)[0]!, nums(b!), perChannel(values(bz, 0), dims.cols), dims);
    const bScale = perChannel(values(bs, 1), dims.cols);
    const d = out!.dtype as QuantDType;
    const res = Array.from(acc, (v, i) =>
      requantize(v, requantMultiplier(values(as, 1)[0]!, bScale[i % dims.cols]!, values(ys, 1)[0]!), values(yz, 0)[0]!, d),
    );
    return [tensorOf(d, out!.shape, res)];
  },
};

const matMulInteger: OpDef = {
  infer: quantMatmulInfer(0, 1, 3, () => 'int32'),
  evaluate: (ctx, [a, b, az, bz], [out]) => {
    const dims = matmulDims(ctx, a!.dims, b!.dims);
    return [
      {
        dtype: 'int32',
        dims: out!.shape,
        data: matmulAccumulate(nums(a!), values(az, 0)[0]!, nums(b!), perChannel(values(bz, 0), dims.cols), dims),
      },
    ];
  },
};

/** com.microsoft QLinearAdd: both operands dequantized, added in float32, quantized. */
const qlinearAdd: OpDef = {
  infer: (ctx) => {
    const a = input(ctx, 0);
    const b = input(ctx, 3);
    const shape = broadcastShapes([a.shape, b.shape]);
    if (shape === undefined) throw shapeError(ctx, `${formatShape(a.shape)} and ${formatShape(b.shape)} cannot be broadcast`);
    return [typed(quantDType(ctx, a.dtype, 'A'), shape)];
  },
  evaluate: (_ctx, [a, as, az, b, bs, bz, cs, cz], [out]) => {
    const d = out!.dtype as QuantDType;
    const [sa, za, sb, zb, sc, zc] = [
      values(as, 1)[0]!,
      values(az, 0)[0]!,
      values(bs, 1)[0]!,
      values(bz, 0)[0]!,
      values(cs, 1)[0]!,
      values(cz, 0)[0]!,
    ];
    return [
      mapBroadcast(d, out!.shape, [a!, b!], (x, y) =>
        quantizeValue(Math.fround(dequantizeValue(x, sa, za) + dequantizeValue(y, sb, zb)), sc, zc, d),
      ),
    ];
  },
};

/**
 * com.microsoft QLinearGlobalAveragePool (NCHW): the integer sum of each channel's (x − x_zero),
 * requantized with multiplier fl32(x_scale / (fl32(y_scale) · count)).
 */
const qlinearGlobalAveragePool: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    if (attrInt(ctx.node, 'channels_last', 0) !== 0) throw attrError(ctx, 'channels_last=1 is not supported; veltair reads NCHW');
    conv2dOnly(ctx, x);
    return [typed(quantDType(ctx, x.dtype, 'input'), [x.shape[0]!, x.shape[1]!, 1, 1])];
  },
  evaluate: (_ctx, [x, xs, xz, ys, yz], [out]) => {
    const d = out!.dtype as QuantDType;
    const plane = x!.dims[2]! * x!.dims[3]!;
    const data = nums(x!);
    const zx = values(xz, 0)[0]!;
    const mult = globalPoolMultiplier(values(xs, 1)[0]!, values(ys, 1)[0]!, plane);
    const res = Array.from({ length: out!.shape[0]! * out!.shape[1]! }, (_, ch) => {
      let acc = 0;
      for (let i = 0; i < plane; i++) acc += data[ch * plane + i]! - zx;
      return requantize(acc, mult, values(yz, 0)[0]!, d);
    });
    return [tensorOf(d, out!.shape, res)];
  },
};

export function globalPoolMultiplier(xScale: number, yScale: number, count: number): number {
  return Math.fround(xScale / Math.fround(yScale * count));
}

export const quantizedOps: Readonly<Record<string, OpDef>> = {
  QuantizeLinear: quantizeLinear,
  DequantizeLinear: dequantizeLinear,
  QLinearConv: qlinearConv,
  QLinearMatMul: qlinearMatMul,
  ConvInteger: convInteger,
  MatMulInteger: matMulInteger,
};

/** ONNX Runtime's contrib operators (domain com.microsoft) that quantizers emit. */
export const microsoftQuantizedOps: Readonly<Record<string, OpDef>> = {
  QLinearAdd: qlinearAdd,
  QLinearGlobalAveragePool: qlinearGlobalAveragePool,
};
