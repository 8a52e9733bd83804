/**
 * A tensor in JS memory, as the session API takes and returns it: a dtype, a shape and a flat,
 * C-ordered typed array of the dtype's JS type (int64 as BigInt64Array, bool as Uint8Array).
 */
import type { DType } from '../onnx/model.js';
import type { TensorData } from './native-bridge.js';

export type { TensorData };

export interface HostTensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: TensorData;
}

/** The typed-array class that holds `dtype` (undefined: the runtime has no host type for it). */
const ARRAY_OF: Readonly<Partial<Record<DType, string>>> = {
  float32: 'Float32Array',
  float64: 'Float64Array',
  int32: 'Int32Array',
  int64: 'BigInt64Array',
  int8: 'Int8Array',
  uint8: 'Uint8Array',
  bool: 'Uint8Array',
  int16: 'Int16Array',
  uint16: 'Uint16Array',
};

export function arrayTypeFor(dtype: DType): string | undefined {
  return ARRAY_OF[dtype];
}

/** The typed-array class name of `data` (e.g. 'Float32Array'), or its JS type for anything else. */
export function arrayTypeOf(data: unknown): string {
  if (ArrayBuffer.isView(data)) return data.constructor.name;
  if (Array.isArray(data)) return 'Array';
  return data === null ? 'null' : typeof data;
}

export const elementsOf = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

export interface TensorStats {
  readonly min: number;
  readonly max: number;
  readonly mean: number;
}

/** min / max / mean over the values (NaN when any value is NaN or the tensor is empty). */
export function tensorStats(data: TensorData): TensorStats {
  const n = data.length;
  if (n === 0) return { min: Number.NaN, max: Number.NaN, mean: Number.NaN };
  let min = Infinity,
    max = -Infinity,
    sum = 0;
  for (let i = 0; i < n; i++) {
    const v = Number(data[i]!);
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
  }
  if (Number.isNaN(sum)) return { min: Number.NaN, max: Number.NaN, mean: Number.NaN };
  return { min, max, mean: sum / n };
}
