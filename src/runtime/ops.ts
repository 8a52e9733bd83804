/**
 * The native op library's contract: op codes and function codes, mirrored from
 * native-kernels/runtime/vt_rt.h and the ops_*.c files (each C file's header comment documents the
 * ints/floats layout of its op). Keep the numbers in sync with the C enums.
 *
 * Op catalogue (layer op, as src/ir names it: the lower-case ONNX op, or conv2d/dense/batch_matmul):
 *
 * | layer op                               | native op        | attrs used                                   | layouts            |
 * |----------------------------------------|------------------|----------------------------------------------|--------------------|
 * | conv2d, dense, batch_matmul            | KERNEL           | (the kernel's own; bias, epilogue params)    | nchw{V}c / rows{V} |
 * | reorder (plan step)                    | REORDER          | from, to                                     | any pair           |
 * | maxpool, averagepool                   | POOL             | kernel, strides, pads, dilations, count_include_pad (ceil_mode via output shape) | nchw, nchw{V}c |
 * | globalaveragepool, globalmaxpool       | GLOBAL_POOL      | —                                            | nchw, nchw{V}c     |
 * | relu clip leakyrelu sigmoid hardsigmoid hardswish silu tanh gelu erf exp log sqrt neg abs reciprocal floor ceil round sin cos softplus elu selu sign | UNARY | min/max (clip), alpha, beta, gamma (selu), approximate (gelu) | nchw, nchw{V}c (padded lanes re-zeroed) |
 * | add sub mul div pow max min mod prelu  | BINARY           | (multidirectional broadcast)                 | nchw; same-shape nchw{V}c |
 * | add sub mul div max min (channel gate) | BINARY_CHANNEL   | b of shape [N or 1, C, 1, 1]                 | nchw{V}c           |
 * | equal less greater lessorequal greaterorequal | BINARY    | → bool                                       | nchw               |
 * | where                                  | WHERE            | (broadcast)                                  | nchw               |
 * | softmax, logsoftmax                    | SOFTMAX          | axis, coerce2d (opset < 13)                  | nchw               |
 * | layernormalization                     | LAYERNORM        | axis, epsilon; Scale, B                      | nchw               |
 * | batchnormalization (inference)         | CHANNEL_AFFINE   | epsilon; scale, B, input_mean, input_var     | nchw, nchw{V}c     |
 * | concat                                 | STRIDED_COPY     | axis                                         | nchw; nchw{V}c on axis 1 at multiples of V |
 * | transpose, slice, split, expand, pad (constant) | STRIDED_COPY | perm / starts ends axes steps / axis split / shape / pads constant_value mode | nchw |
 * | reshape flatten squeeze unsqueeze identity dropout | (none: in place) or COPY | —                         | nchw               |
 * | gather                                 | GATHER           | axis (int32/int64 indices, any data dtype)   | nchw               |
 * | reducemean reducesum reducemax reducemin reduceprod reducesumsquare reducel1 reducel2 | REDUCE | axes, keepdims, noop_with_empty_axes | nchw |
 * | cast                                   | CAST             | to (output dtype)                            | nchw               |
 */

export const OP = {
  KERNEL: 0, COPY: 1, REORDER: 2, POOL: 3, GLOBAL_POOL: 4, UNARY: 5, BINARY: 6, BINARY_CHANNEL: 7, WHERE: 8,
  SOFTMAX: 9, LAYERNORM: 10, CHANNEL_AFFINE: 11, STRIDED_COPY: 12, GATHER: 13, REDUCE: 14, CAST: 15,
} as const;
export type OpCode = (typeof OP)[keyof typeof OP];

/** ops_unary.c function codes, keyed by every spelling a layer may use. */
export const UNARY_FN: Readonly<Record<string, number>> = {
  relu: 0, clip: 1, leakyrelu: 2, leaky_relu: 2, sigmoid: 3, hardsigmoid: 4, hard_sigmoid: 4, hardswish: 5,
  hard_swish: 5, silu: 6, tanh: 7, gelu: 8, gelu_tanh: 9, erf: 10, exp: 11, log: 12, sqrt: 13, neg: 14, abs: 15,
  reciprocal: 16, floor: 17, ceil: 18, round: 19, sin: 20, cos: 21, softplus: 22, elu: 23, selu: 24, sign: 25,
};

/** ops_binary.c function codes. Codes >= 9 write bool. */
export const BINARY_FN: Readonly<Record<string, number>> = {
  add: 0, sub: 1, mul: 2, div: 3, pow: 4, max: 5, min: 6, mod: 7, prelu: 8,
  equal: 9, less: 10, greater: 11, lessorequal: 12, greaterorequal: 13,
};
export const FIRST_COMPARISON = 9;

/** ops_reduce.c function codes. */
export const REDUCE_FN: Readonly<Record<string, number>> = {
  reducesum: 0, reducemean: 1, reducemax: 2, reducemin: 3, reduceprod: 4, reducesumsquare: 5, reducel1: 6, reducel2: 7,
};

/** vt_kind: element kinds for CAST and the fill of STRIDED_COPY. */
export const KIND: Readonly<Record<string, number>> = {
  float32: 0, float64: 1, int32: 2, int64: 3, int8: 4, uint8: 5, bool: 6, int16: 7, uint16: 8,
};

/** REORDER layout kinds. */
export const LAYOUT_KIND = { natural: 0, blocked: 1, rows: 2 } as const;

/** Pool kinds (POOL, GLOBAL_POOL). */
export const POOL_KIND = { max: 0, average: 1 } as const;
