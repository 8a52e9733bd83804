/**
 * CNN layers as exporters emit them: Conv, BatchNormalization and the activation as separate
 * nodes (no folding here: folding is veltair's job), parameters named like PyTorch state_dict
 * entries (`layer1.0.conv1.weight`, `layer1.0.bn1.running_var`).
 */
import type { AttrInput } from '../onnx/encode.js';
import { internalError } from '../errors.js';
import { type GraphBuilder, type Value, binary, flatten, unary } from './builder.js';
import { uniformArray } from './rng.js';

/**
 * Spatial padding: a symmetric amount, explicit ONNX pads [top, left, bottom, right], or the
 * auto_pad attribute SAME_UPPER (output = ⌈input / stride⌉, extra padding at the end).
 */
export type Padding = number | readonly [number, number, number, number] | 'SAME_UPPER';

/** Standard deviation of the small seeded biases (convs with bias, dense layers). */
const BIAS_STD = 0.01;

function explicitPads(p: Exclude<Padding, 'SAME_UPPER'>): readonly [number, number, number, number] {
  return typeof p === 'number' ? [p, p, p, p] : p;
}

function windowOut(size: number, kernel: number, stride: number, padBegin: number, padEnd: number, ceil: boolean): number {
  const span = size + padBegin + padEnd - kernel;
  if (span < 0) throw internalError(`zoo builder: window ${kernel} does not fit input ${size}`);
  return (ceil ? Math.ceil(span / stride) : Math.floor(span / stride)) + 1;
}

/** Output [H, W] of a sliding window (conv or pool) and the attributes that express its padding. */
function window(
  x: Value,
  kernel: number,
  stride: number,
  padding: Padding,
  ceil = false,
): { hw: [number, number]; attrs: Record<string, AttrInput> } {
  const [h, w] = [x.shape[2] ?? 0, x.shape[3] ?? 0];
  if (padding === 'SAME_UPPER') {
    return { hw: [Math.ceil(h / stride), Math.ceil(w / stride)], attrs: { auto_pad: 'SAME_UPPER' } };
  }
  const [t, l, bo, r] = explicitPads(padding);
  return {
    hw: [windowOut(h, kernel, stride, t, bo, ceil), windowOut(w, kernel, stride, l, r, ceil)],
    attrs: { pads: [t, l, bo, r] },
  };
}

/**
 * TensorFlow's SAME padding made explicit, as tf2onnx writes it: output ⌈in/stride⌉, and the odd
 * pixel of padding goes at the bottom/right.
 */
export function tfSamePadding(x: Value, kernel: number, stride: number): [number, number, number, number] {
  const pad = (size: number): [number, number] => {
    const out = Math.ceil(size / stride);
    const total = Math.max((out - 1) * stride + kernel - size, 0);
    return [Math.floor(total / 2), total - Math.floor(total / 2)];
  };
  const [t, bo] = pad(x.shape[2] ?? 0);
  const [l, r] = pad(x.shape[3] ?? 0);
  return [t, l, bo, r];
}

export interface ConvOptions {
  readonly out: number;
  readonly kernel: number;
  readonly stride?: number;
  readonly padding?: Padding;
  readonly groups?: number;
  /** PyTorch convs followed by BN have none; heads and SE convs do. */
  readonly bias?: boolean;
}

export function conv(b: GraphBuilder, name: string, x: Value, o: ConvOptions): Value {
  const [n, cin] = [x.shape[0] ?? 0, x.shape[1] ?? 0];
  const groups = o.groups ?? 1;
  const stride = o.stride ?? 1;
  if (cin % groups !== 0 || o.out % groups !== 0)
    throw internalError(`zoo builder: ${name} groups ${groups} do not divide ${cin}→${o.out}`);
  const { hw, attrs } = window(x, o.kernel, stride, o.padding ?? 0);
  const fanIn = (cin / groups) * o.kernel * o.kernel;
  const weight = b.heWeight(`${name}.weight`, [o.out, cin / groups, o.kernel, o.kernel], fanIn);
  const inputs = [x, weight];
  if (o.bias === true) inputs.push(b.normalWeight(`${name}.bias`, [o.out], BIAS_STD));
  return b.node('Conv', name, inputs, [n, o.out, ...hw], {
    kernel_shape: [o.kernel, o.kernel],
    strides: [stride, stride],
    dilations: [1, 1],
    group: groups,
    ...attrs,
  });
}

/**
 * Inference BatchNormalization with plausible running statistics: γ≈1, β≈0, mean≈0, var≈1 with
 * seeded jitter, so BN folding has something real to fold and a wrong fold changes the output.
 */
export function batchNorm(b: GraphBuilder, name: string, x: Value, epsilon = 1e-5): Value {
  const c = x.shape[1] ?? 0;
  const scale = b.floats(`${name}.weight`, [c], uniformArray(b.rng, c, 0.9, 1.1));
  const bias = b.normalWeight(`${name}.bias`, [c], 0.05);
  const mean = b.normalWeight(`${name}.running_mean`, [c], 0.05);
  const variance = b.floats(`${name}.running_var`, [c], uniformArray(b.rng, c, 0.9, 1.1));
  return b.node('BatchNormalization', name, [x, scale, bias, mean, variance], x.shape, { epsilon: { float: epsilon } });
}

export type Activation = 'relu' | 'relu6' | 'silu' | 'leaky0.1' | 'none';

export function relu(b: GraphBuilder, name: string, x: Value): Value {
  return unary(b, 'Relu', name, x);
}

/** ReLU6 at opset 13: Clip with min/max as inputs (attributes were dropped at opset 11). */
export function relu6(b: GraphBuilder, name: string, x: Value): Value {
  return b.node('Clip', name, [x, b.scalar('const.relu6.min', 0), b.scalar('const.relu6.max', 6)], x.shape);
}

/** SiLU / Swish as PyTorch exports it before opset 14 has no SiLU op: x · Sigmoid(x). */
export function silu(b: GraphBuilder, name: string, x: Value): Value {
  const gate = unary(b, 'Sigmoid', `${name}.sigmoid`, x);
  return binary(b, 'Mul', name, x, gate);
}

export function activation(b: GraphBuilder, kind: Activation, name: string, x: Value): Value {
  switch (kind) {
    case 'relu':
      return relu(b, name, x);
    case 'relu6':
      return relu6(b, name, x);
    case 'silu':
      return silu(b, name, x);
    case 'leaky0.1':
      return unary(b, 'LeakyRelu', name, x, { alpha: { float: 0.1 } });
    case 'none':
      return x;
  }
}

export interface ConvBnActOptions extends ConvOptions {
  readonly act: Activation;
  readonly bnEpsilon?: number;
}

/** Node names of a conv → BN → activation unit; `act` may be left out when the activation is 'none'. */
export interface ConvBnActNames {
  readonly conv: string;
  readonly bn: string;
  readonly act?: string;
}

/** Conv (no bias: BN supplies it) → BatchNormalization → activation, the unit most CNNs repeat. */
export function convBnAct(b: GraphBuilder, names: ConvBnActNames, x: Value, o: ConvBnActOptions): Value {
  const y = conv(b, names.conv, x, { ...o, bias: false });
  const z = batchNorm(b, names.bn, y, o.bnEpsilon);
  if (o.act === 'none') return z;
  if (names.act === undefined) throw internalError(`zoo builder: ${names.conv} needs a name for its ${o.act}`);
  return activation(b, o.act, names.act, z);
}

export interface PoolOptions {
  readonly kernel: number;
  readonly stride: number;
  readonly padding?: Padding;
  readonly ceil?: boolean;
}

export function maxPool(b: GraphBuilder, name: string, x: Value, o: PoolOptions): Value {
  const { hw, attrs } = window(x, o.kernel, o.stride, o.padding ?? 0, o.ceil === true);
  return b.node('MaxPool', name, [x], [x.shape[0] ?? 0, x.shape[1] ?? 0, ...hw], {
    kernel_shape: [o.kernel, o.kernel],
    strides: [o.stride, o.stride],
    ...attrs,
    ...(o.ceil === true ? { ceil_mode: 1 } : {}),
  });
}

export function globalAvgPool(b: GraphBuilder, name: string, x: Value): Value {
  return b.node('GlobalAveragePool', name, [x], [x.shape[0] ?? 0, x.shape[1] ?? 0, 1, 1]);
}

/** nn.Linear on a 2-D input as PyTorch exports it: Gemm(x, W[out, in], b, transB = 1). */
export function gemm(b: GraphBuilder, name: string, x: Value, outFeatures: number): Value {
  const inFeatures = x.shape[1] ?? 0;
  const weight = b.heWeight(`${name}.weight`, [outFeatures, inFeatures], inFeatures);
  const bias = b.normalWeight(`${name}.bias`, [outFeatures], BIAS_STD);
  return b.node('Gemm', name, [x, weight, bias], [x.shape[0] ?? 0, outFeatures], {
    alpha: { float: 1 },
    beta: { float: 1 },
    transB: 1,
  });
}

/** The classifier tail shared by the ImageNet models: GlobalAveragePool → Flatten → Gemm. */
export function classifier(b: GraphBuilder, x: Value, classes: number, fcName = 'fc'): Value {
  const pooled = globalAvgPool(b, 'avgpool', x);
  const flat = flatten(b, 'flatten', pooled);
  return gemm(b, fcName, flat, classes);
}
