/**
 * The mutable working copy of an InferredModel that ir/ rewrites before it emits layers: alias
 * removal, pattern recognition and Gemm desugaring all replace nodes here, so the lowering itself
 * only ever sees one shape of graph. Nodes stay OnnxNode-shaped; the ones veltair synthesises use
 * the domain VELTAIR_DOMAIN.
 */
import type { AttributeValue, InferredModel, OnnxNode, Tensor, ValueType } from '../onnx/model.js';

export const VELTAIR_DOMAIN = 'veltair';

export interface WorkGraph {
  /** Topologically ordered. */
  nodes: OnnxNode[];
  /** The model's constants plus tensors ir/ derives (folded weights, recognised γ/β). */
  readonly constants: Map<string, Tensor>;
  readonly types: Map<string, ValueType>;
  readonly graphInputs: ReadonlySet<string>;
  readonly graphOutputs: ReadonlySet<string>;
  /** Every value name in use, so derived names never collide with model-supplied ones. */
  readonly names: Set<string>;
}

export interface GraphIndex {
  readonly producer: ReadonlyMap<string, OnnxNode>;
  /** One entry per input slot: a node reading a value twice appears twice. */
  readonly consumers: ReadonlyMap<string, readonly OnnxNode[]>;
  readonly position: ReadonlyMap<OnnxNode, number>;
}

/** Display name: the ONNX node name, or `${opType}_${index}` when the model left it empty. */
function named(node: OnnxNode, index: number): OnnxNode {
  return node.name !== '' ? node : { ...node, name: `${node.opType}_${index}` };
}

export function workGraphOf(m: InferredModel): WorkGraph {
  const names = new Set<string>([...m.types.keys(), ...m.constants.keys()]);
  for (const n of m.nodes) for (const v of [...n.inputs, ...n.outputs]) if (v !== '') names.add(v);
  return {
    nodes: m.nodes.map(named),
    constants: new Map(m.constants),
    types: new Map(m.types),
    graphInputs: new Set(m.inputs.map((i) => i.name)),
    graphOutputs: new Set(m.outputs.map((o) => o.name)),
    names,
  };
}

export function indexGraph(g: WorkGraph): GraphIndex {
  const producer = new Map<string, OnnxNode>();
  const consumers = new Map<string, OnnxNode[]>();
  const position = new Map<OnnxNode, number>();
  g.nodes.forEach((n, i) => {
    position.set(n, i);
    for (const o of n.outputs) if (o !== '') producer.set(o, n);
    for (const v of n.inputs) {
      if (v === '') continue;
      const list = consumers.get(v);
      if (list === undefined) consumers.set(v, [n]);
      else list.push(n);
    }
  });
  return { producer, consumers, position };
}

export function consumersOf(ix: GraphIndex, v: string): readonly OnnxNode[] {
  return ix.consumers.get(v) ?? [];
}

/**
 * The one node that reads `v`, when `v` is invisible elsewhere: read through exactly one input
 * slot and not a graph output. Only such values may disappear inside a fused layer.
 */
export function soleConsumer(g: WorkGraph, ix: GraphIndex, v: string): OnnxNode | undefined {
  if (g.graphOutputs.has(v)) return undefined;
  const list = consumersOf(ix, v);
  return list.length === 1 ? list[0] : undefined;
}

export function isConstant(g: WorkGraph, v: string): boolean {
  return v !== '' && g.constants.has(v);
}

/** The numeric value of a one-element constant, else undefined. */
export function scalarConstant(g: WorkGraph, v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const t = g.constants.get(v);
  if (t === undefined || t.data.length !== 1 || Array.isArray(t.data)) return undefined;
  return Number(t.data[0]);
}

/** For a two-input node reading `v` once: its other operand. */
export function otherOperand(node: OnnxNode, v: string): string | undefined {
  if (node.inputs.length !== 2) return undefined;
  const [a, b] = node.inputs;
  if (a === v && b !== v) return b;
  if (b === v && a !== v) return a;
  return undefined;
}

export function shapeOf(g: WorkGraph, v: string): readonly number[] {
  const t = g.types.get(v);
  if (t !== undefined) return t.shape;
  const c = g.constants.get(v);
  if (c !== undefined) return c.dims;
  throw new Error(`ir: no static type for value ${JSON.stringify(v)}`);
}

/** A value name derived from `base` that nothing in the model uses. */
export function freshName(g: WorkGraph, base: string, tag: string): string {
  let name = `${base}#${tag}`;
  for (let i = 1; g.names.has(name); i++) name = `${base}#${tag}${i}`;
  g.names.add(name);
  return name;
}

export function addConstant(g: WorkGraph, base: string, tag: string, t: Tensor): string {
  const name = freshName(g, base, tag);
  g.constants.set(name, t);
  return name;
}

export function synthNode(
  name: string,
  opType: string,
  inputs: readonly string[],
  outputs: readonly string[],
  attributes: Readonly<Record<string, AttributeValue>> = {},
  domain = '',
): OnnxNode {
  return { name, opType, domain, inputs, outputs, attributes: new Map(Object.entries(attributes)) };
}

/**
 * Replace `matched` (a connected group whose internal values nobody else reads) by `replacement`,
 * placed where the last of them stood: every input of the group is produced before that point, and
 * every reader of the group's output comes after it.
 */
export function replaceNodes(g: WorkGraph, matched: ReadonlySet<OnnxNode>, replacement: readonly OnnxNode[]): void {
  let last = -1;
  g.nodes.forEach((n, i) => {
    if (matched.has(n)) last = i;
  });
  const out: OnnxNode[] = [];
  g.nodes.forEach((n, i) => {
    if (i === last) out.push(...replacement);
    else if (!matched.has(n)) out.push(n);
  });
  g.nodes = out;
}

/** Rewrite every occurrence of value `from` (as input or output) to `to`. */
export function renameValue(g: WorkGraph, from: string, to: string): void {
  const swap = (vs: readonly string[]): readonly string[] => (vs.includes(from) ? vs.map((v) => (v === from ? to : v)) : vs);
  g.nodes = g.nodes.map((n) => {
    const inputs = swap(n.inputs);
    const outputs = swap(n.outputs);
    return inputs === n.inputs && outputs === n.outputs ? n : { ...n, inputs, outputs };
  });
}

export function float32Tensor(dims: readonly number[], data: ArrayLike<number>): Tensor {
  return { dtype: 'float32', dims: [...dims], data: Float32Array.from(data) };
}

/** A numeric constant's values as float64 (exact for every float32 and int up to 2^53). */
export function numbers(t: Tensor): Float64Array {
  if (Array.isArray(t.data)) throw new Error('ir: string tensor used as a number');
  // The typed-array constructor copies natively; Float64Array.from would iterate element by element.
  return new Float64Array(t.data as Exclude<typeof t.data, string[]>);
}
