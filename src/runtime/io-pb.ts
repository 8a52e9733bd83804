/**
 * ONNX TensorProto files (.pb, as ONNX's own test data and onnx.numpy_helper write them) →
 * HostTensor. The front end's decoder does the work (raw or typed fields, dims, sizes); int64 is
 * re-read exactly here, because the front end keeps int64 as float64 (exact only within ±2^53) and a
 * model input deserves its exact bits.
 */
import onnxProto from 'onnx-proto';
import { isVeltairError, userError, quoteForMessage } from '../errors.js';
import { tensorFromProto } from '../onnx/tensor.js';
import type { LongLike } from '../onnx/long.js';
import { arrayTypeFor, elementsOf, type HostTensor, type TensorData } from './host-tensor.js';

const { onnx } = onnxProto;

const badPb = (file: string, what: string) =>
  userError(
    'BAD_INPUT',
    `${file}: ${what}`,
    'pass an ONNX TensorProto file (e.g. onnx.numpy_helper.from_array(a).SerializeToString()) or a .npy file',
  );

function exactInt64(p: onnxProto.onnx.TensorProto, count: number): BigInt64Array {
  if (p.rawData && p.rawData.length > 0) {
    const copy = Uint8Array.prototype.slice.call(p.rawData) as Uint8Array;
    return new BigInt64Array(copy.buffer as ArrayBuffer, 0, count);
  }
  return BigInt64Array.from(p.int64Data ?? [], (v: number | LongLike) =>
    typeof v === 'number' ? BigInt(v) : BigInt.asIntN(64, (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0)),
  );
}

/** Decode one TensorProto file; `file` names it in messages. Also returns the tensor's own name. */
export function decodePb(bytes: Uint8Array, file: string): HostTensor & { readonly name: string } {
  let p: onnxProto.onnx.TensorProto;
  try {
    p = onnx.TensorProto.decode(bytes);
  } catch (e) {
    throw badPb(file, `is not an ONNX TensorProto (${(e as Error).message.split('\n')[0]})`);
  }
  let t;
  try {
    t = tensorFromProto(p);
  } catch (e) {
    if (isVeltairError(e)) throw badPb(file, e.message);
    throw e;
  }
  const name = p.name ?? '';
  const count = elementsOf(t.dims);
  if (t.dtype === 'int64') {
    // tensorFromProto has already checked the payload's size against dims.
    return { name, dtype: 'int64', shape: [...t.dims], data: exactInt64(p, count) };
  }
  // float16 / bfloat16 arrive widened to float32; the session then checks them against the model.
  const dtype = t.dtype === 'float16' || t.dtype === 'bfloat16' ? 'float32' : t.dtype;
  if (arrayTypeFor(dtype) === undefined || Array.isArray(t.data)) {
    throw badPb(file, `holds ${t.dtype} tensor ${quoteForMessage(name)}, which veltair cannot feed to a model`);
  }
  return { name, dtype, shape: [...t.dims], data: t.data as TensorData };
}
