/**
 * The trained network as a standard ONNX model (opset 17, only Gemm, Relu, Tanh, Softmax,
 * Sigmoid), so ONNX Runtime, or `veltair compile`, runs it densely:
 *   features [N, input] → Gemm(layers.0.weight [input, d0], layers.0.bias)      (input-major)
 *                       → act → Gemm(h, layers.l.weight [dl, dl-1], layers.l.bias, transB=1) → …
 *                       → Softmax(axis=1) | Sigmoid → scores [N, classes]
 * Layer 0 keeps the input-major layout it trains in; every later layer is neuron-major, the layout
 * the hash index (hash-index.ts) names by initializer.
 */
import { internalError, userError } from '../errors.js';
import { encodeModel, type NodeSpec } from '../onnx/encode.js';
import type { Tensor } from '../onnx/model.js';
import type { SparseLayer } from './layers.js';

export const ONNX_INPUT = 'features';
export const ONNX_OUTPUT = 'scores';
export const weightName = (l: number) => `layers.${l}.weight`;
export const biasName = (l: number) => `layers.${l}.bias`;

/** protobuf cannot encode a message of 2 GiB or more; leave room for the graph. */
const MAX_ONNX_BYTES = 2 ** 31 - 2 ** 24;

export interface LayerWeights {
  readonly w: Float32Array;
  readonly b: Float32Array;
}

export function exportOnnx(layers: readonly SparseLayer[], weights: readonly LayerWeights[], producer: string): Uint8Array {
  const bytes = weights.reduce((s, w) => s + w.w.byteLength + w.b.byteLength, 0);
  if (bytes > MAX_ONNX_BYTES) {
    throw userError(
      'NOT_ENOUGH_MEMORY',
      `the trained weights take ${(bytes / 2 ** 30).toFixed(2)} GiB, more than one ONNX file can hold (2 GiB)`,
      'the checkpoint in the output directory has the weights; a smaller network exports',
    );
  }
  const initializers: [string, Tensor][] = [];
  const nodes: NodeSpec[] = [];
  let x = ONNX_INPUT;
  layers.forEach((l, i) => {
    const w = weights[i];
    if (!w || w.w.length !== l.inputDim * l.dim || w.b.length !== l.dim)
      throw internalError(`layer ${i}: weights do not match ${l.inputDim}x${l.dim}`);
    const dims = i === 0 ? [l.inputDim, l.dim] : [l.dim, l.inputDim];
    initializers.push(
      [weightName(i), { dtype: 'float32', dims, data: w.w }],
      [biasName(i), { dtype: 'float32', dims: [l.dim], data: w.b }],
    );
    const last = i === layers.length - 1;
    const z = last && l.activation === 'linear' ? ONNX_OUTPUT : `layers.${i}.linear`;
    nodes.push({
      op: 'Gemm',
      name: `layers.${i}.gemm`,
      inputs: [x, weightName(i), biasName(i)],
      outputs: [z],
      attrs: i === 0 ? {} : { transB: 1 },
    });
    const out = last ? ONNX_OUTPUT : `layers.${i}.out`;
    switch (l.activation) {
      case 'relu':
        nodes.push({ op: 'Relu', name: `layers.${i}.relu`, inputs: [z], outputs: [out] });
        break;
      case 'tanh':
        nodes.push({ op: 'Tanh', name: `layers.${i}.tanh`, inputs: [z], outputs: [out] });
        break;
      case 'softmax':
        nodes.push({ op: 'Softmax', name: `layers.${i}.softmax`, inputs: [z], outputs: [out], attrs: { axis: 1 } });
        break;
      case 'sigmoid':
        nodes.push({ op: 'Sigmoid', name: `layers.${i}.sigmoid`, inputs: [z], outputs: [out] });
        break;
      case 'linear':
        break;
    }
    x = l.activation === 'linear' ? z : out;
  });
  const classes = layers[layers.length - 1]!.dim;
  return encodeModel({
    graphName: 'veltair_sparse_trained',
    producer,
    inputs: [{ name: ONNX_INPUT, dtype: 'float32', shape: ['N', layers[0]!.inputDim] }],
    outputs: [{ name: ONNX_OUTPUT, dtype: 'float32', shape: ['N', classes] }],
    initializers,
    nodes,
  });
}
