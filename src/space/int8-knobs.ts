/**
 * Schedule knobs of the INT8 kernels: the register block (output vectors × output columns kept in
 * accumulators across the whole reduction) and the cache tile one parallel task covers (oc groups ×
 * column blocks of one output row). Small register blocks and small tiles give many tasks
 * (parallelism); wide ones reuse each loaded weight and broadcast more (locality).
 */
import type { Int8Path } from '../toolchain/isa.js';
import { int8Dims, type Int8Problem } from './int8-problem.js';

export interface Int8Schedule {
  readonly path: Int8Path;
  /** Output vectors per register block (each `vec` channels). */
  readonly regOc: number;
  /** Output columns per register block. */
  readonly regCols: number;
  /** Register blocks of oc per task. */
  readonly tileOc: number;
  /** Register blocks of columns per task. */
  readonly tileCols: number;
  /** Tasks ordered oc tile first (each thread sweeps every row with one weight slab); absent: rows first. */
  readonly ocOuter?: boolean;
}

/** 32-bit lanes per vector of a path. */
export function int8Vec(path: Int8Path): 16 | 8 | 1 {
  return path === 'avx512vnni' ? 16 : path === 'scalar' ? 1 : 8;
}

/**
 * Whether a register block fits the path's registers: accumulators, the block's weight vectors,
 * and the broadcast (AVX2 also holds the broadcast's two halves, a product and four constants).
 */
export function int8BlockFits(path: Int8Path, regOc: number, regCols: number): boolean {
  if (regOc < 1 || regCols < 1) return false;
  if (path === 'avx512vnni') return regOc * regCols + regOc + 1 <= 32;
  if (path === 'avxvnni') return regOc * regCols + regOc + 1 <= 16;
  if (path === 'avx2') return regOc * regCols + regOc <= 12;
  return regOc * regCols <= 16;
}

export interface Int8TileCounts {
  readonly ocGroups: number;
  readonly colBlocks: number;
  readonly ocTiles: number;
  readonly colTiles: number;
  /** Parallel tasks: rows × groups × oc tiles × column tiles. */
  readonly tasks: number;
}

export function int8TileCounts(p: Int8Problem, s: Int8Schedule): Int8TileCounts {
  const d = int8Dims(p, int8Vec(s.path));
  const ocGroups = Math.ceil(d.ocVecs / s.regOc);
  const colBlocks = Math.ceil(d.cols / s.regCols);
  const ocTiles = Math.ceil(ocGroups / s.tileOc);
  const colTiles = Math.ceil(colBlocks / s.tileCols);
  return { ocGroups, colBlocks, ocTiles, colTiles, tasks: d.rows * d.taskGroups * ocTiles * colTiles };
}

/** A schedule clamped to the problem: no more oc vectors or columns per block or tile than there are. */
export function repairInt8(p: Int8Problem, s: Int8Schedule): Int8Schedule {
  const d = int8Dims(p, int8Vec(s.path));
  // The AVX-512 VNNI depthwise kernel works on 64-channel blocks (int8-depthwise.ts): four vectors, and
  // four accumulators per column plus eight shuffle temporaries in registers.
  const dwVnni = p.depthwise && s.path === 'avx512vnni';
  let regOc = dwVnni ? Math.min(4, d.ocVecs) : Math.max(1, Math.min(s.regOc, d.ocVecs));
  let regCols = Math.max(1, Math.min(s.regCols, d.cols, dwVnni ? 4 : Infinity));
  while (!int8BlockFits(s.path, regOc, regCols)) {
    if (regCols > 1) regCols--;
    else regOc--;
  }
  const ocGroups = Math.ceil(d.ocVecs / regOc),
    colBlocks = Math.ceil(d.cols / regCols);
  const tileOc = Math.max(1, Math.min(s.tileOc, ocGroups));
  const tileCols = Math.max(1, Math.min(s.tileCols, colBlocks));
  // with one oc tile the two task orders are the same order
  const ocOuter = s.ocOuter === true && tileOc < ocGroups;
  return { path: s.path, regOc, regCols, tileOc, tileCols, ...(ocOuter ? { ocOuter } : {}) };
}

/**
 * The schedule a layer's shape points to before anything is measured, tuned first:
 *  - the register block that wastes fewest lanes and columns on the layer's tails (a 7-wide row in a
 *    6-wide block runs a second, one-column block), the larger of equals (more reuse per load);
 *  - one oc group × a whole row per task;
 *  - oc tiles outermost when the weights outweigh the input, so each weight slab is read from memory once.
 */
export function int8BalancedSchedule(p: Int8Problem, path: Int8Path): Int8Schedule {
  const d = int8Dims(p, int8Vec(path));
  const useful = (n: number, block: number) => n / (Math.ceil(n / block) * block);
  let best: { s: Int8Schedule; score: number } | undefined;
  for (const regOc of p.depthwise && path === 'avx512vnni' ? [4] : [1, 2, 3, 4])
    for (let regCols = 1; regCols <= 14; regCols++) {
      if (!int8BlockFits(path, regOc, regCols)) continue;
      const s = repairInt8(p, { path, regOc, regCols, tileOc: 1, tileCols: 1 << 20 });
      // on VNNI, accumulators below ten leave the dot units waiting on the previous sum (5 cycles × 2 per cycle)
      const latency = Math.min(1, (s.regOc * s.regCols) / (path === 'avx512vnni' || path === 'avxvnni' ? 10 : 1));
      const score = useful(d.ocVecs, s.regOc) * useful(d.cols, s.regCols) * latency + s.regOc * s.regCols * 1e-4;
      if (!best || score > best.score) best = { s, score };
    }
  const weights = d.taskGroups * d.ocVecs * d.vec * d.k4 * 4;
  const input = p.n * d.hp * d.wp * d.cp;
  return repairInt8(p, { ...best!.s, ocOuter: weights > input });
}

/**
 * The knob space of one problem on one path: register blocks that fit, times tiles from one block
 * (most tasks) to the whole row (fewest), times the two task orders, deduplicated after repair.
 */
export function int8Space(p: Int8Problem, path: Int8Path): Int8Schedule[] {
  const out = new Map<string, Int8Schedule>();
  const regOcs = path === 'scalar' ? [1, 2, 4] : [1, 2, 3, 4];
  const regColsAll = path === 'scalar' ? [1, 2, 4] : [1, 2, 3, 4, 6, 8, 12, 14];
  for (const regOc of regOcs)
    for (const regCols of regColsAll) {
      if (!int8BlockFits(path, regOc, regCols)) continue;
      for (const tileOc of [1, 2, 4, 1 << 20])
        for (const tileCols of [1, 4, 16, 1 << 20])
          for (const ocOuter of [false, true]) {
            const s = repairInt8(p, { path, regOc, regCols, tileOc, tileCols, ocOuter });
            out.set(JSON.stringify(s), s);
          }
    }
  return [...out.values()];
}
