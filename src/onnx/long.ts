/**
 * protobufjs hands int64 fields over as `Long` objects (or plain numbers for small values). veltair
 * keeps them as JS numbers: exact within ±2^53, saturating beyond (INT64_MAX in a Slice `ends` means
 * "to the end", and saturation keeps that meaning).
 */
export interface LongLike {
  readonly high: number;
  readonly low: number;
  readonly unsigned?: boolean;
}

const TWO_32 = 4294967296;

export function saturate(x: number): number {
  if (x > Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
  if (x < -Number.MAX_SAFE_INTEGER) return -Number.MAX_SAFE_INTEGER;
  return x;
}

export function longToNumber(v: number | LongLike | null | undefined): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return saturate(v);
  const high = v.unsigned ? v.high >>> 0 : v.high | 0;
  return saturate(high * TWO_32 + (v.low >>> 0));
}

/** Signed int64 from two little-endian 32-bit halves, saturated. */
export function int64FromHalves(low: number, high: number): number {
  return saturate((high | 0) * TWO_32 + (low >>> 0));
}

export function uint64FromHalves(low: number, high: number): number {
  return saturate((high >>> 0) * TWO_32 + (low >>> 0));
}
