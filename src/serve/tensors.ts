/**
 * Tensors on the wire (KServe v2 / Triton): JSON `data` (flat or nested, row-major) or the binary
 * tensor data extension (little-endian bytes after the JSON header). Decoding checks every input
 * against the model's declared name, datatype and shape and says what was expected; nothing of a
 * request ever reaches native code unchecked.
 */
import type { DType } from '../onnx/model.js';
import type { TensorInfo } from '../runtime/feeds.js';
import type { HostTensor, TensorData } from '../runtime/host-tensor.js';
import { badRequest } from './errors.js';

/** v2 datatype ↔ the runtime's dtypes (the ones a bundle's inputs and outputs can have). */
const V2_OF: Readonly<Partial<Record<DType, string>>> = {
  float32: 'FP32',
  float64: 'FP64',
  int8: 'INT8',
  int16: 'INT16',
  int32: 'INT32',
  int64: 'INT64',
  uint8: 'UINT8',
  uint16: 'UINT16',
  bool: 'BOOL',
};

export function v2Datatype(dtype: DType): string {
  return V2_OF[dtype] ?? dtype.toUpperCase();
}

const ELEMENT_BYTES: Readonly<Record<string, number>> = {
  FP32: 4,
  FP64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  UINT8: 1,
  UINT16: 2,
  BOOL: 1,
};

const describe = (t: TensorInfo) => `${v2Datatype(t.dtype)} [${t.shape.join(', ')}]`;
const elements = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** One input of a request as the protocol carries it. */
export interface WireInput {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly data?: unknown;
  readonly parameters?: Readonly<Record<string, unknown>>;
}

function allocate(dtype: DType, n: number): TensorData {
  switch (dtype) {
    case 'float32':
      return new Float32Array(n);
    case 'float64':
      return new Float64Array(n);
    case 'int8':
      return new Int8Array(n);
    case 'int16':
      return new Int16Array(n);
    case 'int32':
      return new Int32Array(n);
    case 'int64':
      return new BigInt64Array(n);
    case 'uint8':
    case 'bool':
      return new Uint8Array(n);
    case 'uint16':
      return new Uint16Array(n);
    default:
      throw badRequest(`the model's datatype ${dtype} cannot be sent over the protocol`);
  }
}

/** Row-major flattening of nested arrays, refusing ragged ones (depth-first, iterative). */
function flatten(data: unknown, where: string): unknown[] {
  if (!Array.isArray(data)) throw badRequest(`${where}: "data" must be an array`);
  if (!data.some(Array.isArray)) return data;
  const out: unknown[] = [];
  const stack: unknown[][] = [data];
  const index: number[] = [0];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const i = index[index.length - 1]!;
    if (i >= top.length) {
      stack.pop();
      index.pop();
      continue;
    }
    index[index.length - 1] = i + 1;
    const v = top[i];
    if (Array.isArray(v)) {
      if (stack.length > 32) throw badRequest(`${where}: "data" is nested deeper than 32 levels`);
      stack.push(v);
      index.push(0);
    } else {
      out.push(v);
    }
  }
  return out;
}

function fill(target: TensorData, values: readonly unknown[], dtype: DType, where: string): void {
  const bad = (i: number, why: string) => badRequest(`${where}: element ${i} (${JSON.stringify(values[i])?.slice(0, 20)}) ${why}`);
  if (target instanceof BigInt64Array) {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw bad(i, 'is not an integer within ±2^53');
      target[i] = BigInt(v);
    }
    return;
  }
  const integer = dtype !== 'float32' && dtype !== 'float64';
  for (let i = 0; i < values.length; i++) {
    let v = values[i];
    if (dtype === 'bool' && typeof v === 'boolean') v = v ? 1 : 0;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(i, 'is not a finite number');
    if (integer && !Number.isInteger(v)) throw bad(i, `is not an integer (${v2Datatype(dtype)})`);
    (target as Float32Array)[i] = v;
  }
}

/**
 * The feed for `expected` from the request input `input` (its binary bytes, when it used the
 * binary extension). Every mismatch is a 400 naming the input and what the model expects.
 */
export function decodeInput(input: WireInput, expected: TensorInfo, binary?: Uint8Array): HostTensor {
  const where = `input ${JSON.stringify(expected.name)}`;
  const want = v2Datatype(expected.dtype);
  if (input.datatype !== want)
    throw badRequest(`${where} is ${String(input.datatype).slice(0, 16)}; the model expects ${describe(expected)}`);
  const shapeOk = input.shape.length === expected.shape.length && input.shape.every((d, i) => d === expected.shape[i]);
  if (!shapeOk) throw badRequest(`${where} has shape [${input.shape.join(', ')}]; the model expects ${describe(expected)}`);
  const n = elements(expected.shape);
  const data = allocate(expected.dtype, n);
  if (binary !== undefined) {
    const bytes = n * ELEMENT_BYTES[want]!;
    if (binary.byteLength !== bytes)
      throw badRequest(`${where} has ${binary.byteLength} binary bytes; ${describe(expected)} is ${bytes} bytes`);
    new Uint8Array(data.buffer, data.byteOffset, bytes).set(binary);
    return { dtype: expected.dtype, shape: expected.shape, data };
  }
  if (input.data === undefined) throw badRequest(`${where} has neither "data" nor a binary_data_size parameter`);
  const values = flatten(input.data, where);
  if (values.length !== n) throw badRequest(`${where} has ${values.length} elements; ${describe(expected)} has ${n}`);
  fill(data, values, expected.dtype, where);
  return { dtype: expected.dtype, shape: expected.shape, data };
}

/** One response output: JSON data, or (binary) its bytes and size for the body's tail. */
export interface WireOutput {
  readonly json: { name: string; datatype: string; shape: readonly number[]; data?: unknown[]; parameters?: Record<string, unknown> };
  readonly binary?: Uint8Array;
}

export function encodeOutput(name: string, t: HostTensor, binary: boolean): WireOutput {
  const head = { name, datatype: v2Datatype(t.dtype), shape: [...t.shape] };
  if (binary) {
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    return { json: { ...head, parameters: { binary_data_size: bytes.byteLength } }, binary: bytes };
  }
  const data =
    t.data instanceof BigInt64Array
      ? Array.from(t.data, (v) => Number(v))
      : t.dtype === 'bool'
        ? Array.from(t.data as Uint8Array, (v) => v !== 0)
        : Array.from(t.data as ArrayLike<number>);
  return { json: { ...head, data } };
}
