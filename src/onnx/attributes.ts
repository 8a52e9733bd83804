/**
 * Node attributes: decoding AttributeProto, and typed getters that name the node and attribute when
 * a model supplies the wrong kind of value.
 */
import type onnxProto from 'onnx-proto';
import type { AttributeValue, OnnxGraph, OnnxNode, Tensor } from './model.js';
import { longToNumber } from './long.js';
import { tensorFromProto, type ExternalReader } from './tensor.js';
import { quoteForMessage, userError } from '../errors.js';

const T = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7, STRINGS: 8 } as const;
const TYPE_NAMES = [
  'UNDEFINED',
  'FLOAT',
  'INT',
  'STRING',
  'TENSOR',
  'GRAPH',
  'FLOATS',
  'INTS',
  'STRINGS',
  'TENSORS',
  'GRAPHS',
  'SPARSE_TENSOR',
  'SPARSE_TENSORS',
  'TYPE_PROTO',
  'TYPE_PROTOS',
];

/** Old exporters leave `type` unset; the populated field tells. */
function attributeType(a: onnxProto.onnx.IAttributeProto): number {
  if (a.type) return a.type;
  if (a.ints && a.ints.length > 0) return T.INTS;
  if (a.floats && a.floats.length > 0) return T.FLOATS;
  if (a.strings && a.strings.length > 0) return T.STRINGS;
  if (a.t) return T.TENSOR;
  if (a.g) return T.GRAPH;
  if (a.s && a.s.length > 0) return T.STRING;
  if (a.i !== undefined && a.i !== null && longToNumber(a.i) !== 0) return T.INT;
  if (a.f !== undefined && a.f !== null && a.f !== 0) return T.FLOAT;
  return T.INT;
}

export function attributeFromProto(
  a: onnxProto.onnx.IAttributeProto,
  readExternal: ExternalReader | undefined,
  decodeGraph: (g: onnxProto.onnx.IGraphProto) => OnnxGraph,
): AttributeValue {
  const dec = new TextDecoder();
  const type = attributeType(a);
  switch (type) {
    case T.FLOAT:
      return { kind: 'float', value: a.f ?? 0 };
    case T.INT:
      return { kind: 'int', value: longToNumber(a.i) };
    case T.STRING:
      return { kind: 'string', value: dec.decode(a.s ?? new Uint8Array()) };
    case T.TENSOR:
      return { kind: 'tensor', value: tensorFromProto(a.t ?? {}, readExternal) };
    case T.GRAPH:
      return { kind: 'graph', value: decodeGraph(a.g ?? {}) };
    case T.FLOATS:
      return { kind: 'floats', value: [...(a.floats ?? [])] };
    case T.INTS:
      return { kind: 'ints', value: (a.ints ?? []).map((v) => longToNumber(v)) };
    case T.STRINGS:
      return { kind: 'strings', value: (a.strings ?? []).map((s) => dec.decode(s)) };
    default:
      return { kind: 'other', type: TYPE_NAMES[type] ?? `type ${type}` };
  }
}

export function nodeLabel(node: OnnxNode): string {
  if (node.name !== '') return `node ${quoteForMessage(node.name)} (${node.opType})`;
  return `${node.opType} node producing ${quoteForMessage(node.outputs[0] ?? '')}`;
}

function wrongKind(node: OnnxNode, name: string, want: string, got: AttributeValue): Error {
  return userError(
    'BAD_ATTRIBUTE',
    `${nodeLabel(node)}: attribute "${name}" should be ${want}, found ${got.kind}`,
    'the model file is malformed; re-export it or check it with onnx.checker.check_model',
  );
}

export function hasAttr(node: OnnxNode, name: string): boolean {
  return node.attributes.has(name);
}

export function attrInt(node: OnnxNode, name: string, fallback: number): number {
  const a = node.attributes.get(name);
  if (a === undefined) return fallback;
  if (a.kind === 'int') return a.value;
  throw wrongKind(node, name, 'an int', a);
}

export function attrFloat(node: OnnxNode, name: string, fallback: number): number {
  const a = node.attributes.get(name);
  if (a === undefined) return fallback;
  if (a.kind === 'float') return a.value;
  if (a.kind === 'int') return a.value;
  throw wrongKind(node, name, 'a float', a);
}

export function attrString(node: OnnxNode, name: string, fallback: string): string {
  const a = node.attributes.get(name);
  if (a === undefined) return fallback;
  if (a.kind === 'string') return a.value;
  throw wrongKind(node, name, 'a string', a);
}

export function attrInts(node: OnnxNode, name: string): readonly number[] | undefined {
  const a = node.attributes.get(name);
  if (a === undefined) return undefined;
  if (a.kind === 'ints') return a.value;
  if (a.kind === 'int') return [a.value];
  throw wrongKind(node, name, 'a list of ints', a);
}

export function attrFloats(node: OnnxNode, name: string): readonly number[] | undefined {
  const a = node.attributes.get(name);
  if (a === undefined) return undefined;
  if (a.kind === 'floats') return a.value;
  if (a.kind === 'ints') return a.value;
  throw wrongKind(node, name, 'a list of floats', a);
}

export function attrTensor(node: OnnxNode, name: string): Tensor | undefined {
  const a = node.attributes.get(name);
  if (a === undefined) return undefined;
  if (a.kind === 'tensor') return a.value;
  throw wrongKind(node, name, 'a tensor', a);
}
