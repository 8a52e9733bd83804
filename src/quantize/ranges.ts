/**
 * Activation ranges from calibration runs, and the u8 (scale, zero point) and s8 weight quantization
 * they give. Min-max keeps every value representable; percentile clips the rare extremes (outliers
 * that would otherwise stretch the scale for all other values), as ONNX Runtime's calibrators do.
 */
import { roundHalfEven } from '../onnx/quant-math.js';

export type CalibrationMethod = 'minmax' | 'percentile';

/** Values kept per tensor for a percentile: past this, every k-th value (deterministic). */
const MAX_KEPT = 1 << 22;

export interface RangeCollector {
  add(name: string, values: ArrayLike<number>): void;
  range(name: string): readonly [number, number];
}

export function rangeCollector(method: CalibrationMethod, percentile = 99.99): RangeCollector {
  const minmax = new Map<string, [number, number]>();
  const kept = new Map<string, number[]>();
  return {
    add: (name, values) => {
      let [lo, hi] = minmax.get(name) ?? [Infinity, -Infinity];
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      minmax.set(name, [lo, hi]);
      if (method !== 'percentile') return;
      const list = kept.get(name) ?? [];
      const step = Math.max(1, Math.ceil(values.length / Math.max(1, MAX_KEPT - list.length)));
      for (let i = 0; i < values.length; i += step) list.push(values[i]!);
      kept.set(name, list);
    },
    range: (name) => {
      const mm = minmax.get(name);
      if (mm === undefined || !Number.isFinite(mm[0])) return [0, 0];
      if (method === 'minmax') return mm;
      const sorted = Float64Array.from(kept.get(name)!).sort();
      const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round((p / 100) * (sorted.length - 1))))]!;
      return [at(100 - percentile), at(percentile)];
    },
  };
}

/** u8 asymmetric quantization of [lo, hi], widened to include 0 so zero padding is exact. */
export function activationQuant(lo: number, hi: number): { scale: number; zero: number } {
  const [a, b] = [Math.min(lo, 0), Math.max(hi, 0)];
  const scale = Math.fround((b - a) / 255);
  if (!(scale > 0) || !Number.isFinite(scale)) return { scale: 1, zero: 0 };
  return { scale, zero: Math.min(255, Math.max(0, roundHalfEven(-a / scale))) };
}

/** Symmetric s8 per channel along `axis` ([-127, 127], zero point 0), ONNX Runtime's default for weights. */
/**
 * The largest |int32 bias| of a k-term u8×s8 sum: room beside it for every product (255 · 128 each),
 * so the 32-bit accumulator never wraps (the INT8 kernels refuse a layer past it).
 */
export const biasLimit = (k: number): number => 2 ** 31 - 1 - k * 255 * 128;

/**
 * Per output channel, the least weight scale at which bias[c] / (xScale · wScale) fits biasLimit(k):
 * an activation with a tiny range (a near-constant feature) would otherwise push the bias past int32,
 * so its channel's weight scale is widened instead, as ONNX Runtime's quantizer does. 0: no floor.
 */
export function weightScaleFloors(bias: Float32Array, xScale: number, k: number): Float32Array {
  const limit = biasLimit(k);
  if (limit < 1 || !(xScale > 0)) return new Float32Array(bias.length);
  // the margin covers rounding the bias scale xScale · wScale to float32
  return Float32Array.from(bias, (b) => (Math.abs(b) / (xScale * limit)) * (1 + 2 ** -20));
}

export function weightQuant(
  w: Float32Array,
  dims: readonly number[],
  axis: number,
  floors?: Float32Array,
): { values: Int8Array; scales: Float32Array } {
  const channels = dims[axis]!;
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const chanOf = (i: number): number => Math.floor(i / inner) % channels;
  const maxAbs = new Float64Array(channels);
  w.forEach((v, i) => {
    const c = chanOf(i);
    maxAbs[c] = Math.max(maxAbs[c]!, Math.abs(v));
  });
  const scales = Float32Array.from(maxAbs, (m, c) => Math.max(m > 0 ? m / 127 : 1, floors?.[c] ?? 0));
  const values = Int8Array.from(w, (v, i) => Math.max(-127, Math.min(127, roundHalfEven(Math.fround(v / scales[chanOf(i)]!)))));
  return { values, scales };
}
