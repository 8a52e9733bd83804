/**
 * A workload seen as a loop problem over blocked layouts, for one vector width V. The schedule
 * space, the features and codegen all read the same canonical form, so they cannot disagree about
 * what "a row", "a column block" or "an input-channel block" is.
 *
 * Every tunable op becomes one of two problems:
 *  - direct: out[b][g][oc-vector][row][col] = Σ over (ic block, kh, kw, lane) of
 *            broadcast(input element) × weight vector. Regular conv2d, grouped conv (channels per
 *            group a multiple of V, or narrower groups merged: groupMerge), 1×1 convs, dense and
 *            batch_matmul all share it; they differ only in strides. A 1×1 / stride 1 / unpadded conv is flattened to one row of OH·OW
 *            columns; dense and batch_matmul are one row of M columns (matrix rows).
 *  - depthwise: channels in the vector (groups = cin = cout), a spatial register tile, no
 *            cross-channel reduction.
 * Strides are in floats, in the layouts documented in native-kernels/veltair_kernel.h.
 */
import type { EpilogueKind, WorkloadShape } from '../ir/workload.js';

export interface Strides {
  readonly pix: number; // next column (input: next column at stride 1)
  readonly row: number; // next row
  readonly block: number; // next channel block (input: ic block, output: oc vector)
  readonly group: number; // next conv group
  readonly batch: number; // next image / matrix
  readonly lane: number; // next channel inside a block (1 in the blocked layouts; H·W for NCHW input)
}

interface Geometry {
  readonly vec: 16 | 8 | 1;
  readonly batch: number;
  readonly rows: number;
  readonly cols: number;
  readonly kh: number;
  readonly kw: number;
  readonly sh: number;
  readonly sw: number;
  readonly dh: number;
  readonly dw: number;
  readonly padT: number;
  readonly padL: number;
  readonly inH: number;
  readonly inW: number;
  readonly in: Strides;
  readonly out: Strides;
  /** channel_mul gate stride between batch entries (0: one gate vector for all rows). */
  readonly gateBatch: number;
  readonly macs: number;
}

export interface DirectProblem extends Geometry {
  readonly kind: 'direct';
  /** The kernel's groups: the workload's, divided by groupMerge (rounded up: the last may be part padding). */
  readonly groups: number;
  /** Original groups per kernel group (groupMerge); their weights are block-diagonal within it. */
  readonly groupMerge: number;
  /** Output vectors per group, and the real lanes of the last one (< vec when channels are padded). */
  readonly ocVecs: number;
  readonly ocLanesLast: number;
  /** Reduction blocks (V input channels each) per group, and the real lanes of the last one. */
  readonly icBlocks: number;
  readonly icLanesLast: number;
  /** Where weight vectors come from: packed by us, batch_matmul B rows, or transposed B (packed once per run into the workspace). */
  readonly weights: 'packed' | 'b_rows' | 'b_transposed';
  /** Reduction length K of one output element. */
  readonly reduction: number;
  /**
   * 'blocked': the reduction reads the NCHW[V]c input as given; 'nchw': a conv with very few input
   * channels reads a dense NCHW copy of it (see smallCinInput), so no zero lanes sit between pixels.
   */
  readonly inputLayout: 'blocked' | 'nchw';
}

export interface DepthwiseProblem extends Geometry {
  readonly kind: 'depthwise';
  readonly chanVecs: number;
  readonly chanLanesLast: number;
  readonly reduction: number;
}

export type Problem = DirectProblem | DepthwiseProblem;

const ceilDiv = (a: number, b: number) => Math.ceil(a / b);
export const roundUp = (a: number, b: number) => ceilDiv(a, b) * b;
const lanesLast = (c: number, v: number) => c - (ceilDiv(c, v) - 1) * v;

export function isDepthwise(w: WorkloadShape): boolean {
  return w.op === 'conv2d' && w.groups > 1 && w.groups === w.cin && w.cout === w.cin;
}

/** The most groups merged into one: each merged group computes merge× the multiply-adds it needs. */
export const MAX_GROUP_MERGE = 4;

/**
 * How many consecutive groups of a grouped conv one kernel group spans at width `vec`. Groups
 * narrower than the vector (RegNetY's 8 channels per group at V = 16, ResNeXt's 4) cannot each
 * start a channel block, so the kernel treats m = vec / (channels per group) neighbours as one group
 * with block-diagonal weights: zero between channels of different original groups (packed as zeros,
 * src/codegen/layout.ts). The activation's blocked layout keeps channels contiguous, so channel block
 * b holds merged group b, and the conv runs at the network's width with no reorder to a narrower one
 * around it, for m× the multiply-adds (the zeros are computed too). Tuning measures whether that
 * pays. 1: no merge needed (whole groups per block) or none possible.
 */
export function groupMerge(w: WorkloadShape, vec: number): number {
  if (w.op !== 'conv2d' || w.groups === 1 || isDepthwise(w) || vec <= 1 || wholeGroups(w, vec)) return 1;
  const cing = w.cin / w.groups,
    coutg = w.cout / w.groups;
  if (vec % cing !== 0) return 1;
  const m = vec / cing;
  if (m > MAX_GROUP_MERGE || (coutg * m) % vec !== 0) return 1;
  if (w.groups % m === 0) return m;
  // A group count m does not divide (RegNetY's 13 and 55): the last kernel group is part padding.
  // Its missing groups must land exactly on the activations' channel padding, and come out zero.
  const spanned = Math.ceil(w.groups / m) * m;
  const fitsPadding = spanned * cing === roundUp(w.cin, vec) && spanned * coutg === roundUp(w.cout, vec);
  return fitsPadding && w.epilogue.every((e) => ZERO_KEEPING.has(e)) ? m : 1;
}

/**
 * Epilogue steps that map a zero accumulator (zero weights, zero padded bias, residual and gate) to
 * zero, so a merged group's padding lanes stay exactly zero: not sigmoid or hard sigmoid (0.5), nor
 * clip, whose bounds are only known at run time.
 */
const ZERO_KEEPING: ReadonlySet<EpilogueKind> = new Set<EpilogueKind>([
  'bias',
  'relu',
  'leaky_relu',
  'hard_swish',
  'silu',
  'tanh',
  'gelu',
  'gelu_tanh',
  'residual_add',
  'channel_mul',
]);

/** A grouped conv's groups each start a channel block at width `vec` (channels per group in and out a multiple of it). */
function wholeGroups(w: Extract<WorkloadShape, { op: 'conv2d' }>, vec: number): boolean {
  return (w.cin / w.groups) % vec === 0 && (w.cout / w.groups) % vec === 0;
}

/** Widths whose blocked layout the workload can use: grouped convs need whole (or merged, groupMerge) groups per block. */
export function widthFits(w: WorkloadShape, vec: number): boolean {
  if (w.op !== 'conv2d' || w.groups === 1 || isDepthwise(w)) return true;
  return wholeGroups(w, vec) || groupMerge(w, vec) > 1;
}

/**
 * Convs with at most SMALL_CIN input channels (e.g. an RGB stem) reduce over plain NCHW input:
 * blocked, each pixel would drag V - cin zero lanes through the caches (13 of 16 for RGB) while
 * the reduction only ever visits the real lanes. The ABI's `_run` still takes NCHW[V]c and gathers
 * the real channels first (src/codegen/direct.ts compactInput): that is what tuning measures. When
 * the plan has the input in NCHW already (the graph input), the runtime calls `_run_nchw`, which
 * reads it as is.
 */
export const SMALL_CIN = 4;

export function smallCinInput(w: WorkloadShape, vec: number): boolean {
  return w.op === 'conv2d' && w.groups === 1 && vec > 1 && w.cin <= SMALL_CIN;
}

export function problemOf(w: WorkloadShape, vec: 16 | 8 | 1): Problem {
  if (w.op === 'conv2d') return convProblem(w, vec);
  const { m, k, n } = w;
  const batch = w.op === 'batch_matmul' ? w.batch : 1;
  const kp = roundUp(k, vec),
    np = roundUp(n, vec);
  return {
    kind: 'direct',
    vec,
    batch,
    rows: 1,
    cols: m,
    kh: 1,
    kw: 1,
    sh: 1,
    sw: 1,
    dh: 1,
    dw: 1,
    padT: 0,
    padL: 0,
    inH: 1,
    inW: m,
    in: { pix: kp, row: 0, block: vec, group: 0, batch: m * kp, lane: 1 },
    out: { pix: np, row: 0, block: vec, group: 0, batch: m * np, lane: 1 },
    gateBatch: w.op === 'batch_matmul' ? np : 0,
    macs: batch * m * k * n,
    groups: 1,
    groupMerge: 1,
    ocVecs: ceilDiv(n, vec),
    ocLanesLast: lanesLast(n, vec),
    icBlocks: ceilDiv(k, vec),
    icLanesLast: lanesLast(k, vec),
    weights: w.op === 'dense' ? 'packed' : w.transB ? 'b_transposed' : 'b_rows',
    reduction: k,
    inputLayout: 'blocked',
  };
}

function convProblem(w: Extract<WorkloadShape, { op: 'conv2d' }>, vec: 16 | 8 | 1): Problem {
  const cinB = ceilDiv(w.cin, vec),
    coutB = ceilDiv(w.cout, vec);
  const flat = w.kh === 1 && w.kw === 1 && w.strideH === 1 && w.strideW === 1 && w.pads.every((p) => p === 0);
  const inH = flat ? 1 : w.h,
    inW = flat ? w.h * w.w : w.w;
  const rows = flat ? 1 : w.oh,
    cols = flat ? w.oh * w.ow : w.ow;
  const inPlane = w.h * w.w * vec,
    outPlane = w.oh * w.ow * vec;
  const geometry = {
    vec,
    batch: w.n,
    rows,
    cols,
    kh: w.kh,
    kw: w.kw,
    sh: w.strideH,
    sw: w.strideW,
    dh: w.dilationH,
    dw: w.dilationW,
    padT: w.pads[0],
    padL: w.pads[1],
    inH,
    inW,
    gateBatch: coutB * vec,
    macs: w.n * w.cout * w.oh * w.ow * (w.cin / w.groups) * w.kh * w.kw,
  };
  if (isDepthwise(w)) {
    return {
      kind: 'depthwise',
      ...geometry,
      in: { pix: vec, row: inW * vec, block: inPlane, group: 0, batch: cinB * inPlane, lane: 1 },
      out: { pix: vec, row: cols * vec, block: outPlane, group: 0, batch: coutB * outPlane, lane: 1 },
      chanVecs: cinB,
      chanLanesLast: lanesLast(w.cin, vec),
      reduction: w.kh * w.kw,
    };
  }
  const merge = groupMerge(w, vec);
  const groups = Math.ceil(w.groups / merge),
    cing = (w.cin / w.groups) * merge,
    coutg = (w.cout / w.groups) * merge;
  const icBlocks = ceilDiv(cing, vec),
    ocVecs = ceilDiv(coutg, vec);
  const nchw = smallCinInput(w, vec);
  const plane = w.h * w.w;
  return {
    kind: 'direct',
    ...geometry,
    in: nchw
      ? { pix: 1, row: inW, block: vec * plane, group: 0, batch: w.cin * plane, lane: plane }
      : { pix: vec, row: inW * vec, block: inPlane, group: icBlocks * inPlane, batch: cinB * inPlane, lane: 1 },
    out: { pix: vec, row: cols * vec, block: outPlane, group: ocVecs * outPlane, batch: coutB * outPlane, lane: 1 },
    groups,
    groupMerge: merge,
    ocVecs,
    ocLanesLast: lanesLast(coutg, vec),
    icBlocks,
    icLanesLast: lanesLast(cing, vec),
    weights: 'packed',
    reduction: cing * w.kh * w.kw,
    inputLayout: nchw ? 'nchw' : 'blocked',
  };
}
