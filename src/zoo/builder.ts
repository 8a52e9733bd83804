/**
 * The zoo's graph builder: collects nodes, initializers and graph inputs/outputs into an encode.ts
 * ModelSpec, and tracks every value's static shape as it goes so model files can wire layers
 * without restating channel counts, and can declare exact output shapes. Only shape arithmetic
 * lives here; what a layer *is* (conv + BN + activation…) lives in layers.ts / transformer.ts.
 */
import type { DType, Tensor } from '../onnx/model.js';
import type { AttrInput, ModelSpec, NodeSpec, ValueSpec } from '../onnx/encode.js';
import { internalError } from '../errors.js';
import { type Rng, seededRng } from '../random.js';
import { heNormal, normalArray } from './rng.js';

/** The opset every zoo model declares: what PyTorch's exporter targets by default for these models. */
export const ZOO_OPSET = 13;
/** IR version paired with opset 13 in ONNX's versioning table. */
export const ZOO_IR_VERSION = 7;

/** A value in the graph under construction, with its static type. */
export interface Value {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export type Input = Value | '';

export class GraphBuilder {
  readonly rng: Rng;
  private readonly nodes: NodeSpec[] = [];
  private readonly initializers = new Map<string, Tensor>();
  private readonly inputs: ValueSpec[] = [];
  private readonly outputs: ValueSpec[] = [];
  private readonly taken = new Set<string>();
  private readonly shared = new Map<string, Value>();

  constructor(seed: number) {
    this.rng = seededRng(seed);
  }

  /** Node, value and initializer names share one namespace here so a clash is a bug caught early. */
  private claim(name: string): void {
    if (this.taken.has(name)) throw internalError(`zoo builder: name ${name} used twice`);
    this.taken.add(name);
  }

  input(name: string, shape: readonly number[], dtype: DType = 'float32'): Value {
    this.claim(name);
    this.inputs.push({ name, dtype, shape });
    return { name, dtype, shape };
  }

  /**
   * Declares a graph output. `as` renames the value (e.g. the classifier's `fc` → `logits`) by
   * renaming its producing node's output; only allowed while nothing consumes it yet.
   */
  output(v: Value, as?: string): Value {
    let name = v.name;
    if (as !== undefined && as !== v.name) {
      const producer = this.nodes.findIndex((n) => n.outputs.includes(v.name));
      const consumed = this.nodes.some((n) => n.inputs.includes(v.name));
      if (producer < 0 || consumed) throw internalError(`zoo builder: cannot rename ${v.name} to ${as}`);
      this.claim(as);
      const node = this.nodes[producer] as NodeSpec;
      this.nodes[producer] = { ...node, outputs: node.outputs.map((o) => (o === v.name ? as : o)) };
      name = as;
    }
    this.outputs.push({ name, dtype: v.dtype, shape: v.shape });
    return { ...v, name };
  }

  initializer(name: string, tensor: Tensor): Value {
    this.claim(name);
    this.initializers.set(name, tensor);
    return { name, dtype: tensor.dtype, shape: tensor.dims };
  }

  /** A constant reused by every node that needs it (e.g. ReLU6's 0 and 6), created on first use. */
  sharedConstant(name: string, tensor: Tensor): Value {
    const existing = this.shared.get(name);
    if (existing !== undefined) return existing;
    const v = this.initializer(name, tensor);
    this.shared.set(name, v);
    return v;
  }

  scalar(name: string, value: number): Value {
    return this.sharedConstant(name, { dtype: 'float32', dims: [], data: new Float32Array([value]) });
  }

  int64s(name: string, values: readonly number[]): Value {
    return this.initializer(name, { dtype: 'int64', dims: [values.length], data: new Float64Array(values) });
  }

  floats(name: string, dims: readonly number[], data: Float32Array): Value {
    if (data.length !== elementCount(dims)) throw internalError(`zoo builder: ${name} has ${data.length} values for ${dims.join('x')}`);
    return this.initializer(name, { dtype: 'float32', dims, data });
  }

  heWeight(name: string, dims: readonly number[], fanIn: number): Value {
    return this.floats(name, dims, heNormal(this.rng, elementCount(dims), fanIn));
  }

  normalWeight(name: string, dims: readonly number[], std: number, mean = 0): Value {
    return this.floats(name, dims, normalArray(this.rng, elementCount(dims), std, mean));
  }

  /** Adds one node whose single output is named after the node and has the given static type. */
  node(
    op: string,
    name: string,
    inputs: readonly Input[],
    shape: readonly number[],
    attrs?: Readonly<Record<string, AttrInput>>,
    dtype?: DType,
  ): Value {
    this.claim(name);
    const firstTyped = inputs.find((i): i is Value => i !== '');
    const outDtype = dtype ?? firstTyped?.dtype ?? 'float32';
    this.nodes.push({
      op,
      name,
      inputs: inputs.map((i) => (i === '' ? '' : i.name)),
      outputs: [name],
      ...(attrs === undefined ? {} : { attrs }),
    });
    return { name, dtype: outDtype, shape };
  }

  build(graphName: string): ModelSpec {
    if (this.outputs.length === 0) throw internalError(`zoo builder: ${graphName} declares no outputs`);
    return {
      graphName,
      producer: 'veltair-zoo',
      opset: ZOO_OPSET,
      irVersion: ZOO_IR_VERSION,
      inputs: [...this.inputs],
      outputs: [...this.outputs],
      initializers: new Map(this.initializers),
      nodes: [...this.nodes],
    };
  }
}

export function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, d) => a * d, 1);
}

/** Numpy-style broadcasting, as ONNX's multidirectional broadcasting defines it. */
export function broadcastShapes(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw internalError(`zoo builder: cannot broadcast [${a.join(',')}] with [${b.join(',')}]`);
    out.push(da === 1 ? db : da);
  }
  return out;
}

function normAxis(axis: number, rank: number): number {
  return axis < 0 ? axis + rank : axis;
}

// --- generic tensor ops (shape-aware wrappers over b.node) ---

export function unary(b: GraphBuilder, op: string, name: string, x: Value, attrs?: Readonly<Record<string, AttrInput>>): Value {
  return b.node(op, name, [x], x.shape, attrs);
}

export function binary(b: GraphBuilder, op: 'Add' | 'Sub' | 'Mul' | 'Div' | 'Pow', name: string, x: Value, y: Value): Value {
  return b.node(op, name, [x, y], broadcastShapes(x.shape, y.shape));
}

export function concat(b: GraphBuilder, name: string, xs: readonly Value[], axis: number): Value {
  const first = xs[0];
  if (first === undefined) throw internalError(`zoo builder: ${name} concatenates nothing`);
  const ax = normAxis(axis, first.shape.length);
  const shape = [...first.shape];
  shape[ax] = xs.reduce((sum, v) => sum + (v.shape[ax] ?? 0), 0);
  return b.node('Concat', name, xs, shape, { axis });
}

/** Reshape with a constant target, resolving 0 (copy) and -1 (infer) exactly as ONNX does. */
export function reshape(b: GraphBuilder, name: string, x: Value, target: readonly number[]): Value {
  const shape = target.map((d, i) => (d === 0 ? (x.shape[i] ?? 0) : d));
  const known = shape.filter((d) => d !== -1).reduce((a, d) => a * d, 1);
  const resolved = shape.map((d) => (d === -1 ? elementCount(x.shape) / known : d));
  if (elementCount(resolved) !== elementCount(x.shape) || !resolved.every(Number.isInteger)) {
    throw internalError(`zoo builder: ${name} cannot reshape [${x.shape.join(',')}] to [${target.join(',')}]`);
  }
  const shapeInput = b.int64s(`${name}.shape`, target);
  return b.node('Reshape', name, [x, shapeInput], resolved);
}

export function transpose(b: GraphBuilder, name: string, x: Value, perm: readonly number[]): Value {
  return b.node(
    'Transpose',
    name,
    [x],
    perm.map((p) => x.shape[p] ?? 0),
    { perm },
  );
}

export function flatten(b: GraphBuilder, name: string, x: Value, axis = 1): Value {
  const outer = elementCount(x.shape.slice(0, axis));
  return b.node('Flatten', name, [x], [outer, elementCount(x.shape.slice(axis))], { axis });
}

/** numpy.matmul shapes: batch dims broadcast, the last two multiply. */
export function matmul(b: GraphBuilder, name: string, x: Value, y: Value): Value {
  const [m, k] = x.shape.slice(-2);
  const [k2, n] = y.shape.slice(-2);
  if (m === undefined || k === undefined || n === undefined || k !== k2) {
    throw internalError(`zoo builder: ${name} multiplies [${x.shape.join(',')}] by [${y.shape.join(',')}]`);
  }
  const batch = broadcastShapes(x.shape.slice(0, -2), y.shape.slice(0, -2));
  return b.node('MatMul', name, [x, y], [...batch, m, n]);
}

/** ReduceMean at opset 13: axes is an attribute (it became an input only at opset 18). */
export function reduceMean(b: GraphBuilder, name: string, x: Value, axes: readonly number[], keepdims = true): Value {
  const rank = x.shape.length;
  const reduced = new Set(axes.map((a) => normAxis(a, rank)));
  const shape = x.shape.flatMap((d, i) => (reduced.has(i) ? (keepdims ? [1] : []) : [d]));
  return b.node('ReduceMean', name, [x], shape, { axes, keepdims: keepdims ? 1 : 0 });
}

/** Unsqueeze at opset 13: axes is an int64 input. */
export function unsqueeze(b: GraphBuilder, name: string, x: Value, axes: readonly number[]): Value {
  const rank = x.shape.length + axes.length;
  const inserted = new Set(axes.map((a) => normAxis(a, rank)));
  const rest = [...x.shape];
  const shape = Array.from({ length: rank }, (_, i) => (inserted.has(i) ? 1 : (rest.shift() ?? 0)));
  return b.node('Unsqueeze', name, [x, b.int64s(`${name}.axes`, axes)], shape);
}
