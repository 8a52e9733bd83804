/**
 * The native op library's contract as the translator uses it: op and function codes come from the
 * one ABI table (src/toolchain/abi.ts, generated into vt_abi.h for the C side), keyed here by the
 * spellings layers use; each ops_*.c file's header comment documents the ints/floats layout of its op.
 *
 * Op catalogue (layer op, as src/ir names it: the lower-case ONNX op, or conv2d/dense/batch_matmul):
 *
 * | layer op                               | native op        | attrs used                                   | layouts            |
 * |----------------------------------------|------------------|----------------------------------------------|--------------------|
 * | conv2d, dense, batch_matmul            | KERNEL           | (the kernel's own; bias, epilogue params)    | nchw{V}c / rows{V} |
 * | reorder (plan step)                    | REORDER          | from, to                                     | any pair           |
 * | maxpool, averagepool                   | POOL | kernel, strides, pads, dilations, count_include_pad (ceil_mode via output shape) | nchw, nchw{V}c |
 * | globalaveragepool, globalmaxpool       | GLOBAL_POOL      | — (from nchw{V}c: out nchw, nchw{V}c or rows{V}) | nchw, nchw{V}c |
 * | relu clip leakyrelu sigmoid hardsigmoid hardswish silu tanh gelu erf exp log sqrt | UNARY | min/max (clip), alpha, beta, gamma (selu), | nchw, nchw{V}c |
 * |   neg abs reciprocal floor ceil round sin cos softplus elu selu sign |  | approximate (gelu) | (padded lanes re-zeroed) |
 * | add sub mul div pow max min mod prelu  | BINARY           | (multidirectional broadcast)                 | nchw; same-shape nchw{V}c |
 * | add sub mul div max min (channel gate) | BINARY_CHANNEL   | b of shape [N or 1, C, 1, 1]                 | nchw{V}c           |
 * | equal less greater lessorequal greaterorequal | BINARY    | → bool                                       | nchw               |
 * | where                                  | WHERE            | (broadcast)                                  | nchw               |
 * | softmax, logsoftmax                    | SOFTMAX          | axis, coerce2d (opset < 13)                  | nchw               |
 * | layernormalization                     | LAYERNORM        | axis, epsilon; Scale, B                      | nchw               |
 * | batchnormalization (inference)         | CHANNEL_AFFINE   | epsilon; scale, B, input_mean, input_var     | nchw, nchw{V}c     |
 * | concat                                 | STRIDED_COPY / CHANNEL_GATHER | axis (inputs already in their slice are skipped) | nchw; nchw{V}c on axis 1 |
 * | split, slice (channel axis)            | STRIDED_COPY / CHANNEL_GATHER | axis, split / starts ends (step 1)   | nchw; nchw{V}c on axis 1 |
 * | channelgather (fused shuffle/concat/split) | CHANNEL_GATHER | sources (input, channel per output channel) | nchw, nchw{V}c   |
 * | elementwise_chain (fused)              | ELEMENTWISE_CHAIN | chain (steps), operands, params             | nchw, nchw{V}c     |
 * | transpose, slice, split, expand, pad (constant) | STRIDED_COPY | perm / starts ends axes steps / axis split / shape / pads value mode | nchw (*) |
 *   (*) transpose also from nchw{V}c
 * | reshape flatten squeeze unsqueeze identity dropout | (none: in place) or COPY | —                         | nchw (**)          |
 *   (**) and nchw{V}c [N, C, 1, 1] to rows{V} [N, C], in place: the same bytes
 * | gather                                 | GATHER           | axis (int32/int64 indices, any data dtype)   | nchw               |
 * | reducemean reducesum reducemax reducemin reduceprod reducesumsquare reducel1 reducel2 | REDUCE | axes, keepdims, noop_with_empty_axes | nchw |
 * | cast                                   | CAST             | to (output dtype)                            | nchw               |
 * | topk                                   | TOPK             | axis, K, largest (values float32, indices int64, sorted) | nchw      |
 * | resize (H, W; linear or nearest)       | RESIZE           | mode, coordinate_transformation_mode, nearest_mode, scales | nchw |
 * | qconv2d, qmatmul (with versions)       | QKERNEL          | (the INT8 kernel's own: qkernel-step.ts)     | nhwc / rows        |
 * | quantize_linear, dequantize_linear     | QUANTIZE, DEQUANTIZE | scale, zero, out_dtype                   | float nchw, nchw{V}c ↔ nhwc |
 * | qadd, qmaxpool, qglobal_avgpool        | QADD, QMAXPOOL, QGLOBAL_AVGPOOL | requantization (quant-layer.ts); b_scale, b_zero; window | nhwc |
 * | qconcat, qlut, qgate, qavgpool         | QCONCAT, QLUT, QGATE, QAVGPOOL | axis, in_scales, in_zeros; table; gate; window | nhwc |
 */
import {
  BINARY_ENUM,
  CHAIN_STEP_ENUM,
  codesOf,
  KIND_ENUM,
  LAYOUT_ENUM,
  OPERAND_ENUM,
  POOL_ENUM,
  REDUCE_ENUM,
  RUNTIME_OP_ENUM,
  UNARY_ENUM,
} from '../toolchain/abi.js';

const RT = codesOf(RUNTIME_OP_ENUM);

/** Native op codes (enum vt_rt_op). */
export const OP = {
  KERNEL: RT.kernel,
  COPY: RT.copy,
  REORDER: RT.reorder,
  POOL: RT.pool,
  GLOBAL_POOL: RT.global_pool,
  UNARY: RT.unary,
  BINARY: RT.binary,
  BINARY_CHANNEL: RT.binary_channel,
  WHERE: RT.where,
  SOFTMAX: RT.softmax,
  LAYERNORM: RT.layernorm,
  CHANNEL_AFFINE: RT.channel_affine,
  STRIDED_COPY: RT.strided_copy,
  GATHER: RT.gather,
  REDUCE: RT.reduce,
  CAST: RT.cast,
  TOPK: RT.topk,
  CHANNEL_GATHER: RT.channel_gather,
  ELEMENTWISE_CHAIN: RT.elementwise_chain,
  RESIZE: RT.resize,
  QUANTIZE: RT.quantize,
  DEQUANTIZE: RT.dequantize,
  QADD: RT.qadd,
  QMAXPOOL: RT.qmaxpool,
  QGLOBAL_AVGPOOL: RT.qglobal_avgpool,
  QKERNEL: RT.qkernel,
  QCONCAT: RT.qconcat,
  QLUT: RT.qlut,
  QGATE: RT.qgate,
  QAVGPOOL: RT.qavgpool,
} as const;
export type OpCode = (typeof OP)[keyof typeof OP];

/** A code table keyed by spellings (spelling → ABI name). */
function bySpelling<N extends string>(
  codes: Readonly<Record<N, number>>,
  spellings: Readonly<Record<string, N>>,
): Readonly<Record<string, number>> {
  return Object.fromEntries(Object.entries(spellings).map(([spelling, name]) => [spelling, codes[name as N]]));
}

/** The ABI's names plus `aliases`: a code table keyed by every spelling a layer may use. */
function withAliases<N extends string>(
  codes: Readonly<Record<N, number>>,
  aliases: Readonly<Record<string, N>>,
): Readonly<Record<string, number>> {
  return { ...codes, ...bySpelling(codes, aliases) };
}

/** ops_unary.c function codes (ONNX spellings and the IR's activation names). */
export const UNARY_FN = withAliases(codesOf(UNARY_ENUM), { leakyrelu: 'leaky_relu', hardsigmoid: 'hard_sigmoid', hardswish: 'hard_swish' });

/** ops_binary.c function codes (ONNX spellings). Codes >= FIRST_COMPARISON write bool. */
export const BINARY_FN = withAliases(codesOf(BINARY_ENUM), { lessorequal: 'less_or_equal', greaterorequal: 'greater_or_equal' });
export const FIRST_COMPARISON = codesOf(BINARY_ENUM).equal;

/** ops_reduce.c function codes, by ONNX op name. */
export const REDUCE_FN = bySpelling(codesOf(REDUCE_ENUM), {
  reducesum: 'sum',
  reducemean: 'mean',
  reducemax: 'max',
  reducemin: 'min',
  reduceprod: 'prod',
  reducesumsquare: 'sum_square',
  reducel1: 'l1',
  reducel2: 'l2',
});

/** vt_kind: element kinds for CAST and the fill of STRIDED_COPY, by dtype. */
export const KIND: Readonly<Record<string, number>> = codesOf(KIND_ENUM);

/** REORDER layout kinds. */
export const LAYOUT_KIND = codesOf(LAYOUT_ENUM);

/** Pool kinds (POOL, GLOBAL_POOL). */
export const POOL_KIND = codesOf(POOL_ENUM);

/** ELEMENTWISE_CHAIN step kinds and operand broadcasts. */
export const CHAIN_STEP = codesOf(CHAIN_STEP_ENUM);
export const OPERAND_KIND = codesOf(OPERAND_ENUM);
