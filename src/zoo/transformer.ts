/**
 * Transformer-encoder pieces in the exact node patterns PyTorch's exporter emits at opset 13
 * (before LayerNormalization and GELU existed as ONNX ops), which veltair must recognise:
 * Linear as MatMul + Add, LayerNorm decomposed, GELU through Erf.
 */
import { type GraphBuilder, type Value, binary, matmul, reduceMean, unary } from './builder.js';
import { heNormal, normalArray, uniformArray } from './rng.js';

/** nn.Linear on a 3-D input: MatMul(x, Wᵀ stored as [in, out]) → Add(bias). */
export function linear(b: GraphBuilder, name: string, x: Value, outFeatures: number): Value {
  const inFeatures = x.shape[x.shape.length - 1];
  const weight = b.floats(`${name}.weight`, [inFeatures, outFeatures], heNormal(b.rng, inFeatures * outFeatures, inFeatures));
  const bias = b.floats(`${name}.bias`, [outFeatures], normalArray(b.rng, outFeatures, 0.01));
  return binary(b, 'Add', name, matmul(b, `${name}.matmul`, x, weight), bias);
}

/**
 * LayerNorm over the last axis as PyTorch exports it below opset 17:
 * ReduceMean → Sub → Pow 2 → ReduceMean → Add ε → Sqrt → Div → Mul γ → Add β.
 */
export function layerNorm(b: GraphBuilder, name: string, x: Value, epsilon: number): Value {
  const width = x.shape[x.shape.length - 1];
  const mean = reduceMean(b, `${name}.mean`, x, [-1]);
  const centered = binary(b, 'Sub', `${name}.centered`, x, mean);
  const squared = binary(b, 'Pow', `${name}.squared`, centered, b.scalar('const.two', 2));
  const variance = reduceMean(b, `${name}.variance`, squared, [-1]);
  const padded = binary(b, 'Add', `${name}.variance_eps`, variance, b.scalar(`const.eps_${epsilon}`, epsilon));
  const std = unary(b, 'Sqrt', `${name}.std`, padded);
  const normed = binary(b, 'Div', `${name}.normed`, centered, std);
  const gamma = b.floats(`${name}.weight`, [width], uniformArray(b.rng, width, 0.9, 1.1));
  const beta = b.floats(`${name}.bias`, [width], normalArray(b.rng, width, 0.02));
  return binary(b, 'Add', name, binary(b, 'Mul', `${name}.scaled`, normed, gamma), beta);
}

/** Exact GELU as PyTorch exports it: x · 0.5 · (1 + erf(x / √2)) → Div, Erf, Add, Mul, Mul. */
export function geluErf(b: GraphBuilder, name: string, x: Value): Value {
  const scaled = binary(b, 'Div', `${name}.div`, x, b.scalar('const.sqrt2', Math.SQRT2));
  const erf = unary(b, 'Erf', `${name}.erf`, scaled);
  const onePlus = binary(b, 'Add', `${name}.add`, erf, b.scalar('const.one', 1));
  const gated = binary(b, 'Mul', `${name}.mul`, x, onePlus);
  return binary(b, 'Mul', name, gated, b.scalar('const.half', 0.5));
}
