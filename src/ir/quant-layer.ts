/**
 * How a quantized layer carries its requantization epilogue. The integer core (u8 × s8 → s32) is
 * followed by: + bias (int32, in the accumulator's scale), converted to float32 and × fl32(fl32(x_scale ·
 * w_scale[c]) / y_scale) in float32, round half to even, + y_zero, clamp to the activation's integer range (Relu, Clip), saturate to
 * out_dtype. yScale 0 marks an integer-output layer (ConvInteger, MatMulInteger): s32 as is.
 */
import type { Tensor } from '../onnx/model.js';
import { nums } from '../onnx/eval.js';
import { quantRange, requantMultiplier, type QuantDType } from '../onnx/quant-math.js';
import type { Layer } from './layer.js';

export const QUANT_ATTRS = {
  xScale: 'x_scale',
  xZero: 'x_zero',
  yScale: 'y_scale',
  yZero: 'y_zero',
  outDtype: 'out_dtype',
  clamp: 'clamp',
} as const;

export interface Requantization {
  readonly xScale: number;
  readonly xZero: number;
  /** 0: the layer outputs the int32 accumulator. */
  readonly yScale: number;
  readonly yZero: number;
  readonly outDtype: QuantDType;
  /** Inclusive bounds in the output's integer domain (Relu → [y_zero, max], Clip → quantized bounds). */
  readonly clamp: readonly [number, number];
}

export function requantizationOf(l: Pick<Layer, 'attrs'>): Requantization {
  const a = l.attrs;
  const clamp = (a[QUANT_ATTRS.clamp] as readonly number[] | undefined) ?? [-Infinity, Infinity];
  return {
    xScale: a[QUANT_ATTRS.xScale] as number,
    xZero: a[QUANT_ATTRS.xZero] as number,
    yScale: a[QUANT_ATTRS.yScale] as number,
    yZero: a[QUANT_ATTRS.yZero] as number,
    outDtype: a[QUANT_ATTRS.outDtype] as QuantDType,
    clamp: [clamp[0]!, clamp[1]!],
  };
}

/** A quantized layer's constant operands: int8 weight, per-channel scale and zero point, optional int32 bias. */
export interface QuantWeights {
  readonly weight: Tensor;
  readonly scale: Float32Array;
  readonly zero: Int32Array;
  readonly bias: Int32Array | undefined;
}

export function quantWeightsOf(l: Pick<Layer, 'params'>): QuantWeights {
  const p = l.params;
  return {
    weight: p.weight!,
    scale: p.weight_scale!.data as Float32Array,
    zero: p.weight_zero!.data as Int32Array,
    bias: p.bias === undefined ? undefined : Int32Array.from(p.bias.data as ArrayLike<number>),
  };
}

/** The weight's integer values, flat in its stored order (OIHW for conv, K×N for matmul). */
export function weightValuesOf(l: Pick<Layer, 'params'>): ArrayLike<number> {
  return nums(l.params.weight!);
}

/** Each output channel's requantization multiplier M (quant-math.ts); 0 for an integer-output layer. */
export function multipliersOf(l: Pick<Layer, 'attrs' | 'params'>): Float32Array {
  const q = requantizationOf(l);
  const s = quantWeightsOf(l).scale;
  return q.yScale === 0 ? new Float32Array(s.length) : Float32Array.from(s, (ws) => requantMultiplier(q.xScale, ws, q.yScale));
}

/** The activation's clamp inside the output type's range: the bounds every output lands in. */
export function outputBounds(q: Requantization): [number, number] {
  const [lo, hi] = quantRange(q.outDtype);
  return [Math.max(lo, q.clamp[0]), Math.min(hi, q.clamp[1])];
}
