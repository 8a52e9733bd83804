/**
 * Index arithmetic the translator does once at load so the native ops stay simple: contiguous and
 * broadcast strides, and coalescing (merging neighbouring dimensions that every operand walks
 * contiguously together), which turns most broadcasts and copies into a few long inner loops.
 */

export const product = (xs: readonly number[]): number => xs.reduce((a, b) => a * b, 1);
export const roundUp = (a: number, b: number): number => Math.ceil(a / b) * b;

/** Row-major strides in elements. */
export function stridesOf(shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) out[d] = out[d + 1]! * shape[d + 1]!;
  return out;
}

/** Strides of `shape` read as `out` under multidirectional (numpy) broadcasting: 0 where broadcast. */
export function broadcastStrides(shape: readonly number[], out: readonly number[]): number[] {
  const own = stridesOf(shape);
  const offset = out.length - shape.length;
  return out.map((d, i) => {
    const j = i - offset;
    if (j < 0) return 0;
    return shape[j] === 1 && d !== 1 ? 0 : own[j]!;
  });
}

/** numpy broadcast of several shapes (the caller already knows they broadcast). */
export function broadcastShape(shapes: readonly (readonly number[])[]): number[] {
  const rank = Math.max(...shapes.map((s) => s.length));
  return Array.from({ length: rank }, (_, i) => Math.max(...shapes.map((s) => s[s.length - rank + i] ?? 1)));
}

export interface Walk {
  readonly dims: number[];
  readonly strides: number[][];
}

/**
 * Drop unit dimensions and merge d with d+1 wherever every stride list has s[d] = s[d+1]·dims[d+1].
 * Always returns at least one dimension.
 */
export function coalesce(dims: readonly number[], strides: readonly (readonly number[])[]): Walk {
  const keep = dims.map((d, i) => i).filter((i) => dims[i] !== 1);
  let outDims = keep.map((i) => dims[i]!);
  let outStrides = strides.map((s) => keep.map((i) => s[i]!));
  if (outDims.length === 0) return { dims: [1], strides: strides.map(() => [0]) };
  for (let d = outDims.length - 2; d >= 0; d--) {
    const mergeable = outStrides.every((s) => s[d] === s[d + 1]! * outDims[d + 1]!);
    if (!mergeable) continue;
    outDims = [...outDims.slice(0, d), outDims[d]! * outDims[d + 1]!, ...outDims.slice(d + 2)];
    outStrides = outStrides.map((s) => [...s.slice(0, d), s[d + 1]!, ...s.slice(d + 2)]);
  }
  return { dims: outDims, strides: outStrides };
}

/** Deepest walk the native ops index (their odometers are fixed-size); deeper ones are refused at load. */
export const MAX_NATIVE_RANK = 8;
