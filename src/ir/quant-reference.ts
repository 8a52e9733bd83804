/**
 * The integer reference of each quantized layer, read from the layer itself (its int8 weight, its
 * requantization attrs): what a generated INT8 kernel must reproduce bit for bit. The arithmetic is
 * quant-math.ts's (u8 × s8 → s32, requantize half to even, saturate), the same that folds the
 * QOperator nodes, so a folded layer checked here is checked against ONNX's own definition.
 */
import type { Tensor } from '../onnx/model.js';
import {
  conv2dAccumulate,
  dequantizeValue,
  matmulAccumulate,
  quantizeValue,
  requantize,
  requantMultiplier,
  roundHalfEven,
  type QuantDType,
} from '../onnx/quant-math.js';
import { nums, tensorOf } from '../onnx/eval.js';
import type { Layer } from './layer.js';
import { outputBounds, quantWeightsOf, requantizationOf, type Requantization } from './quant-layer.js';
import { internalError } from '../errors.js';

/** The s32 accumulator (+ bias) of output channel `c`, requantized, or as is for an integer-output layer. */
function finish(
  acc: Int32Array,
  channelOf: (i: number) => number,
  bias: Int32Array | undefined,
  wScale: Float32Array,
  q: Requantization,
): number[] {
  const mult = Array.from(wScale, (s) => requantMultiplier(q.xScale, s, q.yScale));
  return Array.from(acc, (a, i) => {
    const c = channelOf(i);
    const v = a + (bias?.[c] ?? 0);
    if (q.yScale === 0) return v;
    return requantize(v, mult[c]!, q.yZero, q.outDtype, q.clamp[0], q.clamp[1]);
  });
}

function qconv2d(l: Layer, x: Tensor): Tensor {
  const w = quantWeightsOf(l);
  const q = requantizationOf(l);
  const [n, c, h, wd] = l.inputShapes[0] as [number, number, number, number];
  const [, m, oh, ow] = l.outputShape as [number, number, number, number];
  const a = l.attrs;
  const [kh, kw] = a.kernel as [number, number];
  const pads = a.pads as readonly number[];
  const g = {
    n,
    c,
    h,
    w: wd,
    m,
    kh,
    kw,
    oh,
    ow,
    group: a.groups as number,
    strides: a.strides as [number, number],
    dilations: a.dilations as [number, number],
    padBegin: [pads[0]!, pads[1]!] as [number, number],
  };
  const acc = conv2dAccumulate(nums(x), q.xZero, nums(w.weight), Array.from(w.zero), g);
  return tensorOf(
    q.outDtype,
    l.outputShape,
    finish(acc, (i) => Math.floor(i / (oh * ow)) % m, w.bias, w.scale, q),
  );
}

function qmatmul(l: Layer, x: Tensor): Tensor {
  const w = quantWeightsOf(l);
  const q = requantizationOf(l);
  const [k, cols] = w.weight.dims as [number, number];
  const rows = x.dims[x.dims.length - 2] ?? 1;
  const batch = x.dims.slice(0, -2).reduce((p, d) => p * d, 1);
  const acc = matmulAccumulate(nums(x), q.xZero, nums(w.weight), Array.from(w.zero), { batch, rows, k, cols, bBatched: false });
  return tensorOf(
    q.outDtype,
    l.outputShape,
    finish(acc, (i) => i % cols, w.bias, w.scale, q),
  );
}

function qadd(l: Layer, a: Tensor, b: Tensor): Tensor {
  const q = requantizationOf(l);
  const [bs, bz] = [l.attrs.b_scale as number, l.attrs.b_zero as number];
  const [x, y] = [nums(a), nums(b)];
  if (x.length !== y.length) throw internalError(`${l.op} ${l.index}: broadcasting quantized Add is not in the reference`);
  const d = q.outDtype;
  // A folded Relu/Clip: quantizing relu(s) equals clamping quantize(s) at the zero point (and Clip's bounds likewise).
  const [lo, hi] = outputBounds(q);
  return tensorOf(
    d,
    l.outputShape,
    Array.from(x, (v, i) => {
      const s = Math.fround(dequantizeValue(v, q.xScale, q.xZero) + dequantizeValue(y[i]!, bs, bz));
      return Math.max(lo, Math.min(hi, quantizeValue(s, q.yScale, q.yZero, d)));
    }),
  );
}

/** Max of the window in the input's integers (max commutes with the monotone requantization). */
function qmaxpool(l: Layer, x: Tensor): Tensor {
  const q = requantizationOf(l);
  const [n, c, h, wd] = l.inputShapes[0] as [number, number, number, number];
  const [, , oh, ow] = l.outputShape as [number, number, number, number];
  const [kh, kw] = l.attrs.kernel as [number, number];
  const [sh, sw] = l.attrs.strides as [number, number];
  const [dh, dw] = l.attrs.dilations as [number, number];
  const pads = l.attrs.pads as readonly number[];
  const data = nums(x);
  const mult = Math.fround(q.xScale / q.yScale);
  const out: number[] = [];
  for (let p = 0; p < n * c; p++)
    for (let oy = 0; oy < oh; oy++)
      for (let ox = 0; ox < ow; ox++) {
        let best = -Infinity;
        for (let ky = 0; ky < kh; ky++)
          for (let kx = 0; kx < kw; kx++) {
            const iy = oy * sh - pads[0]! + ky * dh;
            const ix = ox * sw - pads[1]! + kx * dw;
            if (iy >= 0 && iy < h && ix >= 0 && ix < wd) best = Math.max(best, data[(p * h + iy) * wd + ix]!);
          }
        out.push(requantize(best - q.xZero, mult, q.yZero, q.outDtype));
      }
  return tensorOf(q.outDtype, l.outputShape, out);
}

/** Σ (x − x_zero) over the window's taps inside the input, requantized by x_scale / (y_scale · count). */
function qavgpool(l: Layer, x: Tensor): Tensor {
  const q = requantizationOf(l);
  const [n, c, h, wd] = l.inputShapes[0] as [number, number, number, number];
  const [, , oh, ow] = l.outputShape as [number, number, number, number];
  const [kh, kw] = l.attrs.kernel as [number, number];
  const [sh, sw] = l.attrs.strides as [number, number];
  const pads = l.attrs.pads as readonly number[];
  const includePad = l.attrs.count_include_pad === 1;
  const data = nums(x);
  const out: number[] = [];
  for (let p = 0; p < n * c; p++)
    for (let oy = 0; oy < oh; oy++)
      for (let ox = 0; ox < ow; ox++) {
        let [acc, inside] = [0, 0];
        for (let ky = 0; ky < kh; ky++)
          for (let kx = 0; kx < kw; kx++) {
            const iy = oy * sh - pads[0]! + ky;
            const ix = ox * sw - pads[1]! + kx;
            if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
              acc += data[(p * h + iy) * wd + ix]! - q.xZero;
              inside++;
            }
          }
        const count = includePad ? kh * kw : inside;
        out.push(requantize(acc, Math.fround(q.xScale / Math.fround(q.yScale * count)), q.yZero, q.outDtype));
      }
  return tensorOf(q.outDtype, l.outputShape, out);
}

function qglobalAvgpool(l: Layer, x: Tensor): Tensor {
  const q = requantizationOf(l);
  const [n, c, h, wd] = l.inputShapes[0] as [number, number, number, number];
  const plane = h * wd;
  const data = nums(x);
  const mult = Math.fround(q.xScale / Math.fround(q.yScale * plane));
  return tensorOf(
    q.outDtype,
    l.outputShape,
    Array.from({ length: n * c }, (_, ch) => {
      let acc = 0;
      for (let i = 0; i < plane; i++) acc += data[ch * plane + i]! - q.xZero;
      return requantize(acc, mult, q.yZero, q.outDtype);
    }),
  );
}

/**
 * Each input requantized to the output's scale (quantize(dequantize(x))), then joined along the axis;
 * with a folded batch norm, fl32(fl32((x − x_zero) · A[c]) + B[c]) of the output channel c rounded
 * half to even, plus y_zero, clamped (quantized.ts folds A and B).
 */
function qconcat(l: Layer, inputs: readonly Tensor[]): Tensor {
  const q = requantizationOf(l);
  const axis = l.attrs.axis as number;
  const scales = l.attrs.in_scales as readonly number[];
  const zeros = l.attrs.in_zeros as readonly number[];
  const a = l.attrs.affine_scale as readonly number[] | undefined;
  const b = l.attrs.affine_shift as readonly number[] | undefined;
  const [lo, hi] = outputBounds(q);
  const clamp = (v: number) => Math.max(lo, Math.min(hi, v));
  const outer = l.outputShape.slice(0, axis).reduce((x, y) => x * y, 1);
  const plane = l.outputShape.slice(axis + 1).reduce((x, y) => x * y, 1);
  let first = 0;
  const parts = inputs.map((t, i) => {
    const inner = t.dims.slice(axis).reduce((x, y) => x * y, 1);
    const channel0 = first;
    first += t.dims[axis]!;
    const values = Array.from(nums(t), (v, e) => {
      if (a === undefined) return clamp(quantizeValue(dequantizeValue(v, scales[i]!, zeros[i]!), q.yScale, q.yZero, q.outDtype));
      const c = channel0 + Math.floor((e % inner) / plane);
      return clamp(roundHalfEven(Math.fround(Math.fround((v - zeros[i]!) * a[c]!) + b![c]!)) + q.yZero);
    });
    return { inner, values };
  });
  const out: number[] = [];
  for (let r = 0; r < outer; r++) for (const p of parts) for (let k = 0; k < p.inner; k++) out.push(p.values[r * p.inner + k]!);
  return tensorOf(q.outDtype, l.outputShape, out);
}

/** The folded float island's table, indexed by the u8 input. */
function qlut(l: Layer, x: Tensor): Tensor {
  const table = l.attrs.table as readonly number[];
  return tensorOf(
    requantizationOf(l).outDtype,
    l.outputShape,
    Array.from(nums(x), (v) => table[v]!),
  );
}

/** x [N, C, H, W] times the gate of its channel (the table's float at g[n, c]), quantized: fl32(dequantize(x) · gate) / y_scale. */
function qgate(l: Layer, x: Tensor, g: Tensor): Tensor {
  const q = requantizationOf(l);
  const gate = l.attrs.gate as readonly number[];
  const [, c, h, w] = l.outputShape as [number, number, number, number];
  const gates = nums(g);
  return tensorOf(
    q.outDtype,
    l.outputShape,
    Array.from(nums(x), (v, i) => {
      const m = gate[gates[(Math.floor(i / (h * w)) % c) + Math.floor(i / (c * h * w)) * c]!]!;
      return quantizeValue(Math.fround(dequantizeValue(v, q.xScale, q.xZero) * m), q.yScale, q.yZero, q.outDtype);
    }),
  );
}

function conversion(l: Layer, x: Tensor): Tensor {
  const [s, z] = [l.attrs.scale as number, l.attrs.zero as number];
  if (l.op === 'dequantize_linear')
    return tensorOf(
      'float32',
      l.outputShape,
      Array.from(nums(x), (v) => dequantizeValue(v, s, z)),
    );
  const d = l.attrs.out_dtype as QuantDType;
  return tensorOf(
    d,
    l.outputShape,
    Array.from(nums(x), (v) => quantizeValue(v, s, z, d)),
  );
}

/** Run one quantized layer on its activation inputs (in Layer.inputs order). */
export function runQuantizedLayer(l: Layer, inputs: readonly Tensor[]): Tensor {
  const [x, y] = inputs;
  switch (l.op) {
    case 'qconv2d':
      return qconv2d(l, x!);
    case 'qmatmul':
      return qmatmul(l, x!);
    case 'qadd':
      return qadd(l, x!, y!);
    case 'qmaxpool':
      return qmaxpool(l, x!);
    case 'qglobal_avgpool':
      return qglobalAvgpool(l, x!);
    case 'qavgpool':
      return qavgpool(l, x!);
    case 'qconcat':
      return qconcat(l, inputs);
    case 'qlut':
      return qlut(l, x!);
    case 'qgate':
      return qgate(l, x!, y!);
    case 'quantize_linear':
    case 'dequantize_linear':
      return conversion(l, x!);
    default:
      throw internalError(`layer ${l.index} (${l.op}) is not a quantized layer`);
  }
}

/** A qconv2d / qmatmul layer on a u8 input in its own order (NCHW / row-major): the reference the INT8 tuner checks kernels against. */
export function referenceOfU8(l: Layer, x: Uint8Array): ArrayLike<number> {
  return nums(runQuantizedLayer(l, [{ dtype: 'uint8', dims: [...l.inputShapes[0]!], data: x }]));
}
