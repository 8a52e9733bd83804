/**
 * Writing ONNX: a small graph builder over onnx-proto, used by the model zoo and by tests that need
 * real ONNX files (good and deliberately bad). Initializers are written as little-endian raw_data.
 */
import onnxProto from 'onnx-proto';
import type { DType, Dim, Tensor } from './model.js';
import { dtypeCode } from './dtype.js';

const { onnx } = onnxProto;

export type AttrInput =
  number | string | readonly number[] | readonly string[] | Tensor | { readonly floats: readonly number[] } | { readonly float: number };

export interface NodeSpec {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name?: string;
  readonly domain?: string;
  readonly attrs?: Readonly<Record<string, AttrInput>>;
}

export interface ValueSpec {
  readonly name: string;
  readonly dtype: DType;
  /** undefined: no shape recorded; a string dim is symbolic. */
  readonly shape?: readonly Dim[];
}

export interface ModelSpec {
  readonly graphName?: string;
  readonly producer?: string;
  readonly opset?: number;
  readonly irVersion?: number;
  readonly inputs: readonly ValueSpec[];
  readonly outputs: readonly ValueSpec[];
  readonly initializers: ReadonlyMap<string, Tensor> | readonly (readonly [string, Tensor])[];
  readonly nodes: readonly NodeSpec[];
  readonly valueInfo?: readonly ValueSpec[];
  /** Operator sets of other domains (com.microsoft for ONNX Runtime's contrib operators). */
  readonly extraOpsets?: readonly { readonly domain: string; readonly version: number }[];
}

function rawBytes(t: Tensor): Uint8Array {
  const d = t.data;
  if (Array.isArray(d)) throw new Error('string tensors are written with stringData');
  if (t.dtype === 'int64' || t.dtype === 'uint64') {
    const out = new BigInt64Array(d.length);
    for (let i = 0; i < d.length; i++) out[i] = BigInt(Math.trunc(d[i] as number));
    return new Uint8Array(out.buffer);
  }
  if (t.dtype === 'float16' || t.dtype === 'bfloat16') throw new Error('writing half-precision tensors is not supported');
  const view = d as Exclude<typeof d, string[]>;
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

export function tensorProto(name: string, t: Tensor): onnxProto.onnx.ITensorProto {
  const base = { name, dims: [...t.dims], dataType: dtypeCode(t.dtype) };
  if (t.dtype === 'string') {
    return { ...base, stringData: (t.data as string[]).map((s) => new TextEncoder().encode(s)) };
  }
  return { ...base, rawData: rawBytes(t) };
}

function attribute(name: string, v: AttrInput): onnxProto.onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof v === 'number') {
    return Number.isInteger(v) ? { name, type: T.INT, i: v } : { name, type: T.FLOAT, f: v };
  }
  if (typeof v === 'string') return { name, type: T.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) {
    if (v.length > 0 && typeof v[0] === 'string') {
      return { name, type: T.STRINGS, strings: (v as string[]).map((s) => new TextEncoder().encode(s)) };
    }
    const nums = v as number[];
    return nums.every(Number.isInteger) ? { name, type: T.INTS, ints: nums } : { name, type: T.FLOATS, floats: nums };
  }
  if ('floats' in v) return { name, type: T.FLOATS, floats: [...v.floats] };
  if ('float' in v) return { name, type: T.FLOAT, f: v.float };
  return { name, type: T.TENSOR, t: tensorProto('', v as Tensor) };
}

function valueInfo(v: ValueSpec): onnxProto.onnx.IValueInfoProto {
  const tensorType: onnxProto.onnx.TypeProto.ITensor = { elemType: dtypeCode(v.dtype) };
  if (v.shape !== undefined) {
    tensorType.shape = { dim: v.shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) };
  }
  return { name: v.name, type: { tensorType } };
}

export function encodeModel(spec: ModelSpec): Uint8Array {
  const inits =
    spec.initializers instanceof Map ? [...spec.initializers] : [...(spec.initializers as readonly (readonly [string, Tensor])[])];
  const graph: onnxProto.onnx.IGraphProto = {
    name: spec.graphName ?? 'main',
    node: spec.nodes.map((n, i) => ({
      name: n.name ?? `${n.op}_${i}`,
      opType: n.op,
      domain: n.domain ?? '',
      input: [...n.inputs],
      output: [...n.outputs],
      attribute: Object.entries(n.attrs ?? {}).map(([k, v]) => attribute(k, v)),
    })),
    initializer: inits.map(([name, t]) => tensorProto(name, t)),
    input: spec.inputs.map(valueInfo),
    output: spec.outputs.map(valueInfo),
    valueInfo: (spec.valueInfo ?? []).map(valueInfo),
  };
  const model: onnxProto.onnx.IModelProto = {
    irVersion: spec.irVersion ?? 8,
    producerName: spec.producer ?? 'veltair',
    producerVersion: '0.1.0',
    opsetImport: [{ domain: '', version: spec.opset ?? 17 }, ...(spec.extraOpsets ?? [])],
    graph,
  };
  return onnx.ModelProto.encode(model).finish();
}
