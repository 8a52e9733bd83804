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
  return {
    path: s.path,
    regOc,
    regCols,
    tileOc: Math.max(1, Math.min(s.tileOc, ocGroups)),
    tileCols: Math.max(1, Math.min(s.tileCols, colBlocks)),
  };
}

/**
 * The knob space of one problem on one path: register blocks that fit, times tiles from one block
 * (most tasks) to the whole row (fewest), deduplicated after repair.
 */
export function int8Space(p: Int8Problem, path: Int8Path): Int8Schedule[] {
  const out = new Map<string, Int8Schedule>();
  const regOcs = path === 'scalar' ? [1, 2, 4] : [1, 2, 3, 4];
  const regColsAll = path === 'scalar' ? [1, 2, 4] : [1, 2, 3, 4, 6, 8, 12, 14];
  for (const regOc of regOcs)
    for (const regCols of regColsAll) {
      if (!int8BlockFits(path, regOc, regCols)) continue;
      for (const tileOc of [1, 2, 4, 1 << 20])
        for (const tileCols of [1, 4, 16, 1 << 20]) {
          const s = repairInt8(p, { path, regOc, regCols, tileOc, tileCols });
          out.set(JSON.stringify(s), s);
        }
    }
  return [...out.values()];
}
