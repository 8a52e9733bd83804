/**
 * Analytic features of a candidate, computed from the schedule alone (no measurement): what the
 * tuner's cost model and the Pareto harvest read to tell locality-heavy from parallelism-heavy.
 *
 * footprintBytes (float32 working sets):
 *  - l1: one microkernel call over one reduction block — the weight slab of the register oc group
 *        plus the input patch it broadcasts from (accumulators live in registers).
 *  - l2: one cache tile — weights for tileOc groups × tileIc blocks, the input patch under
 *        tileRows × tileCols blocks, and the output tile.
 *  - l3: what all threads keep live at once: min(threads, chunks) cache tiles, capped by total.
 *  - total: the whole layer's input + weights + output.
 */
import { workloadMacs, type WorkloadShape } from '../ir/workload.js';
import { problemOf, type Problem } from './problem.js';
import { isWinograd, tileCounts, type Schedule } from './knobs.js';
import { WINO_POINTS, winogradCounts, winogradProblem } from './winograd.js';

export interface ScheduleFeatures {
  readonly footprintBytes: { readonly l1: number; readonly l2: number; readonly l3: number; readonly total: number };
  readonly parallelChunks: number;
  readonly threads: number;
  /** chunks / (threads × ceil(chunks / threads)): 1 = every thread gets the same number of chunks. */
  readonly loadBalance: number;
  /** flops per byte of one cache tile's working set. */
  readonly arithmeticIntensity: number;
  readonly registerTile: number;
  readonly reductionSplit: number;
  readonly flops: number;
}

const F = 4;

function inputExtent(outCount: number, stride: number, k: number, dil: number): number {
  return (outCount - 1) * stride + (k - 1) * dil + 1;
}

function tileBytes(p: Problem, s: Schedule, ocVectors: number, icBlocks: number, rows: number, cols: number) {
  const v = p.vec;
  const inRows = Math.min(p.inH, inputExtent(rows, p.sh, p.kh, p.dh));
  const inCols = Math.min(p.inW, inputExtent(cols, p.sw, p.kw, p.dw));
  if (p.kind === 'depthwise') {
    return {
      weights: ocVectors * v * p.kh * p.kw * F,
      input: ocVectors * v * inRows * inCols * F,
      output: ocVectors * v * rows * cols * F,
    };
  }
  // unblocked (small-cin) input holds only the real channels
  const inLanes = p.inputLayout === 'nchw' ? p.icLanesLast : v;
  return {
    weights: ocVectors * v * icBlocks * v * p.kh * p.kw * F,
    input: icBlocks * inLanes * inRows * inCols * F,
    output: ocVectors * v * rows * cols * F,
  };
}

export function scheduleFeatures(w: WorkloadShape, s: Schedule): ScheduleFeatures {
  if (isWinograd(s)) return winogradFeatures(w, s);
  const p = problemOf(w, s.vec);
  const c = tileCounts(p, s);
  const sum = (b: { weights: number; input: number; output: number }) => b.weights + b.input + b.output;
  const regOcVecs = p.kind === 'direct' ? s.regOc : 1;
  const l1 = sum(tileBytes(p, s, regOcVecs, 1, 1, s.regCols)) - regOcVecs * p.vec * s.regCols * F;
  const tileOcVecs = Math.min(s.tileOc * regOcVecs, p.kind === 'direct' ? p.ocVecs : p.chanVecs);
  const l2 = sum(
    tileBytes(p, s, tileOcVecs, Math.min(s.tileIc, c.icBlocks), Math.min(s.tileRows, p.rows), Math.min(s.tileCols * s.regCols, p.cols)),
  );
  const groups = p.kind === 'direct' ? p.groups : 1;
  const allOc = p.kind === 'direct' ? p.ocVecs : p.chanVecs;
  const whole = tileBytes(p, s, allOc, c.icBlocks, p.rows, p.cols);
  const total = p.batch * groups * (whole.input + whole.output) + groups * whole.weights;
  const live = Math.min(s.threads, c.chunks);
  const flops = 2 * workloadMacs(w);
  const tileFlops = flops / (c.chunks * c.icTiles);
  return {
    footprintBytes: { l1, l2, l3: Math.min(total, live * l2), total },
    parallelChunks: c.chunks,
    threads: s.threads,
    loadBalance: c.chunks / (s.threads * Math.ceil(c.chunks / s.threads)),
    arithmeticIntensity: tileFlops / l2,
    registerTile: regOcVecs * s.regCols,
    reductionSplit: c.icTiles,
    flops,
  };
}

/**
 * The same features for a Winograd schedule, over its GEMM phase (space/winograd.ts): l1 = one
 * microkernel call's U slab and V columns; l2 = one chunk's U (tileOc groups), V (tileCols blocks)
 * and M tile; total = input, U (36 transformed 3×3 kernels per channel pair), output, and the V and M
 * scratch every run passes through memory. flops stay the direct conv's (2 · MACs), so throughput
 * figures compare with the direct versions of the layer; the GEMMs do 4× fewer.
 */
function winogradFeatures(w: WorkloadShape, s: Schedule): ScheduleFeatures {
  const p = winogradProblem(w, s.vec);
  const c = winogradCounts(p, s);
  const v = p.vec;
  const ocV = Math.min(s.tileOc * s.regOc, p.ocVecs) * v,
    tiles = Math.min(s.tileCols * s.regCols, p.tiles);
  const l1 = (p.cin * s.regOc * v + s.regCols * p.cin) * F;
  const l2 = (p.cin * ocV + tiles * p.cin + ocV * tiles) * F;
  const input = p.batch * p.cinPad * p.h * p.w,
    output = p.batch * p.ocVecs * v * p.oh * p.ow;
  const scratch = p.batch * WINO_POINTS * p.tiles * (p.cinPad + p.ocVecs * v);
  const total = (input + WINO_POINTS * p.cin * p.ocVecs * v + output + scratch) * F;
  const flops = 2 * workloadMacs(w);
  return {
    footprintBytes: { l1, l2, l3: Math.min(total, Math.min(s.threads, c.chunks) * l2), total },
    parallelChunks: c.chunks,
    threads: s.threads,
    loadBalance: c.chunks / (s.threads * Math.ceil(c.chunks / s.threads)),
    arithmeticIntensity: flops / c.chunks / l2,
    registerTile: s.regOc * s.regCols,
    reductionSplit: 1,
    flops,
  };
}
