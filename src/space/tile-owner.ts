/**
 * Which thread writes each part of a version's output when T threads run it: the generated run
 * functions (codegen/direct.ts, codegen/depthwise.ts) decode one parallel loop over cache tiles in
 * parallelOrder's order, under `#pragma omp for schedule(static)`, so the owner of an output block
 * and pixel follows from the schedule alone. Ops that read the output (a channel gather) use it to
 * give each thread what its own core wrote: on this 2-core host a line written by the other core
 * costs several times a local one (bench/RESULTS.md).
 * Conv outputs only (NCHW[V]c: block, pixel = row · OW + column); a dense or batch_matmul output
 * is not a blocked image, so it has no owner map. A Winograd version's output is written by its
 * last loop (codegen/winograd.ts), over (image, oc vector, row-major 4×4 tile).
 */
import type { Problem } from './problem.js';
import { isWinograd, parallelOrder, tileCounts, type Schedule } from './knobs.js';
import { WINO_M } from './winograd.js';

/** Thread (0 … T−1) that writes output block `block`, pixel `pixel` (row-major over OH × OW) of image `n`. */
export type OutputOwner = (n: number, block: number, pixel: number) => number;

/** What an owner map needs of a version: its loop problem and schedule. */
export interface Tiling {
  readonly problem: Problem;
  readonly schedule: Schedule;
}

/**
 * The thread OpenMP's static schedule (no chunk size) gives iteration `i` of `n` among `threads`:
 * contiguous ranges, the first n mod T threads one iteration longer (libgomp's and gcc's inline
 * expansion agree).
 */
export function staticOwner(i: number, n: number, threads: number): number {
  const q = Math.floor(n / threads),
    r = n % threads;
  const long = r * (q + 1);
  return i < long ? Math.floor(i / (q + 1)) : r + Math.floor((i - long) / q);
}

export function outputOwner(t: Tiling, threads: number): OutputOwner {
  const { problem: p, schedule: s } = t;
  if (isWinograd(s) && p.kind === 'direct') return winogradOwner(p, threads);
  const c = tileCounts(p, s);
  const order = parallelOrder(p, s);
  const ocVecs = p.kind === 'direct' ? p.ocVecs : p.chanVecs;
  return (n, block, pixel) => {
    const row = Math.floor(pixel / p.cols),
      col = pixel % p.cols;
    const g = p.kind === 'direct' ? Math.floor(block / ocVecs) : 0;
    const ocGroup = p.kind === 'direct' ? Math.floor((block % ocVecs) / s.regOc) : block;
    const at: Record<string, number> = {
      g,
      ocT: Math.floor(ocGroup / s.tileOc),
      rowT: Math.floor(row / s.tileRows),
      colT: Math.floor(Math.floor(col / s.regCols) / s.tileCols),
    };
    let index = 0,
      stride = 1;
    for (const [name, count] of order) {
      index += at[name]! * stride;
      stride *= count;
    }
    return staticOwner(index + n * stride, c.chunks, threads);
  };
}

function winogradOwner(p: Extract<Problem, { kind: 'direct' }>, threads: number): OutputOwner {
  const tilesW = Math.ceil(p.cols / WINO_M),
    tiles = Math.ceil(p.rows / WINO_M) * tilesW;
  const n = p.batch * p.ocVecs * tiles;
  return (img, block, pixel) => {
    const row = Math.floor(pixel / p.cols),
      col = pixel % p.cols;
    const tile = Math.floor(row / WINO_M) * tilesW + Math.floor(col / WINO_M);
    return staticOwner((img * p.ocVecs + block) * tiles + tile, n, threads);
  };
}
