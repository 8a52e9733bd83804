/**
 * Tensor arithmetic for constant folding: allocation by dtype, broadcasting maps, strided copies
 * and reductions. Values are read as numbers; stores round the way ONNX Runtime does (typed arrays
 * truncate integers, int64 truncates explicitly, bool stores 0/1).
 */
import type { DType, Tensor, TensorData } from './model.js';
import { product, sameShape, stridesOf } from './shapes.js';
import { saturate } from './long.js';

export type NumericData = Exclude<TensorData, string[]>;

export function allocData(dtype: DType, n: number): TensorData {
  switch (dtype) {
    case 'float32':
    case 'float16':
    case 'bfloat16':
      return new Float32Array(n);
    case 'float64':
    case 'int64':
    case 'uint64':
      return new Float64Array(n);
    case 'int32':
      return new Int32Array(n);
    case 'uint32':
      return new Uint32Array(n);
    case 'int16':
      return new Int16Array(n);
    case 'uint16':
      return new Uint16Array(n);
    case 'int8':
      return new Int8Array(n);
    case 'uint8':
    case 'bool':
      return new Uint8Array(n);
    case 'string':
      return new Array<string>(n).fill('');
  }
}

/** How a computed number is stored for a dtype (beyond what the typed array already does). */
export function storeFor(dtype: DType): (x: number) => number {
  switch (dtype) {
    case 'int64':
    case 'uint64':
      return (x) => (Number.isNaN(x) ? 0 : saturate(Math.trunc(x)));
    case 'bool':
      return (x) => (x !== 0 ? 1 : 0);
    case 'float16':
      return roundToHalf;
    case 'bfloat16':
      return roundToBfloat;
    default:
      return (x) => x;
  }
}

export function isIntegerDType(dtype: DType): boolean {
  return dtype !== 'float32' && dtype !== 'float64' && dtype !== 'float16' && dtype !== 'bfloat16' && dtype !== 'string';
}

export function nums(t: Tensor): NumericData {
  if (Array.isArray(t.data)) throw new Error('string tensor in numeric fold');
  return t.data as NumericData;
}

export function tensorOf(dtype: DType, dims: readonly number[], values: ArrayLike<number>): Tensor {
  const data = allocData(dtype, values.length) as NumericData;
  const store = storeFor(dtype);
  for (let i = 0; i < values.length; i++) data[i] = store(values[i]!);
  return { dtype, dims: [...dims], data };
}

export function intsTensor(values: readonly number[], dims: readonly number[] = [values.length]): Tensor {
  return { dtype: 'int64', dims: [...dims], data: Float64Array.from(values) };
}

/** Per-axis strides of `dims` seen from a broadcast output of rank `rank` (0 on broadcast axes). */
export function broadcastStrides(outDims: readonly number[], dims: readonly number[]): number[] {
  const s = stridesOf(dims);
  const lead = outDims.length - dims.length;
  return outDims.map((d, i) => (i < lead || dims[i - lead] === 1 ? 0 : s[i - lead]!));
}

/**
 * Walk every element of `outDims` once, keeping one flat offset per operand (strides per output
 * axis, 0 where an operand is broadcast). `visit(i, offsets)` sees the output index and offsets.
 */
export function walk(
  outDims: readonly number[],
  strides: readonly (readonly number[])[],
  starts: readonly number[],
  visit: (i: number, offsets: Int32Array | Float64Array) => void,
): void {
  const n = product(outDims);
  const rank = outDims.length;
  const k = strides.length;
  const offsets = new Float64Array(starts);
  const idx = new Array<number>(rank).fill(0);
  for (let i = 0; i < n; i++) {
    visit(i, offsets);
    for (let ax = rank - 1; ax >= 0; ax--) {
      idx[ax]!++;
      for (let j = 0; j < k; j++) offsets[j]! += strides[j]![ax]!;
      if (idx[ax]! < outDims[ax]!) break;
      for (let j = 0; j < k; j++) offsets[j]! -= strides[j]![ax]! * outDims[ax]!;
      idx[ax] = 0;
    }
  }
}

export function mapBroadcast(outDtype: DType, outDims: readonly number[], ins: readonly Tensor[], fn: (...v: number[]) => number): Tensor {
  const datas = ins.map(nums);
  const out = allocData(outDtype, product(outDims)) as NumericData;
  const store = storeFor(outDtype);
  if (ins.length === 1 && ins[0]!.dims.length === outDims.length) {
    const a = datas[0]!;
    for (let i = 0; i < out.length; i++) out[i] = store(fn(a[i]!));
    return { dtype: outDtype, dims: [...outDims], data: out };
  }
  if (ins.length === 2 && ins.every((t) => sameShape(t.dims, outDims) || t.dims.every((d) => d === 1))) {
    // Common weight-folding case (W * scale, W + b of equal shape): no index bookkeeping.
    const [a, b] = datas as [NumericData, NumericData];
    const aStep = a.length === out.length ? 1 : 0;
    const bStep = b.length === out.length ? 1 : 0;
    for (let i = 0; i < out.length; i++) out[i] = store(fn(a[i * aStep]!, b[i * bStep]!));
    return { dtype: outDtype, dims: [...outDims], data: out };
  }
  const strides = ins.map((t) => broadcastStrides(outDims, t.dims));
  const vals = new Array<number>(ins.length);
  walk(
    outDims,
    strides,
    ins.map(() => 0),
    (i, off) => {
      for (let j = 0; j < datas.length; j++) vals[j] = datas[j]![off[j]!]!;
      out[i] = store(fn(...vals));
    },
  );
  return { dtype: outDtype, dims: [...outDims], data: out };
}

/** Copy `src` into a tensor of `outDims`, reading element `start + Σ idx[ax]·strides[ax]`. */
export function stridedCopy(src: Tensor, outDims: readonly number[], strides: readonly number[], start: number): Tensor {
  const n = product(outDims);
  if (Array.isArray(src.data)) {
    const s = src.data;
    const out = new Array<string>(n);
    walk(outDims, [strides], [start], (i, off) => {
      out[i] = s[off[0]!]!;
    });
    return { dtype: src.dtype, dims: [...outDims], data: out };
  }
  const s = src.data as NumericData;
  const out = allocData(src.dtype, n) as NumericData;
  walk(outDims, [strides], [start], (i, off) => {
    out[i] = s[off[0]!]!;
  });
  return { dtype: src.dtype, dims: [...outDims], data: out };
}

/** Same values, new dims (Reshape, Squeeze, Unsqueeze, Flatten, Identity): shares the data. */
export function reshaped(t: Tensor, dims: readonly number[]): Tensor {
  return { dtype: t.dtype, dims: [...dims], data: t.data };
}

/** Reduce `t` over `axes` (sorted, normalised) with an accumulator; result keeps reduced axes as 1. */
export function reduceAxes(
  t: Tensor,
  axes: readonly number[],
  outDtype: DType,
  init: number,
  step: (acc: number, v: number) => number,
  finish: (acc: number, count: number) => number,
): Tensor {
  const keptDims = t.dims.map((d, i) => (axes.includes(i) ? 1 : d));
  const outStrides = stridesOf(keptDims).map((s, i) => (axes.includes(i) ? 0 : s));
  const acc = new Float64Array(product(keptDims)).fill(init);
  const src = nums(t);
  walk(t.dims, [outStrides], [0], (i, off) => {
    acc[off[0]!] = step(acc[off[0]!]!, src[i]!);
  });
  const count = product(axes.map((a) => t.dims[a]!));
  return tensorOf(
    outDtype,
    keptDims,
    Array.from(acc, (a) => finish(a, count)),
  );
}

const scratch = new DataView(new ArrayBuffer(4));

/** Round to the nearest bfloat16 (ties to even), as a float32 value. */
function roundToBfloat(x: number): number {
  if (Number.isNaN(x)) return x;
  scratch.setFloat32(0, x);
  const bits = scratch.getUint32(0);
  const rounded = (bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000;
  scratch.setUint32(0, rounded >>> 0);
  return scratch.getFloat32(0);
}

/** Round to the nearest IEEE half (ties to even), as a float32 value. */
function roundToHalf(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  if (a >= 65520) return Math.sign(x) * Infinity;
  const exp = Math.max(Math.floor(Math.log2(a)), -14);
  const ulp = 2 ** (exp - 10);
  const q = a / ulp;
  let r = Math.round(q);
  if (r - q === 0.5 && r % 2 !== 0) r -= 1;
  return Math.sign(x) * r * ulp;
}
