/**
 * Bytes → OnnxModel. The only file that touches protobuf types for reading: everything later reads
 * plain data (model.ts). Errors name the file and say what to do.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import onnxProto from 'onnx-proto';
import type { Dim, OnnxGraph, OnnxModel, OnnxNode, Tensor, ValueInfo } from './model.js';
import { dtypeFromCode } from './dtype.js';
import { longToNumber } from './long.js';
import { tensorFromProto, type ExternalReader } from './tensor.js';
import { attributeFromProto } from './attributes.js';
import { externalDataReader } from './external.js';
import { isVeltairError, quoteForMessage, userError } from '../errors.js';

const { onnx } = onnxProto;

const NOT_ONNX_HINT = 'pass an ONNX model file (.onnx) as exported by torch.onnx.export, tf2onnx or onnx.save_model';

/** Read a model file, mapping the ways it can fail to user errors that name it. */
export function readModelBytes(file: string): Uint8Array {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw userError(
        'FILE_NOT_FOUND',
        `model file ${quoteForMessage(file, 200)} does not exist`,
        'check the path; it is resolved against the current directory',
      );
    }
    throw userError(
      'FILE_UNREADABLE',
      `cannot read model file ${quoteForMessage(file, 200)}: ${code ?? String(e)}`,
      'check the path and its permissions',
    );
  }
  if (!stat.isFile()) {
    const what = stat.isDirectory() ? 'a directory' : 'not a regular file';
    throw userError('FILE_UNREADABLE', `model path ${quoteForMessage(file, 200)} is ${what}`, 'pass the path of the .onnx file itself');
  }
  try {
    return fs.readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw userError(
      'FILE_UNREADABLE',
      `cannot read model file ${quoteForMessage(file, 200)}: ${code ?? String(e)}`,
      'check the file permissions',
    );
  }
}

function notOnnx(file: string, why: string): Error {
  return userError('NOT_ONNX', `${quoteForMessage(file, 200)} is not an ONNX model: ${why}`, NOT_ONNX_HINT);
}

/**
 * Decode ONNX bytes. `file` names the model in messages and anchors external data; pass
 * undefined for in-memory bytes (external data is then refused).
 */
export function decodeModel(bytes: Uint8Array, file: string | undefined): OnnxModel {
  const label = file ?? '<in-memory model>';
  if (bytes.byteLength === 0) throw notOnnx(label, 'the file is empty');
  let proto: onnxProto.onnx.ModelProto;
  try {
    proto = onnx.ModelProto.decode(bytes);
  } catch (e) {
    throw notOnnx(label, `protobuf decoding failed (${e instanceof Error ? e.message : String(e)}); the file is truncated or not ONNX`);
  }
  if (!proto.graph) throw notOnnx(label, 'it has no graph');
  if (!proto.opsetImport || proto.opsetImport.length === 0) throw notOnnx(label, 'it declares no operator set (opset_import)');
  if (!proto.graph.node || proto.graph.node.length === 0) throw notOnnx(label, 'its graph has no nodes');
  const readExternal = file === undefined ? undefined : externalDataReader(file);
  let graph: OnnxGraph;
  try {
    graph = decodeGraph(proto.graph, readExternal);
  } catch (e) {
    if (isVeltairError(e)) throw e;
    throw notOnnx(label, `its graph could not be read (${e instanceof Error ? e.message : String(e)})`);
  }
  const opsetImports = new Map<string, number>();
  for (const o of proto.opsetImport) opsetImports.set(normalDomain(o.domain ?? ''), longToNumber(o.version));
  return {
    path: label,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    irVersion: longToNumber(proto.irVersion),
    producer: [proto.producerName ?? '', proto.producerVersion ?? ''].filter((s) => s !== '').join(' '),
    opsetImports,
    graph,
  };
}

function normalDomain(domain: string): string {
  return domain === 'ai.onnx' ? '' : domain;
}

function decodeGraph(g: onnxProto.onnx.IGraphProto, readExternal: ExternalReader | undefined): OnnxGraph {
  const initializers = new Map<string, Tensor>();
  for (const t of g.initializer ?? []) initializers.set(t.name ?? '', tensorFromProto(t, readExternal));
  const sub = (s: onnxProto.onnx.IGraphProto): OnnxGraph => decodeGraph(s, readExternal);
  const nodes: OnnxNode[] = (g.node ?? []).map((n) => ({
    name: n.name ?? '',
    opType: n.opType ?? '',
    domain: normalDomain(n.domain ?? ''),
    inputs: [...(n.input ?? [])],
    outputs: [...(n.output ?? [])],
    attributes: new Map((n.attribute ?? []).map((a) => [a.name ?? '', attributeFromProto(a, readExternal, sub)])),
  }));
  const valueInfo = new Map<string, ValueInfo>();
  for (const v of g.valueInfo ?? []) {
    const info = valueInfoFromProto(v);
    if (info !== undefined) valueInfo.set(info.name, info);
  }
  const inputs = (g.input ?? []).filter((v) => !initializers.has(v.name ?? ''));
  return {
    name: g.name ?? '',
    nodes,
    initializers,
    inputs: inputs.map((v) => requireTensorInfo(v, 'input')),
    outputs: (g.output ?? []).map((v) => requireTensorInfo(v, 'output')),
    valueInfo,
  };
}

function requireTensorInfo(v: onnxProto.onnx.IValueInfoProto, role: string): ValueInfo {
  const info = valueInfoFromProto(v);
  if (info !== undefined) return info;
  throw userError(
    'BAD_INPUT',
    `graph ${role} ${quoteForMessage(v.name ?? '')} is not a tensor of a supported element type`,
    'veltair compiles tensor graphs; sequence, map, optional and complex-valued inputs/outputs are not supported',
  );
}

function valueInfoFromProto(v: onnxProto.onnx.IValueInfoProto): ValueInfo | undefined {
  const tt = v.type?.tensorType;
  if (!tt) return undefined;
  const dtype = dtypeFromCode(tt.elemType ?? 0);
  if (dtype === undefined) return undefined;
  const shape = tt.shape ? (tt.shape.dim ?? []).map(dimFromProto) : undefined;
  return { name: v.name ?? '', dtype, shape };
}

function dimFromProto(d: onnxProto.onnx.TensorShapeProto.IDimension, index: number): Dim {
  if (d.dimValue !== undefined && d.dimValue !== null) {
    const n = longToNumber(d.dimValue);
    if (n >= 0 && (d.dimParam ?? '') === '') return n;
  }
  const param = d.dimParam ?? '';
  return param !== '' ? param : `?${index}`;
}
