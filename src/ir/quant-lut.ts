/**
 * A float island between a DequantizeLinear and a QuantizeLinear that reads nothing but the one
 * dequantized activation and scalar constants (SiLU's Sigmoid and Mul, HardSwish, GELU, a lone
 * Relu) maps each of the 256 integer inputs to one integer output, so it folds into a 256-entry
 * table. The table is the island evaluated in float32 by the front end's own operator folds on every
 * input value, then quantized: what a DQ → float ops → Q run computes, one element at a time. A
 * channel gate (squeeze-excitation's Sigmoid of a per-channel value) keeps the island's float values.
 */
import type { OnnxNode, Tensor, ValueType } from '../onnx/model.js';
import { opDefinition } from '../onnx/ops/registry.js';
import { dequantizeValue, quantizeValue, type QuantDType } from '../onnx/quant-math.js';
import { nums } from '../onnx/eval.js';
import { consumersOf, type GraphIndex, type WorkGraph } from './work-graph.js';

/** Element-wise ops whose value at an element depends on that element alone (and scalar constants). */
const ISLAND_OPS = new Set([
  'Relu',
  'Sigmoid',
  'Tanh',
  'Erf',
  'Exp',
  'Neg',
  'Abs',
  'Softplus',
  'Mish',
  'HardSwish',
  'HardSigmoid',
  'LeakyRelu',
  'Elu',
  'Selu',
  'Clip',
  'Add',
  'Sub',
  'Mul',
  'Div',
  'Max',
  'Min',
]);
/** Enough for GELU (Div, Erf, Add, Mul, Mul) with room; larger islands are left to the float path. */
const MAX_ISLAND = 8;

export interface LutIsland {
  /** The DequantizeLinear the island reads. */
  readonly source: OnnxNode;
  /** The island's nodes, in graph order (the QuantizeLinear not among them). */
  readonly nodes: readonly OnnxNode[];
}

function isScalarConstant(g: WorkGraph, v: string): boolean {
  const t = g.constants.get(v);
  return t !== undefined && t.dtype === 'float32' && nums(t).length === 1;
}

/**
 * The island whose result `value` is read by `reader` alone, or undefined: every node an allowed
 * element-wise op whose output is read only inside the island (or by `reader`), every non-constant
 * input the one DQ's output or another island node's, and every value the DQ output's shape (no
 * broadcasting of the activation).
 */
export function lutIslandOf(g: WorkGraph, ix: GraphIndex, value: string, reader: OnnxNode): LutIsland | undefined {
  const root = ix.producer.get(value);
  if (root === undefined || consumersOf(ix, root.outputs[0]!).length !== 1) return undefined;
  const island = new Set<OnnxNode>();
  let source: OnnxNode | undefined;
  const pending = [root];
  while (pending.length > 0) {
    const n = pending.pop()!;
    if (island.has(n)) continue;
    if (n.domain !== '' || !ISLAND_OPS.has(n.opType) || n.outputs.length !== 1 || island.size >= MAX_ISLAND) return undefined;
    if (g.graphOutputs.has(n.outputs[0]!)) return undefined;
    island.add(n);
    for (const v of n.inputs) {
      if (v === '' || isScalarConstant(g, v)) continue;
      const p = ix.producer.get(v);
      if (p === undefined) return undefined;
      if (p.opType === 'DequantizeLinear' && p.domain === '') {
        if (source !== undefined && source !== p) return undefined;
        source = p;
      } else pending.push(p);
    }
  }
  if (source === undefined) return undefined;
  const shape = g.types.get(source.outputs[0]!)?.shape;
  const sameShape = (v: string): boolean => {
    const s = g.types.get(v)?.shape;
    return s !== undefined && shape !== undefined && s.length === shape.length && s.every((d, i) => d === shape[i]);
  };
  for (const n of island) {
    if (!sameShape(n.outputs[0]!)) return undefined;
    const inside = (c: OnnxNode): boolean => island.has(c) || c === reader;
    if (!consumersOf(ix, n.outputs[0]!).every(inside)) return undefined;
  }
  return { source, nodes: g.nodes.filter((n) => island.has(n)) };
}

export interface LutQuant {
  readonly scale: number;
  readonly zero: number;
  readonly dtype: QuantDType;
}

/** The island's float32 result on every u8 input value (0..255), dequantized with `x`. */
export function lutValues(g: WorkGraph, island: LutIsland, x: LutQuant, opset: number, out: string): number[] {
  const values = new Map<string, Tensor>();
  const dims = [256];
  values.set(island.source.outputs[0]!, {
    dtype: 'float32',
    dims,
    data: Float32Array.from({ length: 256 }, (_, v) => dequantizeValue(v, x.scale, x.zero)),
  });
  for (const n of island.nodes) {
    const ins = n.inputs.map((v) => (v === '' ? undefined : (values.get(v) ?? g.constants.get(v))));
    const types = ins.map((t): ValueType | undefined => (t === undefined ? undefined : { dtype: t.dtype, shape: t.dims }));
    const def = opDefinition(n.domain, n.opType)!;
    const ctx = { node: n, opset, inputs: types, constants: ins };
    const [result] = def.evaluate!(ctx, ins as Tensor[], def.infer(ctx));
    values.set(n.outputs[0]!, result!);
  }
  return Array.from(nums(values.get(out)!));
}

/** Every u8 input value (0..255) dequantized, run through the island in float32, quantized. */
export function lutTable(g: WorkGraph, island: LutIsland, x: LutQuant, y: LutQuant, opset: number, out: string): number[] {
  return lutValues(g, island, x, opset, out).map((v) => quantizeValue(v, y.scale, y.zero, y.dtype));
}
