/**
 * A quantized layer (qconv2d, qmatmul) as the loop problem of the INT8 kernels: an implicit GEMM over
 * channels-last (NHWC) u8 activations. Output pixel × output channel, reduced over (kh, kw, input
 * channels of the group in fours): four consecutive input channels are one 32-bit broadcast, the
 * operand shape of `vpdpbusd` and of a `vpmaddubsw` pair. Dense / matmul is a 1×1 conv over its rows;
 * a 1×1, stride-1, unpadded conv is flattened to one row of N·H·W columns.
 *
 * Padding is materialised: the kernel first copies its input into a padded NHWC buffer whose border
 * pixels hold the input zero point (they add nothing to Σ (x − x_zero)·w, as in ONNX) and whose group
 * channels are padded to a multiple of four; then every output sees the same kh·kw taps and the zero
 * point's share is one per-channel constant, x_zero · Σ w, folded into the bias at pack time.
 *
 * A depthwise conv (groups = cin = cout) has nothing to reduce across channels, so it is its own
 * problem: channels in the vector lanes (NHWC keeps them contiguous), taps reduced per lane, and the
 * padded copy keeps the real channel count.
 */
import type { Layer } from '../ir/layer.js';
import { outputBounds, quantWeightsOf, requantizationOf } from '../ir/quant-layer.js';
import { quoteForMessage, userError } from '../errors.js';

export type Int8OutDType = 'uint8' | 'int8' | 'int32';

export interface Int8Problem {
  readonly op: 'qconv2d' | 'qmatmul';
  /** Input NHWC: images, rows, columns, channels (a matmul: rows·batch images of 1×1×K). */
  readonly n: number;
  readonly h: number;
  readonly w: number;
  readonly cin: number;
  readonly cout: number;
  readonly groups: number;
  /** groups = cin = cout > 1: channels in the lanes (int8-depthwise.ts). */
  readonly depthwise: boolean;
  readonly kh: number;
  readonly kw: number;
  readonly sh: number;
  readonly sw: number;
  readonly dh: number;
  readonly dw: number;
  /** top, left, bottom, right */
  readonly pads: readonly [number, number, number, number];
  readonly oh: number;
  readonly ow: number;
  readonly xZero: number;
  /** false: an integer-output layer (ConvInteger, MatMulInteger) stores acc + bias as int32. */
  readonly requant: boolean;
  readonly yZero: number;
  readonly outDtype: Int8OutDType;
  /** Inclusive output bounds in the output's integers (the activation), inside outDtype's range. */
  readonly clamp: readonly [number, number];
}

const HINT =
  'veltair compiles quantized layers with u8 activations, symmetric s8 weights (zero point 0) and a u8/s8 output; ' +
  're-quantize with `veltair quantize` (or ORT quantize_static, weight QInt8 symmetric)';

function refuse(l: Layer, what: string): Error {
  return userError('UNSUPPORTED_QUANTIZATION', `layer ${quoteForMessage(l.name)} (${l.op} ${l.index}): ${what}`, HINT);
}

/** The INT8 problem of a qconv2d / qmatmul layer, or UNSUPPORTED_QUANTIZATION naming what the kernels cannot take. */
export function int8ProblemOf(l: Layer): Int8Problem {
  if (l.op !== 'qconv2d' && l.op !== 'qmatmul') throw refuse(l, 'is not a quantized conv or matmul');
  const q = requantizationOf(l);
  const wq = quantWeightsOf(l);
  if (wq.weight.dtype !== 'int8') throw refuse(l, `its weight is ${wq.weight.dtype}; the INT8 kernels multiply u8 by s8`);
  const c = wq.zero.findIndex((z) => z !== 0);
  if (c >= 0) throw refuse(l, `its weight zero point is ${wq.zero[c]} at output channel ${c}; the INT8 kernels take symmetric weights`);
  if (q.yScale !== 0 && q.outDtype === 'int32') throw refuse(l, 'it requantizes to int32');
  const requant = q.yScale !== 0;
  const clamp = outputBounds(q);
  if (clamp[0] > clamp[1]) throw refuse(l, `its activation bounds [${q.clamp[0]}, ${q.clamp[1]}] are empty`);
  // every product is at most 255 · 128; past 2^31 the 32-bit accumulator wraps where the reference does not
  const k = l.op === 'qmatmul' ? wq.weight.dims[0]! : wq.weight.dims.slice(1).reduce((a, b) => a * b, 1);
  const biasMax = (wq.bias ?? new Int32Array(0)).reduce((m, b) => Math.max(m, Math.abs(b)), 0);
  if (k * 255 * 128 + biasMax >= 2 ** 31) throw refuse(l, `its ${k}-term sums can overflow the 32-bit accumulator`);
  const common = { xZero: q.xZero, requant, yZero: requant ? q.yZero : 0, outDtype: q.outDtype, clamp };
  if (l.op === 'qmatmul') {
    const [k, cols] = wq.weight.dims as [number, number];
    const rows = l.inputShapes[0]!.slice(0, -1).reduce((p, d) => p * d, 1);
    return { op: 'qmatmul', ...pointwise(1, 1, rows, k, cols), ...common };
  }
  const [n, cin, h, w] = l.inputShapes[0] as [number, number, number, number];
  const [, cout, oh, ow] = l.outputShape as [number, number, number, number];
  const a = l.attrs;
  const [kh, kw] = a.kernel as [number, number];
  const [sh, sw] = a.strides as [number, number];
  const [dh, dw] = a.dilations as [number, number];
  const p = a.pads as readonly number[];
  const pads: [number, number, number, number] = [p[0]!, p[1]!, p[2]!, p[3]!];
  const groups = a.groups as number;
  if (kh === 1 && kw === 1 && sh === 1 && sw === 1 && pads.every((x) => x === 0))
    return { op: 'qconv2d', ...pointwise(n, h, w, cin, cout), groups, depthwise: false, ...common };
  const depthwise = groups > 1 && groups === cin && groups === cout;
  return { op: 'qconv2d', n, h, w, cin, cout, groups, depthwise, kh, kw, sh, sw, dh, dw, pads, oh, ow, ...common };
}

/** n·h·w pixels as one row of columns, one tap each. */
function pointwise(n: number, h: number, w: number, cin: number, cout: number) {
  const cols = n * h * w;
  const one = { kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1, pads: [0, 0, 0, 0] as const };
  return { n: 1, h: 1, w: cols, cin, cout, groups: 1, depthwise: false, ...one, oh: 1, ow: cols };
}

/** Derived sizes every INT8 stage reads (vector width `vec` in 32-bit lanes: 16, 8 or 1). */
export interface Int8Dims {
  readonly vec: number;
  /** Conv groups the parallel tasks run over (1 for depthwise: its groups are the lanes). */
  readonly taskGroups: number;
  readonly cinG: number;
  readonly coutG: number;
  /** Group input channels padded to a multiple of 4 (one broadcast each). */
  readonly cinGP: number;
  /** Reduction steps of four channels over all taps (depthwise: the taps). */
  readonly k4: number;
  readonly ocVecs: number;
  /** Real lanes of the last output vector of a group. */
  readonly ocLast: number;
  /** Padded input: whether the kernel copies its input first, and that copy's geometry (bytes per pixel = cp). */
  readonly copy: boolean;
  readonly hp: number;
  readonly wp: number;
  readonly cp: number;
  readonly rows: number;
  readonly cols: number;
}

export function int8Dims(p: Int8Problem, vec: number): Int8Dims {
  const dw = p.depthwise;
  const cinG = dw ? 1 : p.cin / p.groups,
    coutG = dw ? p.cout : p.cout / p.groups;
  const cinGP = dw ? 1 : Math.ceil(cinG / 4) * 4;
  const ocVecs = Math.ceil(coutG / vec);
  const copy = p.pads.some((x) => x > 0) || cinGP !== cinG;
  return {
    vec,
    taskGroups: dw ? 1 : p.groups,
    cinG,
    coutG,
    cinGP,
    k4: dw ? p.kh * p.kw : (p.kh * p.kw * cinGP) / 4,
    ocVecs,
    ocLast: coutG - (ocVecs - 1) * vec,
    copy,
    hp: p.h + p.pads[0] + p.pads[2],
    wp: p.w + p.pads[1] + p.pads[3],
    cp: dw ? p.cin : p.groups * cinGP,
    rows: p.n * p.oh,
    cols: p.ow,
  };
}

/** Bytes of the padded input copy (0 when the kernel reads its input in place), 64-byte aligned. */
export function int8WorkspaceBytes(p: Int8Problem, d: Int8Dims): number {
  return d.copy ? Math.ceil((p.n * d.hp * d.wp * d.cp) / 64) * 64 : 0;
}
