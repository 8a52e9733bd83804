/**
 * Test support for the zoo tests, deliberately independent of src/zoo: its own shape propagation
 * over the written ModelSpec (from node attributes and initializer dims only, never from the
 * builder's tracked shapes), an analytic conv/dense MAC counter, and an ONNX Runtime check.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { AttrInput, ModelSpec, NodeSpec } from '../src/onnx/encode.js';
import type { Tensor } from '../src/onnx/model.js';
import { mulberry32 } from '../src/random.js';

type Shape = readonly number[];

function initializerMap(spec: ModelSpec): ReadonlyMap<string, Tensor> {
  return spec.initializers instanceof Map ? spec.initializers : new Map(spec.initializers as readonly (readonly [string, Tensor])[]);
}

function ints(node: NodeSpec, name: string, fallback: readonly number[]): readonly number[] {
  const v = node.attrs?.[name];
  return v === undefined ? fallback : (v as readonly number[]);
}

function int(node: NodeSpec, name: string, fallback: number): number {
  const v: AttrInput | undefined = node.attrs?.[name];
  return v === undefined ? fallback : (v as number);
}

function str(node: NodeSpec, name: string): string | undefined {
  const v = node.attrs?.[name];
  return typeof v === 'string' ? v : undefined;
}

function broadcast(a: Shape, b: Shape): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, i) => {
    const x = a[a.length - rank + i] ?? 1;
    const y = b[b.length - rank + i] ?? 1;
    assert.ok(x === y || x === 1 || y === 1, `cannot broadcast [${a}] and [${b}]`);
    return Math.max(x, y);
  });
}

/** ONNX's sliding-window output size for Conv/MaxPool, including auto_pad and ceil_mode. */
function windowShape(node: NodeSpec, x: Shape, kernel: readonly number[], channels: number): number[] {
  const spatial = x.slice(2);
  const strides = ints(
    node,
    'strides',
    spatial.map(() => 1),
  );
  const dilations = ints(
    node,
    'dilations',
    spatial.map(() => 1),
  );
  const autoPad = str(node, 'auto_pad') ?? 'NOTSET';
  const pads = ints(
    node,
    'pads',
    [...spatial, ...spatial].map(() => 0),
  );
  const ceil = int(node, 'ceil_mode', 0) === 1;
  const out = spatial.map((size, i) => {
    const s = strides[i]!;
    if (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER') return Math.ceil(size / s);
    const effective = dilations[i]! * (kernel[i]! - 1) + 1;
    const span = size + pads[i]! + pads[i + spatial.length]! - effective;
    return (ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  });
  return [x[0]!, channels, ...out];
}

function inferNode(node: NodeSpec, shapes: Map<string, Shape>, inits: ReadonlyMap<string, Tensor>): Shape {
  const ins = node.inputs.map((n) => shapes.get(n));
  const [a, b] = ins;
  const constInts = (name: string | undefined): number[] => [...(inits.get(name ?? '')?.data as Float64Array)];
  switch (node.op) {
    case 'Conv':
      return windowShape(node, a!, b!.slice(2), b![0]!);
    case 'MaxPool':
      return windowShape(node, a!, ints(node, 'kernel_shape', []), a![1]!);
    case 'GlobalAveragePool':
      return [a![0]!, a![1]!, ...a!.slice(2).map(() => 1)];
    case 'BatchNormalization':
    case 'Relu':
    case 'Clip':
    case 'LeakyRelu':
    case 'Sigmoid':
    case 'Erf':
    case 'Sqrt':
    case 'Softmax':
    case 'Cast':
      return a!;
    case 'Add':
    case 'Sub':
    case 'Mul':
    case 'Div':
    case 'Pow':
      return broadcast(a!, b!);
    case 'Flatten': {
      const axis = int(node, 'axis', 1);
      return [a!.slice(0, axis).reduce((p, d) => p * d, 1), a!.slice(axis).reduce((p, d) => p * d, 1)];
    }
    case 'Gemm': {
      const m = int(node, 'transA', 0) ? a![1]! : a![0]!;
      const n = int(node, 'transB', 0) ? b![0]! : b![1]!;
      return [m, n];
    }
    case 'MatMul':
      return [...broadcast(a!.slice(0, -2), b!.slice(0, -2)), a![a!.length - 2]!, b![b!.length - 1]!];
    case 'Concat': {
      const axis = (int(node, 'axis', 0) + a!.length) % a!.length;
      return a!.map((d, i) => (i === axis ? ins.reduce((s, v) => s + v![i]!, 0) : d));
    }
    case 'Reshape': {
      const target = constInts(node.inputs[1]).map((d, i) => (d === 0 ? a![i]! : d));
      const total = a!.reduce((p, d) => p * d, 1);
      const known = target.filter((d) => d !== -1).reduce((p, d) => p * d, 1);
      return target.map((d) => (d === -1 ? total / known : d));
    }
    case 'Transpose':
      return ints(node, 'perm', []).map((p) => a![p]!);
    case 'ReduceMean': {
      const axes = ints(node, 'axes', []).map((x) => (x + a!.length) % a!.length);
      const keep = int(node, 'keepdims', 1) === 1;
      return a!.flatMap((d, i) => (axes.includes(i) ? (keep ? [1] : []) : [d]));
    }
    case 'Gather':
      return [...b!, ...a!.slice(1)];
    case 'Unsqueeze': {
      const axes = constInts(node.inputs[1]);
      const rank = a!.length + axes.length;
      const rest = [...a!];
      return Array.from({ length: rank }, (_, i) => (axes.map((x) => (x + rank) % rank).includes(i) ? 1 : rest.shift()!));
    }
    default:
      throw new Error(`zoo harness: no shape rule for ${node.op} (${node.name})`);
  }
}

/** Static shape of every value, propagated from graph inputs and initializer dims in node order. */
export function propagateShapes(spec: ModelSpec): Map<string, Shape> {
  const inits = initializerMap(spec);
  const shapes = new Map<string, Shape>();
  for (const [name, t] of inits) shapes.set(name, t.dims);
  for (const v of spec.inputs) shapes.set(v.name, (v.shape ?? []).map(Number));
  for (const node of spec.nodes) {
    for (const i of node.inputs) assert.ok(i === '' || shapes.has(i), `${node.name} reads ${i} before it exists`);
    shapes.set(node.outputs[0]!, inferNode(node, shapes, inits));
  }
  return shapes;
}

export interface LayerCount {
  readonly convs: number;
  /** Gemm, and MatMul with a constant weight. */
  readonly dense: number;
  /** MatMul of two activations (attention). */
  readonly batchMatmuls: number;
  readonly convMacs: number;
  readonly denseMacs: number;
  readonly batchMatmulMacs: number;
  readonly totalMacs: number;
}

const product = (s: Shape): number => s.reduce((p, d) => p * d, 1);

/**
 * Analytic multiply-accumulates of the compute layers: Conv = N·Cout·OH·OW·(Cin/g)·KH·KW,
 * Gemm = M·N·K, MatMul = (elements of the output)·K.
 */
export function countLayers(spec: ModelSpec): LayerCount {
  const shapes = propagateShapes(spec);
  const inits = initializerMap(spec);
  let convs = 0,
    dense = 0,
    batchMatmuls = 0,
    convMacs = 0,
    denseMacs = 0,
    batchMatmulMacs = 0;
  for (const node of spec.nodes) {
    const out = shapes.get(node.outputs[0]!)!;
    const a = shapes.get(node.inputs[0]!)!;
    const w = shapes.get(node.inputs[1]!)!;
    if (node.op === 'Conv') {
      convs++;
      convMacs += product(out) * product(w.slice(1)); // (Cin/g)·KH·KW per output element
    } else if (node.op === 'Gemm') {
      dense++;
      denseMacs += product(out) * (int(node, 'transA', 0) ? a[0]! : a[1]!);
    } else if (node.op === 'MatMul') {
      const macs = product(out) * a[a.length - 1]!;
      if (inits.has(node.inputs[1]!)) {
        dense++;
        denseMacs += macs;
      } else {
        batchMatmuls++;
        batchMatmulMacs += macs;
      }
    }
  }
  return { convs, dense, batchMatmuls, convMacs, denseMacs, batchMatmulMacs, totalMacs: convMacs + denseMacs + batchMatmulMacs };
}

/** Asserts `actual` is within `tolerance` (a fraction) of `expected`. */
export function assertClose(actual: number, expected: number, tolerance: number, what: string): void {
  const err = Math.abs(actual - expected) / expected;
  assert.ok(
    err <= tolerance,
    `${what}: ${actual} is ${(err * 100).toFixed(2)}% from ${expected} (allowed ${(tolerance * 100).toFixed(1)}%)`,
  );
}

/** The declared graph outputs must be what the independent propagation computes. */
export function assertDeclaredOutputs(spec: ModelSpec): void {
  const shapes = propagateShapes(spec);
  for (const o of spec.outputs) assert.deepEqual(shapes.get(o.name), o.shape, `declared shape of output ${o.name}`);
}

export type IntInputRange = Readonly<Record<string, readonly [number, number]>>;

function feed(spec: ModelSpec, seed: number, intRanges: IntInputRange): Record<string, ort.Tensor> {
  const next = mulberry32(seed);
  const feeds: Record<string, ort.Tensor> = {};
  for (const v of spec.inputs) {
    const dims = (v.shape ?? []).map(Number);
    const n = product(dims);
    if (v.dtype === 'int64') {
      const [lo, hi] = intRanges[v.name] ?? [0, 1];
      feeds[v.name] = new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: n }, () => BigInt(lo + Math.floor(next() * (hi - lo + 1)))),
        dims,
      );
    } else {
      feeds[v.name] = new ort.Tensor(
        'float32',
        Float32Array.from({ length: n }, () => next() * 2 - 1),
        dims,
      );
    }
  }
  return feeds;
}

/**
 * Loads `path` in ONNX Runtime (one thread: the test machine is shared), runs it once on seeded
 * random inputs and checks that the outputs are exactly the declared ones, finite and not constant.
 */
export async function runInOrt(path: string, spec: ModelSpec, intRanges: IntInputRange = {}): Promise<void> {
  const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  try {
    assert.deepEqual([...session.inputNames].sort(), spec.inputs.map((v) => v.name).sort());
    const results = await session.run(feed(spec, 7, intRanges));
    assert.deepEqual(Object.keys(results).sort(), spec.outputs.map((o) => o.name).sort());
    for (const o of spec.outputs) {
      const t = results[o.name]!;
      assert.deepEqual([...t.dims], o.shape, `ONNX Runtime's shape of ${o.name}`);
      const data = t.data as Float32Array;
      let min = Infinity,
        max = -Infinity;
      for (const x of data) {
        assert.ok(Number.isFinite(x), `${o.name} has a non-finite value`);
        if (x < min) min = x;
        if (x > max) max = x;
      }
      assert.ok(max > min, `${o.name} is constant (${min})`);
    }
  } finally {
    await session.release();
  }
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'veltair-zoo-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
