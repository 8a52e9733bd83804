/**
 * Quantized models into quantized layers. Both forms users produce lower to the same layers:
 *  - QDQ: DequantizeLinear → Conv | MatMul | Gemm | Add | MaxPool | AveragePool | GlobalAveragePool | Concat →
 *    [Relu | Clip] → QuantizeLinear folds into ONE layer (the DQ of a constant weight was folded by the
 *    front end, which kept its integer tensor: InferredModel.dequantized); a float island between one
 *    DequantizeLinear and a QuantizeLinear (SiLU, HardSwish, GELU) folds into a 256-entry table
 *    (quant-lut.ts), and a squeeze-excitation's channel gate Mul into one layer with a table of gates;
 *  - QOperator: QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, QLinearAdd and
 *    QLinearGlobalAveragePool each become that layer directly.
 * A quantized layer reads and writes integer tensors and carries its requantization in its attrs
 * (see quant-layer.ts): input/output scale and zero point, the activation as an integer clamp, and
 * the output type. QuantizeLinear / DequantizeLinear left over (the model's entry and exit) become
 * layers of their own. What cannot be folded into an integer layer is refused here, by node name,
 * before anything is tuned.
 */
import type { DequantizedConstant, OnnxNode, Tensor } from '../onnx/model.js';
import { attrFloat, attrInt, attrInts, nodeLabel } from '../onnx/attributes.js';
import { nums } from '../onnx/eval.js';
import { dequantizeValue, quantizeValue, quantRange, roundHalfEven, type QuantDType } from '../onnx/quant-math.js';
import { userError } from '../errors.js';
import type { AttrValue, LayerDraft } from './draft.js';
import type { Activation } from './layer.js';
import { resolveWindow } from './spatial.js';
import { consumersOf, indexGraph, isConstant, shapeOf, type GraphIndex, type WorkGraph } from './work-graph.js';
import { QUANT_ATTRS } from './quant-layer.js';
import { lutIslandOf, lutTable, lutValues } from './quant-lut.js';

const CORE_OPS = new Set(['Conv', 'MatMul', 'Gemm']);
const QDQ_ANCHORS = new Set([...CORE_OPS, 'Add', 'MaxPool', 'AveragePool', 'GlobalAveragePool', 'Concat']);
/** A concat's inputs each get a 256-entry requantization table in the native step, kept on its stack. */
export const MAX_QCONCAT_INPUTS = 64;
/** Anchors a following Relu/Clip folds into, as a clamp of the output's integers (a residual Add's Relu too). */
const CLAMPED_ANCHORS = new Set([...CORE_OPS, 'Add']);
const QOPERATORS = new Set(['QLinearConv', 'QLinearMatMul', 'ConvInteger', 'MatMulInteger', 'QLinearAdd', 'QLinearGlobalAveragePool']);

function refuse(node: OnnxNode, what: string, hint: string): Error {
  return userError('UNSUPPORTED_QUANTIZATION', `${nodeLabel(node)}: ${what}`, hint);
}

const REQUANTIZE_HINT =
  'veltair folds QuantizeLinear/DequantizeLinear pairs around Conv, MatMul, Gemm, Add and pools with u8 activations and s8 weights; ' +
  're-quantize the model with `veltair quantize` or ONNX Runtime quantize_static (QuantFormat.QDQ, activation QUInt8, weight QInt8)';

interface Quant {
  readonly scale: number;
  readonly zero: number;
  readonly dtype: QuantDType;
}

function scalarOf(t: Tensor | undefined, fallback: number): number {
  if (t === undefined) return fallback;
  const d = nums(t);
  return d[0]!;
}

/** A per-tensor (scale, zero) from constant operands; per-axis activation scales are refused. */
function perTensor(
  g: WorkGraph,
  node: OnnxNode,
  scaleIn: string | undefined,
  zeroIn: string | undefined,
  dtype: QuantDType,
  role: string,
): Quant {
  const scale = g.constants.get(scaleIn ?? '');
  const zero = zeroIn === undefined || zeroIn === '' ? undefined : g.constants.get(zeroIn);
  if (scale === undefined || (zeroIn !== undefined && zeroIn !== '' && zero === undefined))
    throw refuse(
      node,
      `the ${role}'s scale or zero point is computed at run time`,
      'static quantization keeps them as initializers; ' + REQUANTIZE_HINT,
    );
  if (nums(scale).length !== 1)
    throw refuse(node, `the ${role} is quantized per channel`, 'activations take one scale per tensor; ' + REQUANTIZE_HINT);
  return { scale: scalarOf(scale, 1), zero: scalarOf(zero, 0), dtype };
}

function activationDType(g: WorkGraph, node: OnnxNode, v: string, role: string): QuantDType {
  const d = g.types.get(v)?.dtype;
  if (d !== 'uint8') throw refuse(node, `the ${role} is ${d ?? 'untyped'}; quantized activations must be uint8`, REQUANTIZE_HINT);
  return d;
}

/** A quantized weight: int8 values with per-output-channel scale and zero point along `axis`. */
interface QWeight {
  readonly values: Tensor;
  readonly scale: Float32Array;
  readonly zero: Int32Array;
}

function weightOf(node: OnnxNode, q: Tensor, scale: Tensor | undefined, zero: Tensor | undefined, axis: number): QWeight {
  // uint8 weights (ONNX's own QOperator tests use them) stay exact in the reference; veltair quantize writes int8.
  if (q.dtype !== 'int8' && q.dtype !== 'uint8')
    throw refuse(node, `the weight is ${q.dtype}; quantized weights must be int8 or uint8`, REQUANTIZE_HINT);
  const channels = q.dims[axis] ?? 1;
  const expand = (t: Tensor | undefined, fallback: number): number[] => {
    const d = t === undefined ? [fallback] : Array.from(nums(t));
    if (d.length !== 1 && d.length !== channels)
      throw refuse(node, `the weight's scale has ${d.length} values for ${channels} channels`, REQUANTIZE_HINT);
    return d.length === 1 ? new Array<number>(channels).fill(d[0]!) : d;
  };
  return { values: q, scale: Float32Array.from(expand(scale, 1)), zero: Int32Array.from(expand(zero, 0)) };
}

function weightFromDq(g: WorkGraph, node: OnnxNode, v: string, axis: number, dq: ReadonlyMap<string, DequantizedConstant>): QWeight {
  const p = dq.get(v);
  if (p === undefined) {
    const what = isConstant(g, v) ? 'its weight is a float constant, not DequantizeLinear of int8' : 'its weight is computed at run time';
    throw refuse(node, `reads a quantized activation but ${what}`, REQUANTIZE_HINT);
  }
  if (nums(p.scale).length > 1 && p.axis !== axis)
    throw refuse(node, `its weight is quantized along axis ${p.axis}, not the output channels`, REQUANTIZE_HINT);
  return weightOf(node, p.quantized, p.scale, p.zero, axis);
}

/** An int32 bias in the accumulator's scale (x_scale · w_scale[c]): a DQ'd int32 bias as is, a float bias rounded. */
function integerBias(g: WorkGraph, b: string, x: Quant, w: QWeight, dq: ReadonlyMap<string, DequantizedConstant>): Tensor | undefined {
  if (b === '') return undefined;
  const p = dq.get(b);
  if (p !== undefined && p.quantized.dtype === 'int32' && scalarOf(p.zero, 0) === 0) return p.quantized;
  const f = nums(g.constants.get(b)!);
  return {
    dtype: 'int32',
    dims: [w.scale.length],
    data: Int32Array.from(w.scale, (s, c) => roundHalfEven(f[f.length === 1 ? 0 : c]! / Math.fround(x.scale * s))),
  };
}

/** Relu or Clip between the core and its QuantizeLinear, as a clamp in the output's integer domain. */
function clampOf(g: WorkGraph, act: OnnxNode | undefined, y: Quant): [number, number] {
  const [qmin, qmax] = quantRange(y.dtype);
  if (act === undefined) return [qmin, qmax];
  if (act.opType === 'Relu') return [Math.max(qmin, y.zero), qmax];
  const lo = act.inputs[1] ? scalarOf(g.constants.get(act.inputs[1]), -Infinity) : attrFloat(act, 'min', -Infinity);
  const hi = act.inputs[2] ? scalarOf(g.constants.get(act.inputs[2]), Infinity) : attrFloat(act, 'max', Infinity);
  const q = (v: number): number => (Number.isFinite(v) ? quantizeValue(v, y.scale, y.zero, y.dtype) : v < 0 ? qmin : qmax);
  return [Math.max(qmin, q(lo)), Math.min(qmax, q(hi))];
}

function activationOf(act: OnnxNode | undefined, g: WorkGraph): Activation[] {
  if (act === undefined) return [];
  if (act.opType === 'Relu') return [{ fn: 'relu' }];
  const lo = act.inputs[1] ? scalarOf(g.constants.get(act.inputs[1]), -3.4e38) : attrFloat(act, 'min', -3.4e38);
  const hi = act.inputs[2] ? scalarOf(g.constants.get(act.inputs[2]), 3.4e38) : attrFloat(act, 'max', 3.4e38);
  return [{ fn: 'clip', min: lo, max: hi }];
}

function quantAttrs(x: Quant, y: Quant | undefined, clamp: [number, number]): Record<string, AttrValue> {
  return {
    [QUANT_ATTRS.xScale]: x.scale,
    [QUANT_ATTRS.xZero]: x.zero,
    [QUANT_ATTRS.yScale]: y?.scale ?? 0,
    [QUANT_ATTRS.yZero]: y?.zero ?? 0,
    [QUANT_ATTRS.outDtype]: y?.dtype ?? 'int32',
    [QUANT_ATTRS.clamp]: clamp,
  };
}

function weightParams(w: QWeight, values: Tensor, bias: Tensor | undefined): Record<string, Tensor> {
  const n = w.scale.length;
  const params: Record<string, Tensor> = {
    weight: values,
    weight_scale: { dtype: 'float32', dims: [n], data: w.scale },
    weight_zero: { dtype: 'int32', dims: [n], data: w.zero },
  };
  if (bias !== undefined) params.bias = bias;
  return params;
}

/** A conv2d-shaped layer over integer operands (QDQ Conv, QLinearConv, ConvInteger). */
function qconv(
  g: WorkGraph,
  node: OnnxNode,
  x: string,
  xq: Quant,
  w: QWeight,
  bias: Tensor | undefined,
  y: string,
  yq: Quant | undefined,
  act: OnnxNode | undefined,
  position: number,
): LayerDraft {
  const xs = shapeOf(g, x);
  if (xs.length !== 4) throw refuse(node, `${xs.length - 2}-D quantized convolution`, 'veltair folds 2-D (NCHW) quantized convolutions');
  const ys = shapeOf(g, y);
  const kernel = attrInts(node, 'kernel_shape') ?? w.values.dims.slice(2);
  const win = resolveWindow(node, xs.slice(2), ys.slice(2), kernel);
  const { clamp, ...weighted } = weightedParts(g, w, bias, act, yq);
  return {
    name: node.name,
    op: 'qconv2d',
    inputs: [x],
    outputs: [y],
    position,
    ...weighted,
    attrs: {
      groups: attrInt(node, 'group', 1),
      kernel: [...win.kernel],
      strides: [...win.strides],
      pads: [...win.pads],
      dilations: [...win.dilations],
      ...quantAttrs(xq, yq, clamp),
    },
    core: undefined,
    macs: ys.reduce((a, b) => a * b, 1) * (w.values.dims.slice(1).reduce((a, b) => a * b, 1) || 1),
  };
}

/** What a layer with a constant quantized weight carries whatever its shape: output type, weights, epilogue, clamp. */
function weightedParts(g: WorkGraph, w: QWeight, bias: Tensor | undefined, act: OnnxNode | undefined, yq: Quant | undefined) {
  const clamp: [number, number] = yq === undefined ? [...quantRange('int32')] : clampOf(g, act, yq);
  return {
    dtype: yq?.dtype ?? ('int32' as const),
    params: weightParams(w, w.values, bias),
    epilogue: [
      ...(bias !== undefined ? [{ kind: 'bias' as const }] : []),
      ...activationOf(act, g).map((a) => ({ kind: 'activation' as const, activation: a })),
    ],
    clamp,
  };
}

/** A dense-shaped layer: A [..., M, K] × constant weight [K, N]. */
function qmatmul(
  g: WorkGraph,
  node: OnnxNode,
  a: string,
  aq: Quant,
  w: QWeight,
  bias: Tensor | undefined,
  y: string,
  yq: Quant | undefined,
  act: OnnxNode | undefined,
  position: number,
): LayerDraft {
  if (w.values.dims.length !== 2)
    throw refuse(node, `its weight has rank ${w.values.dims.length}`, 'veltair folds quantized MatMul with a constant 2-D weight');
  const { clamp, ...weighted } = weightedParts(g, w, bias, act, yq);
  return {
    name: node.name,
    op: 'qmatmul',
    inputs: [a],
    outputs: [y],
    position,
    ...weighted,
    attrs: quantAttrs(aq, yq, clamp),
    core: undefined,
    macs: shapeOf(g, y).reduce((p, d) => p * d, 1) * w.values.dims[0]!,
  };
}

/** [N, K] (Gemm transB) → [K, N], scales and zero points stay per N. */
function transposed(t: Tensor): Tensor {
  const [r, c] = t.dims as [number, number];
  const src = nums(t);
  const out = t.dtype === 'uint8' ? new Uint8Array(r * c) : new Int8Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = src[i * c + j]!;
  return { dtype: t.dtype, dims: [c, r], data: out };
}

interface Match {
  readonly layer: LayerDraft;
  readonly nodes: readonly OnnxNode[];
}

/** QDQ: a QuantizeLinear whose input comes (through at most one Relu/Clip) from an anchor fed by DequantizeLinear. */
function matchQdq(g: WorkGraph, ix: GraphIndex, q: OnnxNode, dq: ReadonlyMap<string, DequantizedConstant>): Match | undefined {
  let src = ix.producer.get(q.inputs[0] ?? '');
  let act: OnnxNode | undefined;
  if (src !== undefined && (src.opType === 'Relu' || src.opType === 'Clip') && consumersOf(ix, src.outputs[0]!).length === 1) {
    const core = ix.producer.get(src.inputs[0] ?? '');
    if (core !== undefined && CLAMPED_ANCHORS.has(core.opType) && consumersOf(ix, core.outputs[0]!).length === 1) {
      act = src;
      src = core;
    }
  }
  if (src === undefined || src.domain !== '' || !QDQ_ANCHORS.has(src.opType) || consumersOf(ix, src.outputs[0]!).length !== 1)
    return undefined;
  const dqOf = (v: string): OnnxNode | undefined => {
    const p = ix.producer.get(v);
    return p !== undefined && p.opType === 'DequantizeLinear' && p.domain === '' ? p : undefined;
  };
  const xdq = dqOf(src.inputs[0] ?? '');
  if (xdq === undefined) return undefined;
  const y = q.outputs[0]!;
  const yq = perTensor(g, q, q.inputs[1], q.inputs[2], activationDType(g, q, y, 'output'), 'output');
  const x = xdq.inputs[0]!;
  const xq = perTensor(g, xdq, xdq.inputs[1], xdq.inputs[2], activationDType(g, src, x, 'input'), 'input');
  const position = ix.position.get(q)!;
  const nodes = [q, src, ...(act ? [act] : [])];
  switch (src.opType) {
    case 'Conv': {
      const w = weightFromDq(g, src, src.inputs[1] ?? '', 0, dq);
      return { layer: qconv(g, src, x, xq, w, integerBias(g, src.inputs[2] ?? '', xq, w, dq), y, yq, act, position), nodes };
    }
    case 'MatMul': {
      const w = weightFromDq(g, src, src.inputs[1] ?? '', 1, dq);
      return { layer: qmatmul(g, src, x, xq, w, undefined, y, yq, act, position), nodes };
    }
    case 'Gemm': {
      if (attrInt(src, 'transA', 0) !== 0 || attrFloat(src, 'alpha', 1) !== 1 || attrFloat(src, 'beta', 1) !== 1)
        throw refuse(src, 'a quantized Gemm with transA, alpha or beta', REQUANTIZE_HINT);
      const transB = attrInt(src, 'transB', 0) !== 0;
      const w0 = weightFromDq(g, src, src.inputs[1] ?? '', transB ? 0 : 1, dq);
      const w = transB ? { ...w0, values: transposed(w0.values) } : w0;
      return { layer: qmatmul(g, src, x, xq, w, integerBias(g, src.inputs[2] ?? '', xq, w, dq), y, yq, act, position), nodes };
    }
    case 'Add': {
      const bdq = dqOf(src.inputs[1] ?? '');
      if (bdq === undefined) return undefined;
      const b = bdq.inputs[0]!;
      const bq = perTensor(g, bdq, bdq.inputs[1], bdq.inputs[2], activationDType(g, src, b, 'second input'), 'second input');
      return {
        layer: qelementwise(
          g,
          src,
          'qadd',
          [x, b],
          y,
          { ...quantAttrs(xq, yq, clampOf(g, act, yq)), b_scale: bq.scale, b_zero: bq.zero },
          position,
        ),
        nodes,
      };
    }
    case 'MaxPool': {
      if (src.outputs.length > 1 && src.outputs[1] !== '') return undefined;
      const kernel = attrInts(src, 'kernel_shape') ?? [];
      const win = resolveWindow(src, shapeOf(g, x).slice(2), shapeOf(g, y).slice(2), kernel, attrInt(src, 'ceil_mode', 0) === 1);
      const attrs = {
        kernel: [...win.kernel],
        strides: [...win.strides],
        pads: [...win.pads],
        dilations: [...win.dilations],
        ...quantAttrs(xq, yq, [...quantRange(yq.dtype)]),
      };
      return { layer: qelementwise(g, src, 'qmaxpool', [x], y, attrs, position), nodes };
    }
    case 'AveragePool': {
      const kernel = attrInts(src, 'kernel_shape') ?? [];
      const xs = shapeOf(g, x);
      if (xs.length !== 4 || kernel.length !== 2) return undefined;
      const win = resolveWindow(src, xs.slice(2), shapeOf(g, y).slice(2), kernel, attrInt(src, 'ceil_mode', 0) === 1);
      if (win.dilations.some((d) => d !== 1)) return undefined;
      const attrs = {
        kernel: [...win.kernel],
        strides: [...win.strides],
        pads: [...win.pads],
        count_include_pad: attrInt(src, 'count_include_pad', 0),
        ...quantAttrs(xq, yq, [...quantRange(yq.dtype)]),
      };
      return { layer: qelementwise(g, src, 'qavgpool', [x], y, attrs, position), nodes };
    }
    case 'Concat': {
      const ins = src.inputs.map(dqOf);
      if (ins.length > MAX_QCONCAT_INPUTS || ins.some((d) => d === undefined)) return undefined;
      const qs = ins.map((d) => perTensor(g, d!, d!.inputs[1], d!.inputs[2], activationDType(g, src, d!.inputs[0]!, 'input'), 'input'));
      const rank = shapeOf(g, y).length;
      const axis = attrInt(src, 'axis', 0);
      const attrs = {
        ...quantAttrs(xq, yq, [...quantRange(yq.dtype)]),
        axis: axis < 0 ? axis + rank : axis,
        in_scales: qs.map((q) => q.scale),
        in_zeros: qs.map((q) => q.zero),
      };
      return {
        layer: qelementwise(
          g,
          src,
          'qconcat',
          ins.map((d) => d!.inputs[0]!),
          y,
          attrs,
          position,
        ),
        nodes,
      };
    }
    default:
      return { layer: qelementwise(g, src, 'qglobal_avgpool', [x], y, quantAttrs(xq, yq, [...quantRange(yq.dtype)]), position), nodes };
  }
}

/** A float island between one DequantizeLinear and QuantizeLinear `q`, as a 256-entry table (quant-lut.ts). */
function matchLut(g: WorkGraph, ix: GraphIndex, q: OnnxNode, opset: number): Match | undefined {
  const island = lutIslandOf(g, ix, q.inputs[0] ?? '', q);
  if (island === undefined) return undefined;
  const dq = island.source;
  const x = dq.inputs[0]!;
  const y = q.outputs[0]!;
  if (g.types.get(x)?.dtype !== 'uint8' || g.types.get(y)?.dtype !== 'uint8') return undefined;
  const xq = perTensor(g, dq, dq.inputs[1], dq.inputs[2], 'uint8', 'input');
  const yq = perTensor(g, q, q.inputs[1], q.inputs[2], 'uint8', 'output');
  const table = lutTable(g, island, xq, yq, opset, q.inputs[0]!);
  const attrs = { ...quantAttrs(xq, yq, [...quantRange(yq.dtype)]), table };
  const last = island.nodes[island.nodes.length - 1]!;
  return { layer: qelementwise(g, last, 'qlut', [x], y, attrs, ix.position.get(q)!), nodes: [q, ...island.nodes] };
}

/**
 * A channel gate (squeeze-excitation): Mul(DQ(x), gate) → QuantizeLinear `q`, where x is [N, C, H, W]
 * and the gate [N, C, 1, 1] is DQ(g) or a float island on it (Sigmoid). The gate's float value for
 * each of g's 256 integers is a table; the product is quantized with the float Mul's roundings, as
 * ONNX Runtime's float path computes it.
 */
function matchGate(g: WorkGraph, ix: GraphIndex, q: OnnxNode, opset: number): Match | undefined {
  const mul = ix.producer.get(q.inputs[0] ?? '');
  if (mul === undefined || mul.opType !== 'Mul' || mul.domain !== '' || consumersOf(ix, mul.outputs[0]!).length !== 1) return undefined;
  const y = q.outputs[0]!;
  const ys = shapeOf(g, y);
  if (ys.length !== 4 || g.types.get(y)?.dtype !== 'uint8') return undefined;
  for (const [a, b] of [
    [0, 1],
    [1, 0],
  ] as const) {
    const xdq = ix.producer.get(mul.inputs[a] ?? '');
    const gv = mul.inputs[b] ?? '';
    const gs = g.types.get(gv)?.shape;
    if (xdq?.opType !== 'DequantizeLinear' || xdq.domain !== '' || gs === undefined) continue;
    const xs = shapeOf(g, xdq.outputs[0]!);
    const perChannel = gs.length === 4 && gs[0] === ys[0] && gs[1] === ys[1] && gs[2] === 1 && gs[3] === 1;
    if (!perChannel || xs.length !== 4 || !xs.every((d, i) => d === ys[i])) continue;
    const direct = ix.producer.get(gv);
    const island = direct?.opType === 'DequantizeLinear' ? undefined : lutIslandOf(g, ix, gv, mul);
    const gdq = direct?.opType === 'DequantizeLinear' ? direct : island?.source;
    if (gdq === undefined) continue;
    const [x, gateInput] = [xdq.inputs[0]!, gdq.inputs[0]!];
    if (g.types.get(x)?.dtype !== 'uint8' || g.types.get(gateInput)?.dtype !== 'uint8') continue;
    const xq = perTensor(g, xdq, xdq.inputs[1], xdq.inputs[2], 'uint8', 'input');
    const gq = perTensor(g, gdq, gdq.inputs[1], gdq.inputs[2], 'uint8', 'gate');
    const yq = perTensor(g, q, q.inputs[1], q.inputs[2], 'uint8', 'output');
    const values =
      island === undefined
        ? Array.from({ length: 256 }, (_, v) => dequantizeValue(v, gq.scale, gq.zero))
        : lutValues(g, island, gq, opset, gv);
    const attrs = { ...quantAttrs(xq, yq, [...quantRange(yq.dtype)]), gate: values };
    const layer = qelementwise(g, mul, 'qgate', [x, gateInput], y, attrs, ix.position.get(q)!);
    return { layer, nodes: [q, mul, ...(island?.nodes ?? [])] };
  }
  return undefined;
}

/**
 * Concat(DQ ×n) → BatchNormalization → [Relu | Clip] → QuantizeLinear (DenseNet's pre-activation): the
 * concat requantizes each input with the batch norm folded into a per-channel affine of its integers,
 * (x − x_zero)·A + B with A = x_scale·a/y_scale and B = s/y_scale (float64, rounded once to float32:
 * no division per element), and the activation as a clamp of the output's integers.
 */
function matchConcatAffine(g: WorkGraph, ix: GraphIndex, q: OnnxNode): Match | undefined {
  const single = (n: OnnxNode | undefined): n is OnnxNode =>
    n !== undefined && n.domain === '' && consumersOf(ix, n.outputs[0]!).length === 1;
  let bn = ix.producer.get(q.inputs[0] ?? '');
  let act: OnnxNode | undefined;
  if (single(bn) && (bn.opType === 'Relu' || bn.opType === 'Clip')) {
    act = bn;
    bn = ix.producer.get(act.inputs[0] ?? '');
  }
  if (!single(bn) || bn.opType !== 'BatchNormalization' || bn.outputs.length > 1 || attrInt(bn, 'training_mode', 0) !== 0) return undefined;
  const cat = ix.producer.get(bn.inputs[0] ?? '');
  const y = q.outputs[0]!;
  const ys = shapeOf(g, y);
  if (!single(cat) || cat.opType !== 'Concat' || ys.length !== 4 || cat.inputs.length > MAX_QCONCAT_INPUTS) return undefined;
  const axis = attrInt(cat, 'axis', 0);
  if (axis !== 1 && axis !== -3) return undefined;
  const params = bn.inputs.slice(1, 5).map((v) => g.constants.get(v));
  if (params.some((t) => t === undefined || nums(t).length !== ys[1])) return undefined;
  const [gamma, beta, mean, variance] = params.map((t) => nums(t!));
  const eps = attrFloat(bn, 'epsilon', 1e-5);
  const dqs = cat.inputs.map((v) => ix.producer.get(v));
  if (dqs.some((d) => d?.opType !== 'DequantizeLinear' || d.domain !== '' || g.types.get(d.inputs[0]!)?.dtype !== 'uint8'))
    return undefined;
  if (g.types.get(y)?.dtype !== 'uint8') return undefined;
  const qs = dqs.map((d) => perTensor(g, d!, d!.inputs[1], d!.inputs[2], 'uint8', 'input'));
  const yq = perTensor(g, q, q.inputs[1], q.inputs[2], 'uint8', 'output');
  // The input scale of each output channel: input i covers its own run of channels.
  const inScale = cat.inputs.flatMap((v, i) => new Array<number>(shapeOf(g, v)[1]!).fill(qs[i]!.scale));
  const a = (c: number) => gamma![c]! / Math.sqrt(variance![c]! + eps);
  const scale = Array.from({ length: ys[1]! }, (_, c) => Math.fround((inScale[c]! * a(c)) / yq.scale));
  const shift = Array.from({ length: ys[1]! }, (_, c) => Math.fround((beta![c]! - mean![c]! * a(c)) / yq.scale));
  const attrs = {
    ...quantAttrs(qs[0]!, yq, clampOf(g, act, yq)),
    axis: 1,
    in_scales: qs.map((x) => x.scale),
    in_zeros: qs.map((x) => x.zero),
    affine_scale: scale,
    affine_shift: shift,
  };
  const layer = qelementwise(
    g,
    cat,
    'qconcat',
    dqs.map((d) => d!.inputs[0]!),
    y,
    attrs,
    ix.position.get(q)!,
  );
  return { layer, nodes: [q, cat, bn, ...(act ? [act] : [])] };
}

function qelementwise(
  g: WorkGraph,
  node: OnnxNode,
  op: string,
  inputs: string[],
  y: string,
  attrs: Record<string, AttrValue>,
  position: number,
): LayerDraft {
  return {
    name: node.name,
    op,
    inputs,
    outputs: [y],
    dtype: g.types.get(y)!.dtype,
    position,
    params: {},
    epilogue: [],
    attrs,
    core: undefined,
    macs: shapeOf(g, inputs[0]!).reduce((a, b) => a * b, 1),
  };
}

function constWeight(g: WorkGraph, node: OnnxNode, w: string, scale: string | undefined, zero: string | undefined, axis: number): QWeight {
  const q = g.constants.get(w);
  if (q === undefined)
    throw refuse(node, 'its weight is computed at run time', 'veltair packs weights ahead of time; keep quantized weights as initializers');
  return weightOf(
    node,
    q,
    scale === undefined ? undefined : g.constants.get(scale),
    zero === undefined || zero === '' ? undefined : g.constants.get(zero),
    axis,
  );
}

/** QOperator nodes: the layer is the node. */
function lowerQOperator(g: WorkGraph, n: OnnxNode, position: number): LayerDraft {
  const i = (k: number): string => n.inputs[k] ?? '';
  const act = (k: number, role: string): Quant => perTensor(g, n, i(k + 1), i(k + 2), activationDType(g, n, i(k), role), role);
  const out = (k: number): Quant => perTensor(g, n, i(k), i(k + 1), g.types.get(n.outputs[0]!)!.dtype as QuantDType, 'output');
  const integerInput = (k: number): Quant => ({
    scale: 1,
    zero: scalarOf(i(k) === '' ? undefined : g.constants.get(i(k)), 0),
    dtype: 'uint8',
  });
  switch (n.opType) {
    case 'QLinearConv': {
      const w = constWeight(g, n, i(3), i(4), i(5), 0);
      return qconv(
        g,
        n,
        i(0),
        act(0, 'input'),
        w,
        i(8) === '' ? undefined : g.constants.get(i(8)),
        n.outputs[0]!,
        out(6),
        undefined,
        position,
      );
    }
    case 'ConvInteger': {
      activationDType(g, n, i(0), 'input');
      return qconv(
        g,
        n,
        i(0),
        integerInput(2),
        constWeight(g, n, i(1), undefined, i(3), 0),
        undefined,
        n.outputs[0]!,
        undefined,
        undefined,
        position,
      );
    }
    case 'QLinearMatMul':
      return qmatmul(
        g,
        n,
        i(0),
        act(0, 'input'),
        constWeight(g, n, i(3), i(4), i(5), 1),
        undefined,
        n.outputs[0]!,
        out(6),
        undefined,
        position,
      );
    case 'MatMulInteger':
      activationDType(g, n, i(0), 'input');
      return qmatmul(
        g,
        n,
        i(0),
        integerInput(2),
        constWeight(g, n, i(1), undefined, i(3), 1),
        undefined,
        n.outputs[0]!,
        undefined,
        undefined,
        position,
      );
    case 'QLinearAdd': {
      const bq = act(3, 'second input');
      return qelementwise(
        g,
        n,
        'qadd',
        [i(0), i(3)],
        n.outputs[0]!,
        { ...quantAttrs(act(0, 'input'), out(6), [...quantRange('uint8')]), b_scale: bq.scale, b_zero: bq.zero },
        position,
      );
    }
    default:
      return qelementwise(
        g,
        n,
        'qglobal_avgpool',
        [i(0)],
        n.outputs[0]!,
        quantAttrs(act(0, 'input'), out(3), [...quantRange('uint8')]),
        position,
      );
  }
}

/** A QuantizeLinear / DequantizeLinear left standing: the model's entry into or exit from integers. */
function lowerConversion(g: WorkGraph, n: OnnxNode, position: number): LayerDraft {
  const q = n.opType === 'QuantizeLinear';
  const v = q ? n.outputs[0]! : n.inputs[0]!;
  const d = g.types.get(v)?.dtype;
  if (d !== 'uint8' && d !== 'int8') throw refuse(n, `${d ?? 'untyped'} quantized activation`, REQUANTIZE_HINT);
  const quant = perTensor(g, n, n.inputs[1], n.inputs[2], d, q ? 'output' : 'input');
  return qelementwise(
    g,
    n,
    q ? 'quantize_linear' : 'dequantize_linear',
    [n.inputs[0]!],
    n.outputs[0]!,
    { scale: quant.scale, zero: quant.zero, [QUANT_ATTRS.outDtype]: g.types.get(n.outputs[0]!)!.dtype },
    position,
  );
}

/**
 * Fold every quantized pattern of `g` into layers, keyed by the node that stands for the layer (the
 * QuantizeLinear closing a QDQ pattern, the QOperator node); the other nodes a layer absorbs leave
 * `g`, so later rewrites never see them. A float Conv / MatMul / Gemm that reads a DequantizeLinear
 * output but could not be folded is refused.
 */
export function foldQuantized(g: WorkGraph, dq: ReadonlyMap<string, DequantizedConstant>, opset: number): Map<OnnxNode, LayerDraft> {
  const ix = indexGraph(g);
  const layers = new Map<OnnxNode, LayerDraft>();
  const absorbed = new Set<OnnxNode>();
  for (const n of g.nodes) {
    if (absorbed.has(n)) continue;
    if (n.domain === '' && n.opType === 'QuantizeLinear') {
      const m = matchQdq(g, ix, n, dq) ?? matchConcatAffine(g, ix, n) ?? matchLut(g, ix, n, opset) ?? matchGate(g, ix, n, opset);
      if (m === undefined) continue;
      for (const x of m.nodes) if (x !== n) absorbed.add(x);
      layers.set(n, m.layer);
    } else if ((n.domain === '' || n.domain === 'com.microsoft') && QOPERATORS.has(n.opType)) {
      layers.set(n, lowerQOperator(g, n, ix.position.get(n)!));
    }
  }
  const folded = (c: OnnxNode): boolean => absorbed.has(c) || layers.has(c);
  // A DequantizeLinear whose every reader was folded is gone; one still read stays a layer.
  for (const n of g.nodes) {
    if (n.domain !== '' || (n.opType !== 'DequantizeLinear' && n.opType !== 'QuantizeLinear') || folded(n)) continue;
    const readers = consumersOf(ix, n.outputs[0]!);
    if (n.opType === 'DequantizeLinear') {
      if (readers.length > 0 && readers.every(folded) && !g.graphOutputs.has(n.outputs[0]!)) {
        absorbed.add(n);
        continue;
      }
      const core = readers.find((c) => CORE_OPS.has(c.opType) && c.domain === '' && !folded(c));
      if (core !== undefined)
        throw refuse(core, 'reads a quantized activation but its output is not quantized (no QuantizeLinear after it)', REQUANTIZE_HINT);
    }
    layers.set(n, lowerConversion(g, n, ix.position.get(n)!));
  }
  g.nodes = g.nodes.filter((n) => !absorbed.has(n));
  return layers;
}

export const QUANTIZED_LAYER_OPS: ReadonlySet<string> = new Set([
  'qconv2d',
  'qmatmul',
  'qadd',
  'qmaxpool',
  'qglobal_avgpool',
  'qconcat',
  'qlut',
  'qgate',
  'qavgpool',
  'quantize_linear',
  'dequantize_linear',
]);
