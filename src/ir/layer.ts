/**
 * The layer IR: what every stage after the front end reads. A LayerGraph is a list of layers in
 * execution order over named activation values with static shapes; constants (packed later) hang off
 * the layers that own them.
 */
import type { DType, Tensor } from '../onnx/model.js';
import type { Workload } from './workload.js';

export type Activation =
  | { readonly fn: 'relu' }
  | { readonly fn: 'clip'; readonly min: number; readonly max: number }
  | { readonly fn: 'leaky_relu'; readonly alpha: number }
  | { readonly fn: 'sigmoid' }
  | { readonly fn: 'hard_sigmoid'; readonly alpha: number; readonly beta: number }
  | { readonly fn: 'hard_swish' }
  | { readonly fn: 'silu' }
  | { readonly fn: 'tanh' }
  | { readonly fn: 'gelu' }
  /** GELU's tanh approximation (PyTorch approximate='tanh', HF gelu_new): a different function. */
  | { readonly fn: 'gelu_tanh' };

/**
 * Epilogue steps run in order on each output element of a tunable layer, after the reduction.
 * A folded BatchNormalization leaves no step: it is baked into the layer's weight and bias.
 */
export type EpilogueStep =
  | { readonly kind: 'bias' }
  | { readonly kind: 'activation'; readonly activation: Activation }
  /** Elementwise add (or mul) of another activation value of the output's shape (residual). */
  | { readonly kind: 'residual_add'; readonly value: string }
  /** Per-output-channel multiply by a sigmoid gate computed elsewhere (squeeze-excite). */
  | { readonly kind: 'channel_mul'; readonly value: string };

export type TunableOp = 'conv2d' | 'dense' | 'batch_matmul';

export interface Layer {
  readonly index: number;
  /** The ONNX node name it came from (model-supplied; display only). */
  readonly name: string;
  /** conv2d | dense | batch_matmul | the lower-case ONNX op (maxpool, softmax, layernorm, gelu…). */
  readonly op: string;
  /**
   * Activation values read (constants excluded), in the op's argument order, followed by the
   * operands of epilogue steps (residual_add / channel_mul values) in step order.
   */
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly inputShapes: readonly (readonly number[])[];
  readonly outputShape: readonly number[];
  readonly dtype: DType;
  /** Op attributes after normalisation (pads resolved, axes positive…). */
  readonly attrs: Readonly<Record<string, number | string | readonly number[]>>;
  /** Constant operands this layer owns: weight (OIHW for conv, KxN for dense), bias, others. */
  readonly params: Readonly<Record<string, Tensor>>;
  readonly epilogue: readonly EpilogueStep[];
  /** Multiply-accumulates (or elementwise ops for non-tunable layers), exact integer. */
  readonly macs: number;
  readonly tunable: boolean;
  readonly workload: Workload | undefined;
}

export interface LayerGraph {
  readonly layers: readonly Layer[];
  readonly inputs: readonly { readonly name: string; readonly dtype: DType; readonly shape: readonly number[] }[];
  readonly outputs: readonly { readonly name: string; readonly dtype: DType; readonly shape: readonly number[] }[];
  /** Every activation value's shape (inputs, layer outputs). */
  readonly shapes: ReadonlyMap<string, readonly number[]>;
  /** Element types of layer outputs where a layer's outputs differ (TopK: values and int64 indices); default the layer's dtype. */
  readonly dtypes?: ReadonlyMap<string, DType>;
}
