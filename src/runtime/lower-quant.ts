/**
 * Lowerings of the quantized layers around the INT8 kernels (their C ops and ints/floats are
 * documented in native-kernels/runtime/ops_quant.c): QuantizeLinear and DequantizeLinear convert
 * between float NCHW[V]c and integer channels-last values, qadd / qmaxpool / qglobal_avgpool /
 * qconcat / qlut / qgate / qavgpool run on channels-last integers. Scales and zero points come from the layer's attrs (src/ir/quant-layer.ts);
 * the multipliers are folded here exactly as src/ir/quant-reference.ts folds them.
 */
import { NHWC } from '../bundle/layout.js';
import { outputBounds, requantizationOf } from '../ir/quant-layer.js';
import { KIND, OP } from './ops.js';
import { product } from './geometry.js';
import { attrList, blockedGeometry, unsupported, type Lowering, type OpContext, type Operand } from './lower-context.js';

/** The vt_kind of an integer activation (u8 or s8). */
function intKind(c: OpContext, o: Operand): number {
  if (o.dtype !== 'uint8' && o.dtype !== 'int8') unsupported(c, `quantized steps run on uint8 / int8, not ${o.dtype}`);
  return KIND[o.dtype]!;
}

/** [N, C, HW, V, int side channels-last, kind] of a conversion between float `f` and integer `q`. */
function conversionInts(c: OpContext, f: Operand, q: Operand): number[] {
  if (f.dtype !== 'float32') unsupported(c, `quantize / dequantize convert float32, not ${f.dtype}`);
  const kind = intKind(c, q);
  if (f.shape.length !== 4) return [1, 1, product(f.shape), 1, 0, kind];
  const g = blockedGeometry(f);
  return [g.n, g.c, g.h * g.w, g.v, q.layout === NHWC ? 1 : 0, kind];
}

const scaleZero = (c: OpContext): number[] => [c.layer.attrs['scale'] as number, c.layer.attrs['zero'] as number];

export const quantizeLinear: Lowering = (c) => {
  const [x, q] = [c.ins[0]!, c.outs[0]!];
  return { op: OP.QUANTIZE, inputs: [x.ref], outputs: [q.ref], ints: conversionInts(c, x, q), floats: scaleZero(c) };
};

export const dequantizeLinear: Lowering = (c) => {
  const [q, x] = [c.ins[0]!, c.outs[0]!];
  return { op: OP.DEQUANTIZE, inputs: [q.ref], outputs: [x.ref], ints: conversionInts(c, x, q), floats: scaleZero(c) };
};

export const qadd: Lowering = (c) => {
  const [a, b] = c.ins as [Operand, Operand];
  const y = c.outs[0]!;
  const same = (o: Operand) => o.shape.length === y.shape.length && o.shape.every((d, i) => d === y.shape[i]) && o.layout === y.layout;
  if (c.ins.length !== 2 || !same(a) || !same(b) || a.param || b.param)
    unsupported(c, 'quantized Add runs on two activations of one shape');
  const q = requantizationOf(c.layer);
  const attrs = c.layer.attrs;
  return {
    op: OP.QADD,
    inputs: [a.ref, b.ref],
    outputs: [y.ref],
    ints: [product(y.shape), intKind(c, a), intKind(c, b), intKind(c, y), ...outputBounds(q)],
    floats: [q.xScale, q.xZero, attrs['b_scale'] as number, attrs['b_zero'] as number, q.yScale, q.yZero],
  };
};

/** [N, C, H, W] of a rank-4 integer operand. */
function dims4(c: OpContext, o: Operand): [number, number, number, number] {
  if (o.shape.length !== 4) unsupported(c, 'quantized pooling runs on rank-4 values');
  return o.shape as unknown as [number, number, number, number];
}

export const qmaxpool: Lowering = (c) => {
  const [x, y] = [c.ins[0]!, c.outs[0]!];
  const [n, ch, h, w] = dims4(c, x);
  const [, , oh, ow] = dims4(c, y);
  const [kh, kw] = attrList(c, 'kernel') ?? [1, 1];
  const [sh, sw] = attrList(c, 'strides') ?? [1, 1];
  const [dh, dw] = attrList(c, 'dilations') ?? [1, 1];
  const [pt, pl] = attrList(c, 'pads') ?? [0, 0, 0, 0];
  const q = requantizationOf(c.layer);
  return {
    op: OP.QMAXPOOL,
    inputs: [x.ref],
    outputs: [y.ref],
    ints: [n, ch, h, w, oh, ow, kh!, kw!, sh!, sw!, pt!, pl!, dh!, dw!, intKind(c, x), intKind(c, y)],
    floats: [Math.fround(q.xScale / q.yScale), q.xZero, q.yZero],
  };
};

export const qavgpool: Lowering = (c) => {
  const [x, y] = [c.ins[0]!, c.outs[0]!];
  const [n, ch, h, w] = dims4(c, x);
  const [, , oh, ow] = dims4(c, y);
  const [kh, kw] = attrList(c, 'kernel') ?? [1, 1];
  const [sh, sw] = attrList(c, 'strides') ?? [1, 1];
  const [pt, pl] = attrList(c, 'pads') ?? [0, 0, 0, 0];
  const q = requantizationOf(c.layer);
  return {
    op: OP.QAVGPOOL,
    inputs: [x.ref],
    outputs: [y.ref],
    ints: [
      n,
      ch,
      h,
      w,
      oh,
      ow,
      kh!,
      kw!,
      sh!,
      sw!,
      pt!,
      pl!,
      c.layer.attrs['count_include_pad'] === 1 ? 1 : 0,
      intKind(c, x),
      intKind(c, y),
    ],
    floats: [q.xScale, q.xZero, q.yScale, q.yZero],
  };
};

export const qglobalAvgpool: Lowering = (c) => {
  const [x, y] = [c.ins[0]!, c.outs[0]!];
  const [n, ch, h, w] = dims4(c, x);
  const q = requantizationOf(c.layer);
  return {
    op: OP.QGLOBAL_AVGPOOL,
    inputs: [x.ref],
    outputs: [y.ref],
    ints: [n, ch, h * w, intKind(c, x), intKind(c, y)],
    floats: [Math.fround(q.xScale / Math.fround(q.yScale * h * w)), q.xZero, q.yZero],
  };
};

/** An integer operand's dims in memory order and where `axis` (an ONNX axis) lands among them. */
function memoryOrder(c: OpContext, o: Operand, axis: number): { dims: readonly number[]; axis: number } {
  if (o.shape.length === 4 && o.layout === NHWC) {
    const [n, ch, h, w] = o.shape as [number, number, number, number];
    return { dims: [n, h, w, ch], axis: [0, 3, 1, 2][axis]! };
  }
  if (o.layout !== NHWC && o.layout !== 'nchw') unsupported(c, `quantized Concat reads row-major or NHWC integers, not ${o.layout}`);
  return { dims: o.shape, axis };
}

export const qconcat: Lowering = (c) => {
  const y = c.outs[0]!;
  const axis = c.layer.attrs['axis'] as number;
  const scales = c.layer.attrs['in_scales'] as readonly number[];
  const zeros = c.layer.attrs['in_zeros'] as readonly number[];
  const a = c.layer.attrs['affine_scale'] as readonly number[] | undefined;
  const s = c.layer.attrs['affine_shift'] as readonly number[] | undefined;
  if (c.ins.some((o) => o.param) || c.ins.length !== scales.length) unsupported(c, 'quantized Concat joins activations');
  const out = memoryOrder(c, y, axis);
  // An affine concat's rows must be pixels of channels, so that a row position is its channel.
  if (a !== undefined && (y.shape.length !== 4 || y.layout !== NHWC || axis !== 1))
    unsupported(c, 'a quantized Concat with a folded batch norm runs on NHWC channels');
  const inner = c.ins.map((o) => {
    const m = memoryOrder(c, o, axis);
    return product(m.dims.slice(m.axis));
  });
  const q = requantizationOf(c.layer);
  return {
    op: OP.QCONCAT,
    inputs: c.ins.map((o) => o.ref),
    outputs: [y.ref],
    ints: [
      product(out.dims.slice(0, out.axis)),
      intKind(c, y),
      c.ins.length,
      ...inner,
      ...c.ins.map((o) => intKind(c, o)),
      a === undefined ? 0 : 1,
      ...outputBounds(q),
    ],
    floats: [...scales.flatMap((v, i) => [v, zeros[i]!]), q.yScale, q.yZero, ...(a ?? []), ...(s ?? [])],
  };
};

export const qlut: Lowering = (c) => {
  const [x, y] = [c.ins[0]!, c.outs[0]!];
  return {
    op: OP.QLUT,
    inputs: [x.ref],
    outputs: [y.ref],
    ints: [product(y.shape), intKind(c, x), intKind(c, y), ...(c.layer.attrs['table'] as readonly number[])],
  };
};

export const qgate: Lowering = (c) => {
  const [x, g] = c.ins as [Operand, Operand];
  const y = c.outs[0]!;
  const [n, ch, h, w] = dims4(c, y);
  for (const o of [x, g, y]) if (intKind(c, o) !== KIND.uint8) unsupported(c, 'a quantized channel gate runs on uint8');
  if (x.layout !== NHWC || y.layout !== NHWC) unsupported(c, 'a quantized channel gate runs channels-last');
  const q = requantizationOf(c.layer);
  return {
    op: OP.QGATE,
    inputs: [x.ref, g.ref],
    outputs: [y.ref],
    ints: [n, h * w, ch],
    floats: [q.xScale, q.xZero, q.yScale, q.yZero, ...(c.layer.attrs['gate'] as readonly number[])],
  };
};

export const QUANT_LOWERINGS: Readonly<Record<string, Lowering>> = {
  quantize_linear: quantizeLinear,
  dequantize_linear: dequantizeLinear,
  qadd,
  qmaxpool,
  qglobal_avgpool: qglobalAvgpool,
  qconcat,
  qlut,
  qgate,
  qavgpool,
};
