/**
 * The Winograd F(4×4, 3×3) form of a conv: which workloads may take it, and the loop problem its
 * schedule knobs index. One output tile is 4×4 pixels, read from a 6×6 input tile (neighbours
 * overlap by 2); per image there are ceil(OH/4) × ceil(OW/4) tiles. The reduction over input
 * channels becomes 36 independent GEMMs, one per point ξ of the 6×6 transformed tile:
 * M[ξ][oc][tile] = Σ_ic U[ξ][oc][ic] · V[ξ][ic][tile] (codegen/winograd.ts).
 *
 * Knobs under algo 'winograd' (see knobs.ts): regOc oc vectors × regCols tiles per GEMM microkernel
 * call; tileOc oc groups × tileCols tile blocks per chunk of the GEMM's parallel loop; loopOrder
 * inside a chunk; parallelAxis orders the chunk index; unroll of the input-channel loop; threads.
 * tileIc and tileRows are pinned to 1 (the GEMM always reduces over all input channels, and tiles
 * have no rows of their own).
 */
import type { WorkloadShape } from '../ir/workload.js';
import { internalError } from '../errors.js';
import { SMALL_CIN } from './problem.js';

/** Output tile edge, kernel edge, input tile edge (= 4 + 3 − 1) and transformed points per tile. */
export const WINO_M = 4;
export const WINO_R = 3;
export const WINO_T = WINO_M + WINO_R - 1;
export const WINO_POINTS = WINO_T * WINO_T;

/**
 * Convs the Winograd form computes: 3×3, stride 1, dilation 1, ungrouped, float32, any padding.
 * Not convs with at most SMALL_CIN input channels: those read plain NCHW input through
 * `<sym>_run_nchw` (problem.ts smallCinInput), which the Winograd kernel does not export, and a
 * reduction that short leaves nothing for the transforms to save.
 */
export function winogradEligible(w: WorkloadShape): boolean {
  return (
    w.op === 'conv2d' &&
    w.dtype === 'float32' &&
    w.groups === 1 &&
    w.kh === WINO_R &&
    w.kw === WINO_R &&
    w.strideH === 1 &&
    w.strideW === 1 &&
    w.dilationH === 1 &&
    w.dilationW === 1 &&
    w.cin > SMALL_CIN
  );
}

/** The Winograd loop problem of an eligible conv at vector width `vec`. */
export interface WinogradProblem {
  readonly vec: 16 | 8 | 1;
  readonly batch: number;
  readonly cin: number;
  readonly cout: number;
  readonly h: number;
  readonly w: number;
  readonly oh: number;
  readonly ow: number;
  readonly padT: number;
  readonly padL: number;
  /** Input channel blocks, and their padded count of channels (the transformed input's row length). */
  readonly icBlocks: number;
  readonly cinPad: number;
  /** Output channel vectors, and the real lanes of the last one. */
  readonly ocVecs: number;
  readonly ocLanesLast: number;
  readonly tilesH: number;
  readonly tilesW: number;
  /** Tiles per image: the GEMM's columns. */
  readonly tiles: number;
}

export function winogradProblem(w: WorkloadShape, vec: 16 | 8 | 1): WinogradProblem {
  if (w.op !== 'conv2d') throw internalError(`winogradProblem: a ${w.op} is not a conv`);
  const icBlocks = Math.ceil(w.cin / vec),
    ocVecs = Math.ceil(w.cout / vec);
  const tilesH = Math.ceil(w.oh / WINO_M),
    tilesW = Math.ceil(w.ow / WINO_M);
  return {
    vec,
    batch: w.n,
    cin: w.cin,
    cout: w.cout,
    h: w.h,
    w: w.w,
    oh: w.oh,
    ow: w.ow,
    padT: w.pads[0],
    padL: w.pads[1],
    icBlocks,
    cinPad: icBlocks * vec,
    ocVecs,
    ocLanesLast: w.cout - (ocVecs - 1) * vec,
    tilesH,
    tilesW,
    tiles: tilesH * tilesW,
  };
}

/** Trip counts of the GEMM phase under a schedule's knobs. */
export interface WinogradCounts {
  readonly ocGroups: number;
  readonly colBlocks: number;
  readonly ocTiles: number;
  readonly colTiles: number;
  /** Iterations of the GEMM's parallel loop: batch × 36 points × oc tiles × column tiles. */
  readonly chunks: number;
}

export function winogradCounts(
  p: WinogradProblem,
  s: { regOc: number; regCols: number; tileOc: number; tileCols: number },
): WinogradCounts {
  const ocGroups = Math.ceil(p.ocVecs / s.regOc),
    colBlocks = Math.ceil(p.tiles / s.regCols);
  const ocTiles = Math.ceil(ocGroups / s.tileOc),
    colTiles = Math.ceil(colBlocks / s.tileCols);
  return { ocGroups, colBlocks, ocTiles, colTiles, chunks: p.batch * WINO_POINTS * ocTiles * colTiles };
}
