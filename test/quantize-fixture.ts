/**
 * A small float CNN with every pattern `veltair quantize` quantizes and the IR folds: Conv+bias+Relu,
 * MaxPool, a second Conv, a residual Add+Relu (as ResNet's), GlobalAveragePool, Flatten and a Gemm (transB) head.
 * Seeded weights; written with the project's own ONNX encoder.
 */
import { encodeModel } from '../src/onnx/encode.js';
import type { Tensor } from '../src/onnx/model.js';
import { seededFloats } from '../src/random.js';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { cpuInfo } from '../src/toolchain/cpu.js';

const f32 = (dims: number[], seed: number, scale: number): Tensor => ({
  dtype: 'float32',
  dims,
  data: seededFloats(
    dims.reduce((a, b) => a * b, 1),
    seed,
    -scale,
    scale,
  ),
});

export function smallCnn(): Uint8Array {
  return encodeModel({
    opset: 17,
    inputs: [{ name: 'input', dtype: 'float32', shape: [1, 3, 16, 16] }],
    outputs: [{ name: 'logits', dtype: 'float32', shape: [1, 10] }],
    initializers: [
      ['w1', f32([8, 3, 3, 3], 1, 0.5)],
      ['b1', f32([8], 2, 0.1)],
      ['w2', f32([8, 8, 3, 3], 3, 0.25)],
      ['b2', f32([8], 4, 0.1)],
      ['wf', f32([10, 8], 5, 0.5)],
      ['bf', f32([10], 6, 0.1)],
    ],
    nodes: [
      { op: 'Conv', name: 'conv1', inputs: ['input', 'w1', 'b1'], outputs: ['c1'], attrs: { pads: [1, 1, 1, 1] } },
      { op: 'Relu', name: 'relu1', inputs: ['c1'], outputs: ['r1'] },
      { op: 'MaxPool', name: 'pool1', inputs: ['r1'], outputs: ['p1'], attrs: { kernel_shape: [2, 2], strides: [2, 2] } },
      { op: 'Conv', name: 'conv2', inputs: ['p1', 'w2', 'b2'], outputs: ['c2'], attrs: { pads: [1, 1, 1, 1] } },
      { op: 'Add', name: 'residual', inputs: ['c2', 'p1'], outputs: ['s0'] },
      { op: 'Relu', name: 'relu2', inputs: ['s0'], outputs: ['s'] },
      { op: 'GlobalAveragePool', name: 'gap', inputs: ['s'], outputs: ['g'] },
      { op: 'Flatten', name: 'flatten', inputs: ['g'], outputs: ['f'] },
      { op: 'Gemm', name: 'fc', inputs: ['f', 'wf', 'bf'], outputs: ['logits'], attrs: { transB: 1 } },
    ],
  });
}

/**
 * Two dense layers whose second bias is Identity(the first's), and a ReLU6 whose bounds are Identity
 * of shared constants, as PyTorch's exporter writes equal initializers (VGG's zero-initialised
 * classifier biases, MobileNet-V2's Clip bounds): folded constants, not initializers.
 */
export function sharedBiasMlp(): Uint8Array {
  return encodeModel({
    opset: 17,
    inputs: [{ name: 'input', dtype: 'float32', shape: [1, 16] }],
    outputs: [{ name: 'logits', dtype: 'float32', shape: [1, 16] }],
    initializers: [
      ['w1', f32([16, 16], 7, 0.5)],
      ['b1', f32([16], 8, 0.1)],
      ['w2', f32([16, 16], 9, 0.5)],
      ['zero', { dtype: 'float32', dims: [], data: Float32Array.of(0) }],
      ['six', { dtype: 'float32', dims: [], data: Float32Array.of(6) }],
    ],
    nodes: [
      { op: 'Gemm', name: 'fc1', inputs: ['input', 'w1', 'b1'], outputs: ['h'], attrs: { transB: 1 } },
      { op: 'Identity', name: 'lo', inputs: ['zero'], outputs: ['lo'] },
      { op: 'Identity', name: 'hi', inputs: ['six'], outputs: ['hi'] },
      { op: 'Clip', name: 'relu6', inputs: ['h', 'lo', 'hi'], outputs: ['r'] },
      { op: 'Identity', name: 'same_bias', inputs: ['b1'], outputs: ['b2'] },
      { op: 'Gemm', name: 'fc2', inputs: ['r', 'w2', 'b2'], outputs: ['logits'], attrs: { transB: 1 } },
    ],
  });
}

/**
 * A fire module (SqueezeNet's: two expand convs joined by Concat), a SiLU (EfficientNet's Sigmoid and
 * Mul) and a squeeze-excitation gate (GlobalAveragePool, two 1×1 convs, Sigmoid, Mul) between
 * quantized convs: `veltair quantize` leaves the Concat, the SiLU and the gate's Sigmoid and Mul in
 * float between QDQ pairs, and the IR folds them into qconcat, qlut and qgate.
 */
export function fireSiluCnn(): Uint8Array {
  return encodeModel({
    opset: 17,
    inputs: [{ name: 'input', dtype: 'float32', shape: [1, 3, 12, 12] }],
    outputs: [{ name: 'out', dtype: 'float32', shape: [1, 6, 12, 12] }],
    initializers: [
      ['ws', f32([8, 3, 1, 1], 11, 0.5)],
      ['we1', f32([8, 8, 1, 1], 12, 0.4)],
      ['we3', f32([6, 8, 3, 3], 13, 0.2)],
      ['wt', f32([6, 14, 1, 1], 14, 0.3)],
      ['wo', f32([6, 6, 1, 1], 15, 0.4)],
      ['bo', f32([6], 16, 0.1)],
      ['wr', f32([2, 6, 1, 1], 17, 0.5)],
      ['br', f32([2], 18, 0.1)],
      ['we', f32([6, 2, 1, 1], 19, 0.5)],
      ['be', f32([6], 20, 0.1)],
    ],
    nodes: [
      { op: 'Conv', name: 'squeeze', inputs: ['input', 'ws'], outputs: ['s0'] },
      { op: 'Relu', name: 'squeeze_relu', inputs: ['s0'], outputs: ['s'] },
      { op: 'Conv', name: 'expand1x1', inputs: ['s', 'we1'], outputs: ['e1_0'] },
      { op: 'Relu', name: 'expand1x1_relu', inputs: ['e1_0'], outputs: ['e1'] },
      { op: 'Conv', name: 'expand3x3', inputs: ['s', 'we3'], outputs: ['e3_0'], attrs: { pads: [1, 1, 1, 1] } },
      { op: 'Relu', name: 'expand3x3_relu', inputs: ['e3_0'], outputs: ['e3'] },
      { op: 'Concat', name: 'fire_concat', inputs: ['e1', 'e3'], outputs: ['cat'], attrs: { axis: 1 } },
      { op: 'Conv', name: 'transition', inputs: ['cat', 'wt'], outputs: ['t'] },
      { op: 'Sigmoid', name: 'silu_gate', inputs: ['t'], outputs: ['gate'] },
      { op: 'Mul', name: 'silu', inputs: ['t', 'gate'], outputs: ['a'] },
      { op: 'GlobalAveragePool', name: 'se_pool', inputs: ['a'], outputs: ['sp'] },
      { op: 'Conv', name: 'se_reduce', inputs: ['sp', 'wr', 'br'], outputs: ['sr0'] },
      { op: 'Relu', name: 'se_relu', inputs: ['sr0'], outputs: ['sr'] },
      { op: 'Conv', name: 'se_expand', inputs: ['sr', 'we', 'be'], outputs: ['se'] },
      { op: 'Sigmoid', name: 'se_sigmoid', inputs: ['se'], outputs: ['sg'] },
      { op: 'Mul', name: 'se_scale', inputs: ['a', 'sg'], outputs: ['as'] },
      { op: 'Conv', name: 'head', inputs: ['as', 'wo', 'bo'], outputs: ['out'] },
    ],
  });
}

/**
 * A DenseNet transition and dense layer: a Pad of nothing and an AveragePool (as PyTorch exports
 * DenseNet's transition pool), then Concat(pool, conv(pool)) → BatchNormalization → Relu → Conv (the
 * pre-activation). The quantizer quantizes the pool's output, and the IR folds the pool into
 * qavgpool and the concat, batch norm and Relu into one qconcat.
 */
export function denseBlockCnn(): Uint8Array {
  return encodeModel({
    opset: 17,
    inputs: [{ name: 'input', dtype: 'float32', shape: [1, 3, 12, 12] }],
    outputs: [{ name: 'out', dtype: 'float32', shape: [1, 8, 6, 6] }],
    initializers: [
      ['w0', f32([12, 3, 3, 3], 21, 0.5)],
      ['zero_pads', { dtype: 'int64', dims: [8], data: new Float64Array(8) }],
      ['w1', f32([6, 12, 3, 3], 22, 0.2)],
      ['gamma', f32([18], 23, 1)],
      ['beta', f32([18], 24, 0.2)],
      ['mean', f32([18], 25, 0.3)],
      ['var', { dtype: 'float32', dims: [18], data: Float32Array.from({ length: 18 }, (_, i) => 0.5 + 0.1 * i) }],
      ['w2', f32([8, 18, 1, 1], 26, 0.4)],
    ],
    nodes: [
      { op: 'Conv', name: 'conv0', inputs: ['input', 'w0'], outputs: ['c0'], attrs: { pads: [1, 1, 1, 1] } },
      { op: 'Relu', name: 'relu0', inputs: ['c0'], outputs: ['r0'] },
      { op: 'Pad', name: 'pool_pad', inputs: ['r0', 'zero_pads'], outputs: ['padded'] },
      { op: 'AveragePool', name: 'pool', inputs: ['padded'], outputs: ['p'], attrs: { kernel_shape: [2, 2], strides: [2, 2] } },
      { op: 'Conv', name: 'conv1', inputs: ['p', 'w1'], outputs: ['c1'], attrs: { pads: [1, 1, 1, 1] } },
      { op: 'Concat', name: 'dense_concat', inputs: ['p', 'c1'], outputs: ['cat'], attrs: { axis: 1 } },
      { op: 'BatchNormalization', name: 'norm', inputs: ['cat', 'gamma', 'beta', 'mean', 'var'], outputs: ['bn'] },
      { op: 'Relu', name: 'relu', inputs: ['bn'], outputs: ['act'] },
      { op: 'Conv', name: 'conv2', inputs: ['act', 'w2'], outputs: ['out'] },
    ],
  });
}

/**
 * Why ONNX Runtime's INT8 output is no exact reference on a CPU with `flags`, or false where it is. Without VNNI,
 * MLAS's u8 × s8 kernels add each pair of products in int16 with saturation (vpmaddubsw), so a conv over full-range
 * s8 weights can land many steps from the integer result; with AVX-512 VNNI or AVX-VNNI it accumulates in int32, as
 * veltair's reference and kernels do.
 */
export function ortInt8Inexact(flags: ReadonlySet<string> = cpuInfo().flags): string | false {
  if (flags.has('avx512_vnni') || flags.has('avx_vnni')) return false;
  return "this CPU has no VNNI, and ONNX Runtime's u8 × s8 kernels saturate pair sums at int16 without it";
}

/** ≥ 99.9% of outputs within one quantization step of ONNX Runtime's, asserted where its INT8 output is exact here. */
export function assertWithinOneStepOfOrt(t: TestContext, within: number, total: number): void {
  const inexact = ortInt8Inexact();
  if (inexact) {
    t.diagnostic(`${within}/${total} outputs within one step of ONNX Runtime, not asserted: ${inexact}`);
    return;
  }
  assert.ok(within / total >= 0.999, `${within}/${total} outputs within one quantization step`);
}
