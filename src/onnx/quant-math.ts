/**
 * The integer reference of quantized inference: how ONNX quantizes (divide in float32, round half to
 * even, add the zero point, saturate), how it dequantizes, and the integer core every quantized
 * layer shares (u8/s8 × s8 products accumulated exactly in 32 bits, then requantized).
 *
 * Requantization is pinned here so every implementation can match it bit for bit: the multiplier is
 * M = fl32(fl32(x_scale · w_scale) / y_scale) and the output is sat(rint(fl32(fl32(acc) · M)) + y_zero),
 * the product in single precision — what ONNX Runtime's MLAS requantize computes (a float multiply
 * of the converted accumulator, rounded to nearest even), so whole models match its INT8 output, and
 * what a C kernel reproduces with cvtdq2ps, one mulps and cvtps2dq.
 */
import type { DType } from './model.js';

export type QuantDType = 'uint8' | 'int8' | 'int32';

export function isQuantDType(d: DType): d is QuantDType {
  return d === 'uint8' || d === 'int8' || d === 'int32';
}

const RANGE: Readonly<Record<QuantDType, readonly [number, number]>> = {
  uint8: [0, 255],
  int8: [-128, 127],
  int32: [-2147483648, 2147483647],
};

export function quantRange(d: QuantDType): readonly [number, number] {
  return RANGE[d];
}

/** numpy.rint: round to nearest, ties to even. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

export function saturateTo(d: QuantDType, v: number): number {
  const [lo, hi] = RANGE[d];
  return v < lo ? lo : v > hi ? hi : v;
}

/** QuantizeLinear of one value: x / scale in float32, rounded half to even, plus the zero point, saturated. */
export function quantizeValue(x: number, scale: number, zero: number, d: QuantDType): number {
  const q = Math.fround(x / scale);
  if (Number.isNaN(q)) return saturateTo(d, zero);
  return saturateTo(d, roundHalfEven(q) + zero);
}

/** DequantizeLinear of one value, in float32. */
export function dequantizeValue(q: number, scale: number, zero: number): number {
  return Math.fround((q - zero) * scale);
}

/** The float32 requantization multiplier of an integer accumulator. */
export function requantMultiplier(xScale: number, wScale: number, yScale: number): number {
  return Math.fround(Math.fround(xScale * wScale) / yScale);
}

/** fl32(acc) · M in float32, rounded half to even, plus the output zero point, clamped to [lo, hi] (the activation's range), saturated. */
export function requantize(acc: number, multiplier: number, yZero: number, d: QuantDType, lo = -Infinity, hi = Infinity): number {
  const v = saturateTo(d, roundHalfEven(Math.fround(Math.fround(acc) * multiplier)) + yZero);
  return v < lo ? lo : v > hi ? hi : v;
}

/** Per-channel parameters broadcast: a scalar applies to every channel. */
export function perChannel(values: ArrayLike<number>, channels: number): number[] {
  if (values.length === 1) return new Array<number>(channels).fill(values[0]!);
  return Array.from(values);
}

export interface Conv2dGeometry {
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly m: number;
  readonly kh: number;
  readonly kw: number;
  readonly oh: number;
  readonly ow: number;
  readonly group: number;
  readonly strides: readonly [number, number];
  readonly dilations: readonly [number, number];
  /** Top and left padding; the bottom/right padding follows from the output size. */
  readonly padBegin: readonly [number, number];
}

/**
 * Σ (x − x_zero)(w − w_zero[m]) over each output's window, exact in 32 bits (padding contributes
 * nothing: a padded input equals its zero point). x is NCHW, w is MCkHkW (C per group).
 */
export function conv2dAccumulate(
  x: ArrayLike<number>,
  xZero: number,
  w: ArrayLike<number>,
  wZero: readonly number[],
  g: Conv2dGeometry,
): Int32Array {
  const { n, c, h, w: wd, m, kh, kw, oh, ow, group } = g;
  const cg = c / group;
  const mg = m / group;
  const out = new Int32Array(n * m * oh * ow);
  for (let b = 0; b < n; b++)
    for (let oc = 0; oc < m; oc++) {
      const gi = Math.floor(oc / mg);
      const wz = wZero[oc]!;
      for (let oy = 0; oy < oh; oy++)
        for (let ox = 0; ox < ow; ox++) {
          let acc = 0;
          for (let ic = 0; ic < cg; ic++) {
            const xc = ((b * c + gi * cg + ic) * h) | 0;
            for (let ky = 0; ky < kh; ky++) {
              const iy = oy * g.strides[0] - g.padBegin[0] + ky * g.dilations[0];
              if (iy < 0 || iy >= h) continue;
              for (let kx = 0; kx < kw; kx++) {
                const ix = ox * g.strides[1] - g.padBegin[1] + kx * g.dilations[1];
                if (ix < 0 || ix >= wd) continue;
                acc += (x[(xc + iy) * wd + ix]! - xZero) * (w[((oc * cg + ic) * kh + ky) * kw + kx]! - wz);
              }
            }
          }
          out[((b * m + oc) * oh + oy) * ow + ox] = acc;
        }
    }
  return out;
}

/**
 * Batched Σ_k (a − a_zero)(b − b_zero[col]) for A [batch, rows, k] and B [batch or 1, k, cols]; b's
 * zero point is per column (per output channel) or one value.
 */
export function matmulAccumulate(
  a: ArrayLike<number>,
  aZero: number,
  b: ArrayLike<number>,
  bZero: readonly number[],
  dims: { readonly batch: number; readonly rows: number; readonly k: number; readonly cols: number; readonly bBatched: boolean },
): Int32Array {
  const { batch, rows, k, cols } = dims;
  const out = new Int32Array(batch * rows * cols);
  for (let p = 0; p < batch; p++) {
    const bBase = dims.bBatched ? p * k * cols : 0;
    for (let r = 0; r < rows; r++)
      for (let col = 0; col < cols; col++) {
        let acc = 0;
        const bz = bZero[col]!;
        for (let q = 0; q < k; q++) acc += (a[(p * rows + r) * k + q]! - aZero) * (b[bBase + q * cols + col]! - bz);
        out[(p * rows + r) * cols + col] = acc;
      }
  }
  return out;
}
