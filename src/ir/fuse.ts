/**
 * Epilogue fusion: starting from a tunable layer's output, absorb the chain of nodes that only it
 * feeds — BatchNormalization and constant bias adds (folded into weight/bias while nothing non-linear
 * has happened yet), activations, residual adds of a same-shaped activation value, and multiplies
 * by a per-channel gate computed elsewhere (channel_mul: a squeeze-excite gate that does not come
 * from this layer's own output) — in whatever order the model applies them. The chain stops at the
 * first value something else also reads.
 */
import type { OnnxNode, Tensor } from '../onnx/model.js';
import { attrFloat, attrInt, attrString } from '../onnx/attributes.js';
import type { Activation, EpilogueStep } from './layer.js';
import type { LayerDraft } from './draft.js';
import {
  VELTAIR_DOMAIN,
  consumersOf,
  float32Tensor,
  isConstant,
  numbers,
  otherOperand,
  scalarConstant,
  shapeOf,
  soleConsumer,
  type GraphIndex,
  type WorkGraph,
} from './work-graph.js';

const FLOAT32_MAX = 3.4028234663852886e38;

/** The activation a node applies to its first input, when it is one veltair fuses. */
export function activationOf(g: WorkGraph, n: OnnxNode): Activation | undefined {
  if (n.domain === VELTAIR_DOMAIN) {
    if (n.opType === 'Gelu') return { fn: 'gelu' };
    if (n.opType === 'GeluTanh') return { fn: 'gelu_tanh' };
    if (n.opType === 'Silu') return { fn: 'silu' };
    return undefined;
  }
  if (n.domain !== '') return undefined;
  switch (n.opType) {
    case 'Relu':
      return { fn: 'relu' };
    case 'Sigmoid':
      return { fn: 'sigmoid' };
    case 'Tanh':
      return { fn: 'tanh' };
    case 'HardSwish':
      return { fn: 'hard_swish' };
    case 'LeakyRelu':
      return { fn: 'leaky_relu', alpha: attrFloat(n, 'alpha', 0.01) };
    case 'HardSigmoid':
      return { fn: 'hard_sigmoid', alpha: attrFloat(n, 'alpha', 0.2), beta: attrFloat(n, 'beta', 0.5) };
    case 'Gelu':
      return attrString(n, 'approximate', 'none') === 'tanh' ? { fn: 'gelu_tanh' } : { fn: 'gelu' };
    case 'Clip': {
      const bound = (slot: number, attr: string, fallback: number): number | undefined => {
        const v = n.inputs[slot];
        if (v !== undefined && v !== '') return scalarConstant(g, v);
        return attrFloat(n, attr, fallback);
      };
      const min = bound(1, 'min', -FLOAT32_MAX);
      const max = bound(2, 'max', FLOAT32_MAX);
      return min === undefined || max === undefined ? undefined : { fn: 'clip', min, max };
    }
    default:
      return undefined;
  }
}

/** The axis of the layer's output that a per-channel bias / BN runs along. */
function channelAxis(d: LayerDraft, outRank: number): number {
  return d.op === 'conv2d' ? 1 : outRank - 1;
}

/** A constant that varies at most along `axis` of `outShape`, expanded to one value per channel. */
function perChannel(t: Tensor, outShape: readonly number[], axis: number): Float64Array | undefined {
  const channels = outShape[axis]!;
  if (t.dims.length > outShape.length) return undefined;
  const values = numbers(t);
  if (values.length === 1) return new Float64Array(channels).fill(values[0]!);
  const offset = outShape.length - t.dims.length;
  const ok = t.dims.every((d, i) => d === 1 || (i + offset === axis && d === channels));
  return ok && values.length === channels ? values : undefined;
}

function onlyBiasSoFar(d: LayerDraft): boolean {
  return d.epilogue.every((s) => s.kind === 'bias');
}

function currentBias(d: LayerDraft, channels: number): Float64Array {
  return d.params.bias === undefined ? new Float64Array(channels) : numbers(d.params.bias);
}

function setBias(d: LayerDraft, bias: Float64Array): void {
  d.params.bias = float32Tensor([bias.length], bias);
  if (!d.epilogue.some((s) => s.kind === 'bias')) d.epilogue.unshift({ kind: 'bias' });
}

/** Multiply every weight feeding output channel c by scale[c] (OIHW: rows; K×N: columns). */
function scaleWeight(d: LayerDraft, scale: Float64Array): void {
  const w = d.params.weight!;
  const src = w.data as Float32Array; // lowerConv / lowerDense always store float32 weights
  const out = new Float32Array(src.length);
  if (d.op === 'conv2d') {
    const block = src.length / scale.length;
    for (let i = 0; i < src.length; i++) out[i] = src[i]! * scale[Math.floor(i / block)]!;
  } else {
    const n = scale.length;
    for (let i = 0; i < src.length; i++) out[i] = src[i]! * scale[i % n]!;
  }
  d.params.weight = { dtype: 'float32', dims: w.dims, data: out };
}

function extraOutputsUnused(g: WorkGraph, ix: GraphIndex, n: OnnxNode): boolean {
  return n.outputs.slice(1).every((v) => v === '' || (!g.graphOutputs.has(v) && consumersOf(ix, v).length === 0));
}

/** w' = w·γ/√(σ²+ε), b' = (b−μ)·γ/√(σ²+ε) + β, computed in float64 and rounded once. */
function foldBatchNorm(g: WorkGraph, ix: GraphIndex, d: LayerDraft, bn: OnnxNode, outShape: readonly number[]): boolean {
  if (d.params.weight === undefined || !onlyBiasSoFar(d) || !extraOutputsUnused(g, ix, bn)) return false;
  if (attrInt(bn, 'training_mode', 0) !== 0) return false;
  const axis = channelAxis(d, outShape.length);
  if (d.op === 'dense' && outShape.length !== 2) return false;
  const channels = outShape[axis]!;
  const stats = bn.inputs.slice(1, 5).map((v) => (isConstant(g, v) ? numbers(g.constants.get(v)!) : undefined));
  if (stats.length !== 4 || stats.some((s) => s === undefined || s.length !== channels)) return false;
  const [gamma, beta, mean, variance] = stats as Float64Array[];
  const eps = attrFloat(bn, 'epsilon', 1e-5);
  const scale = new Float64Array(channels);
  for (let c = 0; c < channels; c++) scale[c] = gamma![c]! / Math.sqrt(variance![c]! + eps);
  const bias = currentBias(d, channels);
  for (let c = 0; c < channels; c++) bias[c] = (bias[c]! - mean![c]!) * scale[c]! + beta![c]!;
  scaleWeight(d, scale);
  setBias(d, bias);
  return true;
}

/** Try to absorb `n` (reading `v`, the layer's current output). Returns whether it was. */
function absorb(g: WorkGraph, ix: GraphIndex, d: LayerDraft, n: OnnxNode, v: string): boolean {
  const outShape = shapeOf(g, v);
  if (n.domain === '' && n.opType === 'BatchNormalization' && n.inputs[0] === v) return foldBatchNorm(g, ix, d, n, outShape);
  if (n.domain === '' && n.opType === 'Add') {
    const other = otherOperand(n, v);
    if (other === undefined || other === '') return false;
    const constant = g.constants.get(other);
    if (constant !== undefined) {
      const axis = channelAxis(d, outShape.length);
      const add = onlyBiasSoFar(d) ? perChannel(constant, outShape, axis) : undefined;
      if (add === undefined || !sameShape(shapeOf(g, n.outputs[0] ?? ''), outShape)) return false;
      const bias = currentBias(d, outShape[axis]!);
      for (let c = 0; c < bias.length; c++) bias[c]! += add[c]!;
      setBias(d, bias);
      return true;
    }
    const otherType = g.types.get(other);
    if (otherType === undefined || otherType.dtype !== d.dtype || !sameShape(otherType.shape, outShape)) return false;
    d.epilogue.push({ kind: 'residual_add', value: other });
    return true;
  }
  if (n.domain === '' && n.opType === 'Mul') {
    const gate = otherOperand(n, v);
    if (gate !== undefined && gate !== '' && isChannelGate(g, ix, d, gate, v, outShape)) {
      d.epilogue.push({ kind: 'channel_mul', value: gate });
      return true;
    }
  }
  if (n.inputs[0] !== v || n.inputs.slice(1).includes(v)) return false;
  const activation = activationOf(g, n);
  if (activation === undefined) return false;
  d.epilogue.push({ kind: 'activation', activation } satisfies EpilogueStep);
  return true;
}

/**
 * A per-channel gate the layer can multiply in its epilogue: one value per (batch, channel) of the
 * output ([N|1, C, 1, 1] for conv, [N|1, C] for dense), an activation, and not computed from the
 * layer's own output (a squeeze-excite gate usually is: then the multiply stays its own op).
 */
function isChannelGate(g: WorkGraph, ix: GraphIndex, d: LayerDraft, gate: string, v: string, out: readonly number[]): boolean {
  if (g.constants.has(gate) || d.epilogue.some((s) => s.kind === 'channel_mul')) return false;
  const t = g.types.get(gate);
  if (t === undefined || t.dtype !== d.dtype) return false;
  const s = t.shape;
  const perChannel =
    d.op === 'conv2d'
      ? s.length === 4 && s[1] === out[1] && s[2] === 1 && s[3] === 1 && (s[0] === 1 || s[0] === out[0])
      : d.op === 'dense' && out.length === 2 && s.length === 2 && s[1] === out[1] && s[0] === 1;
  return perChannel && !dependsOn(ix, gate, v);
}

/** Is `value` computed (transitively) from `target`? */
function dependsOn(ix: GraphIndex, value: string, target: string): boolean {
  const seen = new Set<string>();
  const stack = [value];
  while (stack.length > 0) {
    const x = stack.pop()!;
    if (x === target) return true;
    if (seen.has(x)) continue;
    seen.add(x);
    const p = ix.producer.get(x);
    if (p) for (const i of p.inputs) if (i !== '') stack.push(i);
  }
  return false;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Grow a tunable draft's epilogue along its single-reader output chain; marks absorbed nodes. */
export function fuseEpilogue(g: WorkGraph, ix: GraphIndex, d: LayerDraft, consumed: Set<OnnxNode>): void {
  for (;;) {
    const v = d.outputs[0] ?? '';
    const next = soleConsumer(g, ix, v);
    if (next === undefined || consumed.has(next) || next.outputs.length === 0) return;
    if (!absorb(g, ix, d, next, v)) return;
    consumed.add(next);
    d.outputs = [next.outputs[0] ?? ''];
    d.position = ix.position.get(next) ?? d.position;
  }
}
