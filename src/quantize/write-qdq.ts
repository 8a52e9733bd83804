/**
 * The float model's protobuf rewritten into a standard QDQ model, everything else left as it was:
 *  - an activation t produced by a node: the producer writes t's float value under a fresh name,
 *    then QuantizeLinear → DequantizeLinear give t back, so every reader is untouched; a graph input
 *    gets the pair after it and its readers move to the dequantized value;
 *  - a weight initializer becomes its int8 values, per-channel scales and zero points, and a
 *    DequantizeLinear(axis) that writes the weight's old name; a bias becomes int32 in the scale
 *    x_scale · w_scale[c] the same way, within biasLimit (a channel whose bias would pass it gets a
 *    wider weight scale).
 * Value names the model supplies are data here; derived names get a suffix and are checked unique.
 */
import onnxProto from 'onnx-proto';
import type { Tensor } from '../onnx/model.js';
import { tensorProto } from '../onnx/encode.js';
import { roundHalfEven } from '../onnx/quant-math.js';
import type { QuantPlan } from './plan.js';
import { biasLimit, weightQuant, weightScaleFloors } from './ranges.js';

const { onnx } = onnxProto;

export interface ActivationQuant {
  readonly scale: number;
  readonly zero: number;
}

function uniqueNamer(g: onnxProto.onnx.IGraphProto): (base: string, suffix: string) => string {
  const used = new Set<string>();
  for (const n of g.node ?? []) for (const v of [...(n.input ?? []), ...(n.output ?? [])]) used.add(v);
  for (const t of g.initializer ?? []) used.add(t.name ?? '');
  for (const v of [...(g.input ?? []), ...(g.output ?? [])]) used.add(v.name ?? '');
  return (base, suffix) => {
    let name = `${base}_${suffix}`;
    for (let i = 1; used.has(name); i++) name = `${base}_${suffix}${i}`;
    used.add(name);
    return name;
  };
}

const floatScalar = (v: number): Tensor => ({ dtype: 'float32', dims: [], data: Float32Array.of(v) });

function qdqNodes(x: string, q: string, y: string, scale: string, zero: string, label: string): onnxProto.onnx.INodeProto[] {
  return [
    { opType: 'QuantizeLinear', name: `${label}_QuantizeLinear`, input: [x, scale, zero], output: [q], domain: '' },
    { opType: 'DequantizeLinear', name: `${label}_DequantizeLinear`, input: [q, scale, zero], output: [y], domain: '' },
  ];
}

export function writeQdq(
  model: onnxProto.onnx.ModelProto,
  plan: QuantPlan,
  activation: ReadonlyMap<string, ActivationQuant>,
  floatOf: (name: string) => Float32Array,
  dimsOf: (name: string) => readonly number[],
): Uint8Array {
  const g = model.graph!;
  const fresh = uniqueNamer(g);
  const inits: onnxProto.onnx.ITensorProto[] = [];
  const addInit = (name: string, t: Tensor): void => {
    inits.push(tensorProto(name, t));
  };
  const graphInputs = new Set((g.input ?? []).map((v) => v.name ?? ''));
  const entry: onnxProto.onnx.INodeProto[] = [];
  const after = new Map<string, onnxProto.onnx.INodeProto[]>();
  /** Graph inputs' readers move to the dequantized value. */
  const rename = new Map<string, string>();
  /** Producers write a quantized activation under a fresh name; its Q/DQ pair follows them. */
  const renameOut = new Map<string, string>();

  for (const t of plan.activations) {
    const p = activation.get(t)!;
    const scale = fresh(t, 'scale');
    const zero = fresh(t, 'zero_point');
    addInit(scale, floatScalar(p.scale));
    addInit(zero, { dtype: 'uint8', dims: [], data: Uint8Array.of(p.zero) });
    const q = fresh(t, 'quantized');
    if (graphInputs.has(t)) {
      const dq = fresh(t, 'dequantized');
      rename.set(t, dq);
      entry.push(...qdqNodes(t, q, dq, scale, zero, t));
    } else {
      const f = fresh(t, 'float');
      renameOut.set(t, f);
      after.set(f, qdqNodes(f, q, t, scale, zero, t));
    }
  }

  const termsOf = (w: string): number => {
    const d = dimsOf(w);
    const axis = plan.weights.find((p) => p.name === w)!.axis;
    return d.reduce((a, b) => a * b, 1) / d[axis]!;
  };
  const floors = new Map<string, Float32Array>();
  for (const b of plan.biases) floors.set(b.weight, weightScaleFloors(floatOf(b.name), activation.get(b.input)!.scale, termsOf(b.weight)));
  const weightScale = new Map<string, Float32Array>();
  const weightDq: onnxProto.onnx.INodeProto[] = [];
  for (const w of plan.weights) {
    const { values, scales } = weightQuant(floatOf(w.name), dimsOf(w.name), w.axis, floors.get(w.name));
    weightScale.set(w.name, scales);
    const [qv, sc, zp] = [fresh(w.name, 'quantized'), fresh(w.name, 'scale'), fresh(w.name, 'zero_point')];
    addInit(qv, { dtype: 'int8', dims: dimsOf(w.name), data: values });
    addInit(sc, { dtype: 'float32', dims: [scales.length], data: scales });
    addInit(zp, { dtype: 'int8', dims: [scales.length], data: new Int8Array(scales.length) });
    weightDq.push({
      opType: 'DequantizeLinear',
      name: `${w.name}_DequantizeLinear`,
      input: [qv, sc, zp],
      output: [w.name],
      domain: '',
      attribute: [{ name: 'axis', type: onnx.AttributeProto.AttributeType.INT, i: w.axis }],
    });
  }
  /** A folded-constant bias's reader (by its output) → the name of the bias's own DequantizeLinear output. */
  const biasOfReader = new Map<string, string>();
  for (const b of plan.biases) {
    const ws = weightScale.get(b.weight)!;
    const xs = activation.get(b.input)!.scale;
    const scales = Float32Array.from(ws, (s) => Math.fround(xs * s));
    const f = floatOf(b.name);
    const limit = Math.max(1, biasLimit(termsOf(b.weight)));
    const values = Int32Array.from(scales, (s, c) => Math.max(-limit, Math.min(limit, roundHalfEven(f[c]! / s))));
    const [qv, sc, zp] = [fresh(b.name, 'quantized'), fresh(b.name, 'scale'), fresh(b.name, 'zero_point')];
    addInit(qv, { dtype: 'int32', dims: [values.length], data: values });
    addInit(sc, { dtype: 'float32', dims: [scales.length], data: scales });
    addInit(zp, { dtype: 'int32', dims: [scales.length], data: new Int32Array(scales.length) });
    const out = b.reader === undefined ? b.name : fresh(b.name, 'dequantized');
    if (b.reader !== undefined) biasOfReader.set(b.reader, out);
    weightDq.push({
      opType: 'DequantizeLinear',
      name: `${out}_DequantizeLinear`,
      input: [qv, sc, zp],
      output: [out],
      domain: '',
      attribute: [{ name: 'axis', type: onnx.AttributeProto.AttributeType.INT, i: 0 }],
    });
  }

  const replaced = new Set([...plan.weights.map((w) => w.name), ...plan.biases.filter((b) => b.reader === undefined).map((b) => b.name)]);
  const nodes: onnxProto.onnx.INodeProto[] = [...weightDq, ...entry];
  for (const n of g.node ?? []) {
    n.input = (n.input ?? []).map((v) => rename.get(v) ?? v);
    const ownBias = biasOfReader.get(n.output?.[0] ?? '');
    if (ownBias !== undefined) n.input[2] = ownBias;
    n.output = (n.output ?? []).map((v) => renameOut.get(v) ?? v);
    nodes.push(n);
    for (const o of n.output) nodes.push(...(after.get(o) ?? []));
  }
  g.node = nodes;
  g.initializer = [...(g.initializer ?? []).filter((t) => !replaced.has(t.name ?? '')), ...inits];
  // Older IR versions list initializers as graph inputs too; a replaced weight is no longer one.
  g.input = (g.input ?? []).filter((v) => !replaced.has(v.name ?? ''));
  return onnx.ModelProto.encode(model).finish();
}
