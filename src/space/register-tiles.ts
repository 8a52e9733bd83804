/**
 * Register tiles: how many output vectors × output columns one microkernel call keeps in
 * accumulators, ranked for a problem and a target's register file. The direct and depthwise
 * problems' tiles, and those of the Winograd form's GEMMs (oc vectors × 4×4 tiles).
 */
import type { WorkloadShape } from '../ir/workload.js';
import type { Problem } from './problem.js';
import { winogradProblem } from './winograd.js';
import { vectorRegisters } from '../toolchain/isa.js';
import type { Target } from '../toolchain/target.js';

/** Most statements one unrolled reduction step may expand to (keeps the hot loop in the I-cache). */
export const MAX_UNROLLED_FMAS = 2048;

/** Register tiles (regOc, regCols) that fit, best first: more accumulators, then more oc vectors. */
export function registerTiles(p: Problem, t: Target): { regOc: number; regCols: number }[] {
  const regs = vectorRegisters(t.isa);
  if (p.kind === 'depthwise') {
    // a block of w pixels keeps max(w, 8) FMA slots busy at best (8 chains cover FMA latency × ports);
    // among equally efficient widths, ~16 measured best (wider blocks gained nothing on Zen 5)
    const most = Math.min(p.cols, regs - 2);
    const score = (w: number) => {
      const full = Math.floor(p.cols / w),
        tail = p.cols - full * w;
      return p.cols / (full * Math.max(w, 8) + (tail ? Math.max(tail, 8) : 0)) + Math.min(w, 16) / 1000 - Math.max(0, w - 16) / 2000;
    };
    return Array.from({ length: most }, (_, i) => most - i)
      .sort((a, b) => score(b) - score(a))
      .map((regCols) => ({ regOc: 1, regCols }));
  }
  return gemmRegisterTiles(p.ocVecs, p.cols, p.kw, regs);
}

/** Register tiles of a GEMM-like microkernel over ocVecs output vectors × cols columns (kw: taps unrolled per lane), best first. */
function gemmRegisterTiles(ocVecs: number, colCount: number, kw: number, regs: number): { regOc: number; regCols: number }[] {
  const tiles: { regOc: number; regCols: number; score: number }[] = [];
  for (let oc = 1; oc <= Math.min(ocVecs, 8); oc++) {
    const maxCols = Math.min(colCount, Math.floor((regs - 1 - oc) / oc));
    for (let cols = 1; cols <= maxCols; cols++) {
      if (kw * oc * cols > MAX_UNROLLED_FMAS) continue;
      // useful work per microkernel call, discounted for padded tails in both directions
      const ocUse = ocVecs / (Math.ceil(ocVecs / oc) * oc);
      const colUse = colCount / (Math.ceil(colCount / cols) * cols);
      // A tile that takes every register leaves gcc none to spare: it keeps the regOc weight
      // vectors in memory and folds a load into every FMA (measured on Zen 3 AVX2: (1,14) and
      // (3,4) ran at 52–60 GFLOP/s where (2,6), one register free, ran at 75–81; peak 99).
      const spare = regs - (oc * cols + oc + 1);
      const loadsPerFma = spare > 0 ? (oc + cols) / (oc * cols) : (oc * cols + cols) / (oc * cols);
      tiles.push({ regOc: oc, regCols: cols, score: (oc * cols * ocUse * colUse) / (1 + loadsPerFma) });
    }
  }
  return tiles.sort((a, b) => b.score - a.score || b.regOc - a.regOc).map(({ regOc, regCols }) => ({ regOc, regCols }));
}

/** Register tiles (regOc oc vectors × regCols Winograd tiles) of an eligible conv's 36 GEMMs, best first. */
export function winogradRegisterTiles(w: WorkloadShape, vec: 16 | 8 | 1, t: Target): { regOc: number; regCols: number }[] {
  const p = winogradProblem(w, vec);
  return gemmRegisterTiles(p.ocVecs, p.tiles, 1, vectorRegisters(t.isa));
}
