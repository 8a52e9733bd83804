/**
 * What static quantization touches in a float model, decided from its graph alone: the float
 * activations that get a QuantizeLinear/DequantizeLinear pair (the inputs and outputs of Conv,
 * MatMul, Gemm, Add, MaxPool, AveragePool and GlobalAveragePool; after a core's Relu/Clip rather than
 * between, so the activation folds into the layer; before a Pad of nothing, which PyTorch writes in
 * front of some average pools), the weights quantized per output channel and the biases
 * quantized to int32. Everything else stays float and reads dequantized values.
 */
import type { InferredModel, OnnxModel, OnnxNode } from '../onnx/model.js';
import { attrFloat, attrInt } from '../onnx/attributes.js';

export interface WeightPlan {
  readonly name: string;
  /** The output-channel axis: 0 for Conv and Gemm with transB, 1 for MatMul and plain Gemm. */
  readonly axis: number;
}

export interface BiasPlan {
  readonly name: string;
  /** The activation and weight whose scales multiply into the bias's scale. */
  readonly input: string;
  readonly weight: string;
  /**
   * A bias that is a folded constant, not an initializer (PyTorch's exporter writes Identity(another
   * layer's bias) when two are equal): the output of the one core that reads it, whose bias input
   * moves to a DequantizeLinear of its own int32 copy.
   */
  readonly reader?: string;
}

export interface QuantPlan {
  readonly activations: readonly string[];
  readonly weights: readonly WeightPlan[];
  readonly biases: readonly BiasPlan[];
}

const CORES = new Set(['Conv', 'MatMul', 'Gemm']);

function isFloatInitializer(m: OnnxModel, v: string | undefined, rank: number): boolean {
  const t = v === undefined ? undefined : m.graph.initializers.get(v);
  return t !== undefined && t.dtype === 'float32' && t.dims.length === rank;
}

/** The weight axis of a core whose weight can be quantized, or undefined to leave the node float. */
function coreAxis(m: OnnxModel, n: OnnxNode, isConstantVector: (v: string) => boolean): number | undefined {
  const w = n.inputs[1];
  if (n.opType === 'Conv') return isFloatInitializer(m, w, 4) ? 0 : undefined;
  if (n.opType === 'MatMul') return isFloatInitializer(m, w, 2) ? 1 : undefined;
  if (attrInt(n, 'transA', 0) !== 0 || attrFloat(n, 'alpha', 1) !== 1 || attrFloat(n, 'beta', 1) !== 1) return undefined;
  if (!isFloatInitializer(m, w, 2)) return undefined;
  const c = n.inputs[2];
  if (c !== undefined && c !== '' && !isFloatInitializer(m, c, 1) && !isConstantVector(c)) return undefined;
  return attrInt(n, 'transB', 0) !== 0 ? 0 : 1;
}

export function planQuantization(inferred: InferredModel): QuantPlan {
  const m = inferred.model;
  const nodes = m.graph.nodes.filter((n) => n.domain === '');
  const readers = new Map<string, OnnxNode[]>();
  for (const n of nodes) for (const v of n.inputs) if (v !== '') readers.set(v, [...(readers.get(v) ?? []), n]);
  const isActivation = (v: string | undefined): v is string =>
    v !== undefined && v !== '' && !inferred.constants.has(v) && inferred.types.get(v)?.dtype === 'float32';
  const isConstantVector = (v: string): boolean => {
    const t = inferred.constants.get(v);
    return t !== undefined && t.dtype === 'float32' && t.dims.length === 1;
  };
  const activations = new Set<string>();
  const weights = new Map<string, WeightPlan>();
  const biases: BiasPlan[] = [];
  const outputOf = (n: OnnxNode): string => {
    const y = n.outputs[0]!;
    const r = readers.get(y) ?? [];
    const act = r.length === 1 && !m.graph.outputs.some((o) => o.name === y) ? r[0]! : undefined;
    // Bounds the front end folds count too: PyTorch writes ReLU6's as Identity(one shared constant).
    const clipConst = act?.opType === 'Clip' && act.inputs.slice(1).every((v) => v === '' || inferred.constants.has(v));
    return act !== undefined && (act.opType === 'Relu' || clipConst) ? act.outputs[0]! : y;
  };
  const producers = new Map<string, OnnxNode>();
  for (const n of nodes) for (const o of n.outputs) producers.set(o, n);
  /** `v`, or the input of the constant Pad of nothing that writes it. */
  const throughEmptyPad = (v: string | undefined): string | undefined => {
    const p = v === undefined ? undefined : producers.get(v);
    const pads = p?.opType === 'Pad' && p.inputs[1] ? inferred.constants.get(p.inputs[1]) : undefined;
    const mode = p?.attributes.get('mode');
    const constantMode = mode === undefined || (mode.kind === 'string' && mode.value === 'constant');
    const empty =
      pads !== undefined && !Array.isArray(pads.data) && Array.from(pads.data as ArrayLike<number | bigint>).every((x) => Number(x) === 0);
    return empty && constantMode ? p!.inputs[0] : v;
  };
  for (const n of nodes) {
    const x = n.opType === 'AveragePool' ? throughEmptyPad(n.inputs[0]) : n.inputs[0];
    if (CORES.has(n.opType)) {
      const axis = coreAxis(m, n, isConstantVector);
      const w = n.inputs[1]!;
      if (axis === undefined || !isActivation(x) || (weights.has(w) && weights.get(w)!.axis !== axis)) continue;
      weights.set(w, { name: w, axis });
      const b = n.inputs[2];
      if (b !== undefined && b !== '' && isFloatInitializer(m, b, 1) && !biases.some((p) => p.name === b))
        biases.push({ name: b, input: x, weight: w });
      else if (b !== undefined && b !== '' && isConstantVector(b)) biases.push({ name: b, input: x, weight: w, reader: n.outputs[0]! });
      activations.add(x);
      activations.add(outputOf(n));
    } else if (n.opType === 'Add' && isActivation(x) && isActivation(n.inputs[1])) {
      activations.add(x);
      activations.add(n.inputs[1]);
      activations.add(outputOf(n));
    } else if ((n.opType === 'MaxPool' && (n.outputs[1] ?? '') === '') || n.opType === 'GlobalAveragePool' || n.opType === 'AveragePool') {
      if (!isActivation(x)) continue;
      activations.add(x);
      activations.add(n.outputs[0]!);
    }
  }
  return { activations: [...activations].filter((v) => isActivation(v)), weights: [...weights.values()], biases };
}
