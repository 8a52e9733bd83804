/**
 * Lowerings of the computing non-tunable ops: activations, broadcasting binaries, where, pooling,
 * softmax, layer norm, batch norm, reductions, cast. Each maps the IR layer's attrs (see
 * src/ir/generic.ts for their normalised form) onto the ints/floats its C op documents.
 */
import { BINARY_FN, FIRST_COMPARISON, KIND, OP, POOL_KIND, REDUCE_FN, UNARY_FN } from './ops.js';
import { broadcastShape, broadcastStrides, coalesce, MAX_NATIVE_RANK, product, roundUp, stridesOf } from './geometry.js';
import {
  attrList,
  attrNumber,
  blockedGeometry,
  isBlocked,
  unsupported,
  type LoweredOp,
  type Lowering,
  type OpContext,
  type Operand,
} from './lower-context.js';
import { parseLayout } from '../bundle/layout.js';
import { paramFloats } from './runtime-layer.js';
import { elementwiseChain } from './lower-chain.js';

/** Padded-lane fix-up ints for a blocked output (all zero on the natural layout). */
function laneFix(c: OpContext): number[] {
  if (!isBlocked(c.layout)) return [0, 0, 0, 0];
  const g = blockedGeometry(c.outs[0]!);
  return [g.n, g.c, g.h * g.w, g.v];
}

const FLOAT32_MAX = 3.4028234663852886e38;
const SELU_ALPHA = 1.67326319217681884765625,
  SELU_GAMMA = 1.05070102214813232421875;

export const unary: Lowering = (c) => {
  const op = c.layer.op === 'gelu' && c.layer.attrs['approximate'] === 'tanh' ? 'gelu_tanh' : c.layer.op;
  const fn = UNARY_FN[op];
  if (fn === undefined) unsupported(c, 'no native activation of this name');
  if (c.ins.length !== 1 || c.ins[0]!.dtype !== 'float32') unsupported(c, 'activations run on one float32 input');
  let floats = [0, 0];
  // A missing Clip bound is numeric_limits<float>::lowest() / max() in ONNX (±Infinity clamps to ±FLT_MAX), as in fuse-ops' chain step.
  if (op === 'clip') floats = [attrNumber(c, 'min', -FLOAT32_MAX), attrNumber(c, 'max', FLOAT32_MAX)];
  else if (op === 'leakyrelu' || op === 'leaky_relu') floats = [attrNumber(c, 'alpha', 0.01), 0];
  else if (op === 'hardsigmoid' || op === 'hard_sigmoid') floats = [attrNumber(c, 'alpha', 0.2), attrNumber(c, 'beta', 0.5)];
  else if (op === 'elu') floats = [attrNumber(c, 'alpha', 1), 0];
  else if (op === 'selu') floats = [attrNumber(c, 'alpha', SELU_ALPHA), attrNumber(c, 'gamma', SELU_GAMMA)];
  const count = c.outs[0]!.shape.length === 0 ? 1 : stored(c);
  return { op: OP.UNARY, inputs: [c.ins[0]!.ref], outputs: [c.outs[0]!.ref], ints: [fn, count, ...laneFix(c)], floats };
};

/** Elements the output occupies in its layout (padding included). */
function stored(c: OpContext): number {
  const o = c.outs[0]!;
  if (!isBlocked(c.layout)) return product(o.shape);
  const g = blockedGeometry(o);
  return g.n * roundUp(g.c, g.v) * g.h * g.w;
}

/**
 * A constant operand of a blocked binary as the per-channel gate BINARY_CHANNEL reads: [CB*V]
 * floats, channel c at index c, zero-padded (a scalar is one value per channel).
 */
function channelGateParam(c: OpContext, o: Operand, channels: number, v: number): Operand {
  const src = paramFloats(o.param!);
  const gate = new Float32Array(roundUp(channels, v));
  for (let ch = 0; ch < channels; ch++) gate[ch] = src.length === 1 ? src[0]! : src[ch]!;
  return { ...o, ref: c.addParam(gate), shape: [1, channels, 1, 1] };
}

export const binary: Lowering = (c) => {
  const fn = BINARY_FN[c.layer.op];
  if (fn === undefined || c.ins.length !== 2) unsupported(c, 'binary ops take exactly two operands');
  let [a, b] = c.ins as [Operand, Operand];
  if (a.dtype !== 'float32' || b.dtype !== 'float32') unsupported(c, 'native binary ops run on float32');
  const out = c.outs[0]!;
  if (isBlocked(c.layout)) {
    const g = blockedGeometry(out);
    const sameShape = (x: Operand) => x.shape.length === out.shape.length && x.shape.every((d, i) => d === out.shape[i]);
    if (sameShape(a) && sameShape(b) && !a.param && !b.param) {
      return { op: OP.BINARY, inputs: [a.ref, b.ref], outputs: [out.ref], ints: [fn, 1, stored(c), 1, 1, ...laneFix(c)] };
    }
    if (fn >= FIRST_COMPARISON || fn === BINARY_FN['pow'] || fn === BINARY_FN['prelu'] || fn === BINARY_FN['mod']) {
      unsupported(c, 'this op has no per-channel blocked form');
    }
    // The full-sized operand first; `reversed` keeps gate - x and gate / x right.
    const reversed = !sameShape(a) || (a.param !== undefined && b.param === undefined);
    if (reversed) [a, b] = [b, a];
    if (b.param) b = channelGateParam(c, b, g.c, g.v);
    return {
      op: OP.BINARY_CHANNEL,
      inputs: [a.ref, b.ref],
      outputs: [out.ref],
      ints: [fn, g.n, Math.ceil(g.c / g.v), g.h * g.w, g.v, b.shape[0] === g.n && g.n > 1 ? 1 : 0, g.c, reversed ? 1 : 0],
    };
  }
  const shape = broadcastShape([a.shape, b.shape]);
  const walk = coalesce(shape, [broadcastStrides(a.shape, shape), broadcastStrides(b.shape, shape)]);
  if (walk.dims.length > MAX_NATIVE_RANK) unsupported(c, 'broadcast rank above 8');
  return {
    op: OP.BINARY,
    inputs: [a.ref, b.ref],
    outputs: [out.ref],
    ints: [fn, walk.dims.length, ...walk.dims, ...walk.strides[0]!, ...walk.strides[1]!, 0, 0, 0, 0],
  };
};

export const where: Lowering = (c) => {
  const [cond, x, y] = c.ins;
  if (!cond || !x || !y) unsupported(c, 'where takes condition, X and Y');
  const shape = c.outs[0]!.shape;
  const walk = coalesce(
    shape,
    [cond.shape, x.shape, y.shape].map((s) => broadcastStrides(s, shape)),
  );
  const bytes = { float32: 4, int64: 8, int32: 4, float64: 8, bool: 1, uint8: 1, int8: 1 }[x.dtype as string];
  if (bytes === undefined || cond.dtype !== 'bool') unsupported(c, `where on ${x.dtype} with a ${cond.dtype} condition`);
  return {
    op: OP.WHERE,
    inputs: [cond.ref, x.ref, y.ref],
    outputs: [c.outs[0]!.ref],
    ints: [walk.dims.length, ...walk.dims, ...walk.strides.flat(), bytes],
  };
};

/** Ops whose C code reads and writes float: any other element type would be misread (and overrun). */
function float32Only(c: OpContext, what: string): void {
  const bad = [...c.ins, ...c.outs].find((o) => !o.param && o.dtype !== 'float32');
  if (bad) unsupported(c, `native ${what} runs on float32, not ${bad.dtype}`);
}

export const pool: Lowering = (c) => {
  float32Only(c, 'pooling');
  const x = c.ins[0]!;
  if (x.shape.length !== 4 && x.shape.length !== 3) unsupported(c, 'pooling runs on 1-D or 2-D spatial inputs');
  const g = blockedGeometry(x),
    og = blockedGeometry(c.outs[0]!);
  const oneD = x.shape.length === 3;
  const lift = (v: readonly number[] | undefined, unit: number, n: number) => {
    const list = v ?? Array<number>(n).fill(unit);
    return oneD ? [unit, ...list] : [...list];
  };
  const kernel = lift(attrList(c, 'kernel'), 1, 2);
  const strides = lift(attrList(c, 'strides'), 1, 2);
  const dil = lift(attrList(c, 'dilations'), 1, 2);
  const p = attrList(c, 'pads') ?? (oneD ? [0, 0] : [0, 0, 0, 0]);
  const pads = oneD ? [0, p[0]!, 0, p[1]!] : [...p];
  const kind = c.layer.op === 'maxpool' ? POOL_KIND.max : POOL_KIND.average;
  if (c.outs.length > 1) unsupported(c, 'maxpool with an Indices output');
  return {
    op: OP.POOL,
    inputs: [x.ref],
    outputs: [c.outs[0]!.ref],
    ints: [
      kind,
      g.n,
      g.c,
      g.h,
      g.w,
      og.h,
      og.w,
      g.v,
      kernel[0]!,
      kernel[1]!,
      strides[0]!,
      strides[1]!,
      pads[0]!,
      pads[1]!,
      pads[2]!,
      pads[3]!,
      dil[0]!,
      dil[1]!,
      attrNumber(c, 'count_include_pad', 0),
      c.inputSplit === 'rows' ? 1 : 0,
    ],
  };
};

export const globalPool: Lowering = (c) => {
  float32Only(c, 'pooling');
  const x = c.ins[0]!;
  const v = blockedGeometry(x).v;
  const [n = 1, ch = 1, ...spatial] = x.shape;
  const kind = c.layer.op === 'globalmaxpool' ? POOL_KIND.max : POOL_KIND.average;
  // A blocked input writes its result blocked, as rows{V} of [N, C] (the same bytes: padded channels zero), or
  // in the natural layout ([N][C]: no reorder for what reads it).
  const out = parseLayout(c.outs[0]!.layout);
  if (v > 1 && out.kind !== 'natural' && out.vec !== v) unsupported(c, `a global pool from nchw${v}c into ${c.outs[0]!.layout}`);
  const naturalOut = v > 1 && out.kind === 'natural' ? 1 : 0;
  return { op: OP.GLOBAL_POOL, inputs: [x.ref], outputs: [c.outs[0]!.ref], ints: [kind, n, ch, product(spatial), v, naturalOut] };
};

export const softmax: Lowering = (c) => {
  float32Only(c, 'softmax');
  const s = c.ins[0]!.shape;
  const axis = attrNumber(c, 'axis', s.length - 1);
  const coerce = attrNumber(c, 'coerce2d', 0) === 1;
  const outer = product(s.slice(0, axis));
  const d = coerce ? product(s.slice(axis)) : s[axis]!;
  const inner = coerce ? 1 : product(s.slice(axis + 1));
  return {
    op: OP.SOFTMAX,
    inputs: [c.ins[0]!.ref],
    outputs: [c.outs[0]!.ref],
    ints: [outer, d, inner, c.layer.op === 'logsoftmax' ? 1 : 0],
  };
};

/** A constant broadcast to `shape` and flattened (LayerNorm's Scale/B over the normalised axes). */
function broadcastParam(c: OpContext, o: OpContext['ins'][number] | undefined, shape: readonly number[]): number {
  if (!o) return -1;
  if (!o.param) unsupported(c, 'layer norm scale and bias must be constants');
  const src = paramFloats(o.param);
  const out = new Float32Array(product(shape));
  const st = broadcastStrides(o.param.dims, shape);
  const full = stridesOf(shape);
  for (let i = 0; i < out.length; i++) {
    let at = 0;
    for (let d = 0; d < shape.length; d++) at += (Math.floor(i / full[d]!) % shape[d]!) * st[d]!;
    out[i] = src[at]!;
  }
  return c.addParam(out);
}

export const layerNorm: Lowering = (c) => {
  float32Only(c, 'layer normalization');
  const s = c.ins[0]!.shape;
  const axis = attrNumber(c, 'axis', s.length - 1);
  const norm = s.slice(axis);
  return {
    op: OP.LAYERNORM,
    inputs: [c.ins[0]!.ref, broadcastParam(c, c.ins[1], norm), broadcastParam(c, c.ins[2], norm)],
    outputs: [c.outs[0]!.ref],
    ints: [product(s.slice(0, axis)), product(norm)],
    floats: [attrNumber(c, 'epsilon', 1e-5)],
  };
};

export const batchNorm: Lowering = (c) => {
  const [x, scale, bias, mean, variance] = c.ins;
  float32Only(c, 'batch normalization');
  if (!x || !scale?.param || !bias?.param || !mean?.param || !variance?.param)
    unsupported(c, 'batch normalization needs constant scale, B, mean and var');
  if (attrNumber(c, 'training_mode', 0) !== 0) unsupported(c, 'training-mode batch normalization');
  const g = blockedGeometry(x);
  const eps = attrNumber(c, 'epsilon', 1e-5);
  const [sc, b, mu, va] = [scale, bias, mean, variance].map((p) => paramFloats(p!.param!));
  const padded = roundUp(g.c, g.v);
  const a = new Float32Array(padded),
    shift = new Float32Array(padded);
  for (let ch = 0; ch < g.c; ch++) {
    const k = sc![ch]! / Math.sqrt(va![ch]! + eps);
    a[ch] = k;
    shift[ch] = b![ch]! - mu![ch]! * k;
  }
  const hw = x.shape.length >= 3 ? product(x.shape.slice(2)) : 1;
  return { op: OP.CHANNEL_AFFINE, inputs: [x.ref, c.addParam(a), c.addParam(shift)], outputs: [c.outs[0]!.ref], ints: [g.n, g.c, hw, g.v] };
};

export const reduce: Lowering = (c) => {
  const fn = REDUCE_FN[c.layer.op];
  const x = c.ins[0]!;
  if (fn === undefined || x.dtype !== 'float32') unsupported(c, 'native reductions run on float32');
  if (c.ins.length > 1) unsupported(c, 'reduction axes must be constant');
  const rank = x.shape.length;
  let axes = attrList(c, 'axes');
  if (axes === undefined || axes.length === 0) {
    axes = attrNumber(c, 'noop_with_empty_axes', 0) === 1 ? [] : [...Array(rank).keys()];
  }
  const reduced = new Set(axes);
  const keptShape = x.shape.map((d, i) => (reduced.has(i) ? 1 : d));
  const keptStrides = stridesOf(keptShape).map((s, i) => (reduced.has(i) ? 0 : s));
  const walk = coalesce(x.shape, [keptStrides]);
  const count = product(keptShape);
  return {
    op: OP.REDUCE,
    inputs: [x.ref],
    outputs: [c.outs[0]!.ref],
    ints: [fn, walk.dims.length, ...walk.dims, ...walk.strides[0]!, count, product(x.shape) / Math.max(count, 1)],
  };
};

export const cast: Lowering = (c) => {
  const x = c.ins[0]!;
  const from = KIND[x.dtype],
    to = KIND[c.outs[0]!.dtype];
  if (from === undefined || to === undefined) unsupported(c, `cast from ${x.dtype} to ${c.outs[0]!.dtype}`);
  return { op: OP.CAST, inputs: [x.ref], outputs: [c.outs[0]!.ref], ints: [product(x.shape), from, to] };
};

export const topk: Lowering = (c) => {
  const x = c.ins[0]!;
  if (x.dtype !== 'float32' || c.outs.length !== 2 || c.outs[1]!.dtype !== 'int64')
    unsupported(c, 'native TopK takes float32 and writes int64 indices');
  if (isBlocked(c.layout)) unsupported(c, 'TopK runs on natural layouts');
  if (c.ins.length > 1) unsupported(c, 'TopK needs a constant K');
  const axis = attrNumber(c, 'axis', x.shape.length - 1);
  const kAttr = c.layer.attrs['K'] ?? c.layer.attrs['k'];
  const k = Array.isArray(kAttr) ? Number(kAttr[0]) : Number(kAttr);
  return {
    op: OP.TOPK,
    inputs: [x.ref],
    outputs: [c.outs[0]!.ref, c.outs[1]!.ref],
    ints: [product(x.shape.slice(0, axis)), x.shape[axis]!, product(x.shape.slice(axis + 1)), k, attrNumber(c, 'largest', 1)],
  };
};

export const COMPUTE_LOWERINGS: Readonly<Record<string, Lowering>> = {
  ...Object.fromEntries(Object.keys(UNARY_FN).map((k) => [k, unary])),
  ...Object.fromEntries(Object.keys(BINARY_FN).map((k) => [k, binary])),
  ...Object.fromEntries(Object.keys(REDUCE_FN).map((k) => [k, reduce])),
  where,
  maxpool: pool,
  averagepool: pool,
  globalaveragepool: globalPool,
  globalmaxpool: globalPool,
  softmax,
  logsoftmax: softmax,
  layernormalization: layerNorm,
  batchnormalization: batchNorm,
  cast,
  topk,
  elementwise_chain: elementwiseChain,
};

export type { LoweredOp };
