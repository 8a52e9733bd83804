/**
 * ONNX TensorProto → veltair Tensor. Raw payloads are viewed in place when aligned (no copy of a
 * 200 MB weight file) and copied once otherwise; half floats widen to float32, 64-bit integers to
 * saturating float64 (see model.ts).
 */
import type onnxProto from 'onnx-proto';
import type { DType, Tensor, TensorData } from './model.js';
import { dtypeByteSize, dtypeFromCode } from './dtype.js';
import { int64FromHalves, longToNumber, uint64FromHalves } from './long.js';
import { quoteForMessage, userError } from '../errors.js';

/** Reads an external-data segment; supplied by decode.ts, which knows the model's folder. */
export type ExternalReader = (tensorName: string, location: string, offset: number, length: number | undefined) => Uint8Array;

const EXTERNAL = 1;

export function elementCount(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

function badTensor(name: string, what: string): Error {
  return userError(
    'BAD_INPUT',
    `tensor ${quoteForMessage(name)}: ${what}`,
    'the model file is malformed; re-export it or check it with onnx.checker.check_model',
  );
}

export function tensorFromProto(p: onnxProto.onnx.ITensorProto, readExternal?: ExternalReader): Tensor {
  const name = p.name ?? '';
  const dtype = dtypeFromCode(p.dataType ?? 0);
  if (dtype === undefined) {
    throw userError(
      'BAD_INPUT',
      `tensor ${quoteForMessage(name)} has unsupported element type code ${p.dataType ?? 0}`,
      'veltair handles float/int/bool/string tensors; complex and 4/8-bit float types are not supported',
    );
  }
  const dims = (p.dims ?? []).map((d) => longToNumber(d));
  if (dims.some((d) => d < 0)) throw badTensor(name, `negative dimension in [${dims.join(', ')}]`);
  const count = elementCount(dims);
  if (p.dataLocation === EXTERNAL) {
    if (readExternal === undefined) throw badTensor(name, 'uses external data but the model was not loaded from a file');
    const entries = new Map((p.externalData ?? []).map((e) => [e.key ?? '', e.value ?? '']));
    const location = entries.get('location');
    if (location === undefined || location === '') throw badTensor(name, 'external data without a "location" key');
    const offset = Number(entries.get('offset') ?? '0');
    const lengthText = entries.get('length');
    const length = lengthText === undefined ? undefined : Number(lengthText);
    if (!Number.isSafeInteger(offset) || offset < 0 || (length !== undefined && (!Number.isSafeInteger(length) || length < 0))) {
      throw badTensor(name, 'external data offset/length are not non-negative integers');
    }
    const bytes = readExternal(name, location, offset, length ?? (dtype === 'string' ? undefined : count * dtypeByteSize(dtype)));
    return { dtype, dims, data: fromRaw(name, dtype, bytes, count) };
  }
  if (p.rawData && p.rawData.length > 0) return { dtype, dims, data: fromRaw(name, dtype, p.rawData, count) };
  return { dtype, dims, data: fromTypedFields(name, dtype, p, count) };
}

function view<T>(bytes: Uint8Array, size: number, make: (b: ArrayBuffer, off: number, n: number) => T): T {
  const n = bytes.byteLength / size;
  if (bytes.byteOffset % size === 0) return make(bytes.buffer as ArrayBuffer, bytes.byteOffset, n);
  // Uint8Array.prototype.slice copies (Buffer#slice would return a view of the same memory).
  const copy = Uint8Array.prototype.slice.call(bytes);
  return make(copy.buffer as ArrayBuffer, 0, n);
}

function fromRaw(name: string, dtype: DType, bytes: Uint8Array, count: number): TensorData {
  if (dtype === 'string') throw badTensor(name, 'string tensors cannot use raw_data');
  const expected = count * dtypeByteSize(dtype);
  if (bytes.byteLength !== expected) {
    throw badTensor(name, `holds ${bytes.byteLength} bytes of data, expected ${expected} (${count} × ${dtype})`);
  }
  switch (dtype) {
    case 'float32':
      return view(bytes, 4, (b, o, n) => new Float32Array(b, o, n));
    case 'float64':
      return view(bytes, 8, (b, o, n) => new Float64Array(b, o, n));
    case 'int32':
      return view(bytes, 4, (b, o, n) => new Int32Array(b, o, n));
    case 'uint32':
      return view(bytes, 4, (b, o, n) => new Uint32Array(b, o, n));
    case 'int16':
      return view(bytes, 2, (b, o, n) => new Int16Array(b, o, n));
    case 'uint16':
      return view(bytes, 2, (b, o, n) => new Uint16Array(b, o, n));
    case 'int8':
      return new Int8Array(bytes.buffer, bytes.byteOffset, count);
    case 'uint8':
    case 'bool':
      return new Uint8Array(bytes.buffer, bytes.byteOffset, count);
    case 'float16':
      return widenHalf(
        view(bytes, 2, (b, o, n) => new Uint16Array(b, o, n)),
        halfToFloat,
      );
    case 'bfloat16':
      return widenHalf(
        view(bytes, 2, (b, o, n) => new Uint16Array(b, o, n)),
        bfloatToFloat,
      );
    case 'int64':
    case 'uint64': {
      const halves = view(bytes, 4, (b, o, n) => new Uint32Array(b, o, n));
      const out = new Float64Array(count);
      const join = dtype === 'int64' ? int64FromHalves : uint64FromHalves;
      for (let i = 0; i < count; i++) out[i] = join(halves[2 * i]!, halves[2 * i + 1]!);
      return out;
    }
  }
}

function fromTypedFields(name: string, dtype: DType, p: onnxProto.onnx.ITensorProto, count: number): TensorData {
  const check = (n: number): void => {
    if (n !== count) throw badTensor(name, `holds ${n} values, expected ${count}`);
  };
  const ints = p.int32Data ?? [];
  switch (dtype) {
    case 'float32':
      check(p.floatData?.length ?? 0);
      return Float32Array.from(p.floatData ?? []);
    case 'float64':
      check(p.doubleData?.length ?? 0);
      return Float64Array.from(p.doubleData ?? []);
    case 'int32':
      check(ints.length);
      return Int32Array.from(ints);
    case 'int16':
      check(ints.length);
      return Int16Array.from(ints);
    case 'uint16':
      check(ints.length);
      return Uint16Array.from(ints);
    case 'int8':
      check(ints.length);
      return Int8Array.from(ints);
    case 'uint8':
      check(ints.length);
      return Uint8Array.from(ints);
    case 'bool':
      check(ints.length);
      return Uint8Array.from(ints, (v) => (v !== 0 ? 1 : 0));
    case 'float16':
      check(ints.length);
      return Float32Array.from(ints, (v) => halfToFloat(v & 0xffff));
    case 'bfloat16':
      check(ints.length);
      return Float32Array.from(ints, (v) => bfloatToFloat(v & 0xffff));
    case 'int64':
      check(p.int64Data?.length ?? 0);
      return Float64Array.from(p.int64Data ?? [], (v) => longToNumber(v));
    case 'uint32':
      check(p.uint64Data?.length ?? 0);
      return Uint32Array.from(p.uint64Data ?? [], (v) => longToNumber(v));
    case 'uint64':
      check(p.uint64Data?.length ?? 0);
      return Float64Array.from(p.uint64Data ?? [], (v) => longToNumber(v));
    case 'string': {
      check(p.stringData?.length ?? 0);
      const dec = new TextDecoder();
      return (p.stringData ?? []).map((b) => dec.decode(b));
    }
  }
}

function widenHalf(bits: Uint16Array, widen: (b: number) => number): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = widen(bits[i]!);
  return out;
}

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const bfloatScratch = new DataView(new ArrayBuffer(4));
export function bfloatToFloat(b: number): number {
  bfloatScratch.setUint32(0, b << 16);
  return bfloatScratch.getFloat32(0);
}
