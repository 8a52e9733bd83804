/**
 * The schedule space: one point = one way to run a workload's loop problem (see problem.ts).
 *
 * Knobs (all ops; for dense/batch_matmul read "oc" as N columns, "cols" as M rows, "ic" as K):
 *  - vec        blocked layout width V (NCHW[V]c): 16 = AVX-512, 8 = AVX2, 1 = scalar.
 *  - regOc      register tile: output-channel vectors held in registers (depthwise: always 1).
 *  - regCols    register tile: output columns (ow pixels / matrix rows) per microkernel call.
 *               Accumulators = regOc × regCols; with regOc weight vectors and one broadcast they
 *               must fit the vector register file (32 zmm on AVX-512, 16 ymm on AVX2).
 *  - tileIc     cache tile: input-channel blocks per reduction pass (< all: the reduction is split,
 *               partial sums go through the output buffer, the epilogue runs on the last pass).
 *  - tileOc     cache tile: register oc groups (depthwise: channel vectors) per tile.
 *  - tileRows   cache tile: output rows per tile.
 *  - tileCols   cache tile: register column blocks per tile.
 *    The four tiles are the LOCALITY knob: their working set (features.footprintBytes.l2) ranges
 *    from a few KB (L1-sized) to the whole layer (L2/L3-sized).
 *  - loopOrder  inside a tile: 'oc_outer' keeps one oc group's weights hot across the tile's rows;
 *               'spatial_outer' keeps an input patch hot across the oc groups.
 *  - parallelAxis  tiles form one parallel loop split statically into contiguous chunks per
 *               thread; 'oc' puts oc tiles outermost (threads own disjoint weights), 'spatial'
 *               puts rows/cols outermost (threads share weights, own disjoint input rows).
 *  - unroll     unroll of the reduction-lane loop (≤ V).
 *  - threads    OpenMP threads. Together with the tile sizes (which fix the chunk count,
 *               features.parallelChunks) this is the PARALLELISM knob.
 *  - algo       'winograd': the F(4×4, 3×3) form of an eligible conv (space/winograd.ts, where the
 *               other knobs' meaning under it is given); absent = the direct loops above. Absent
 *               rather than 'direct' in the canonical form, so direct schedules hash as they always did.
 * The two ends: localityGreedy() (full reductions, tiles grown to L2, as few chunks as threads)
 * and parallelHeavy() (smallest tiles, one register block per chunk, all cores).
 */
import type { WorkloadShape } from '../ir/workload.js';
import { problemOf, widthFits, type Problem } from './problem.js';
import type { Rng } from '../random.js';
import { vectorRegisters, vectorWidths } from '../toolchain/isa.js';
import { WINO_M, winogradCounts, winogradEligible, winogradProblem } from './winograd.js';
import { MAX_UNROLLED_FMAS, registerTiles, winogradRegisterTiles } from './register-tiles.js';

export { MAX_UNROLLED_FMAS, registerTiles, winogradRegisterTiles };
import type { Target } from '../toolchain/target.js';

export type LoopOrder = 'oc_outer' | 'spatial_outer';
export type ParallelAxis = 'oc' | 'spatial';
export type Algo = 'direct' | 'winograd';

export interface Schedule {
  readonly vec: 16 | 8 | 1;
  readonly regOc: number;
  readonly regCols: number;
  readonly tileIc: number;
  readonly tileOc: number;
  readonly tileRows: number;
  readonly tileCols: number;
  readonly loopOrder: LoopOrder;
  readonly parallelAxis: ParallelAxis;
  readonly unroll: number;
  readonly threads: number;
  readonly algo?: Algo;
}

/** The schedule runs the Winograd form (a direct schedule may carry algo 'direct' or nothing). */
export const isWinograd = (s: Schedule): boolean => s.algo === 'winograd';

/**
 * Builds a Schedule with the canonical field order (records and hashes depend on it). algo comes
 * last and only when it is 'winograd': a direct schedule's form is the one it had before the knob.
 */
export function makeSchedule(s: Schedule): Schedule {
  return {
    vec: s.vec,
    regOc: s.regOc,
    regCols: s.regCols,
    tileIc: s.tileIc,
    tileOc: s.tileOc,
    tileRows: s.tileRows,
    tileCols: s.tileCols,
    loopOrder: s.loopOrder,
    parallelAxis: s.parallelAxis,
    unroll: s.unroll,
    threads: s.threads,
    ...(isWinograd(s) ? { algo: 'winograd' as const } : {}),
  };
}

const ceilDiv = (a: number, b: number) => Math.ceil(a / b);

/** Loop trip counts a schedule implies for a problem. */
export interface TileCounts {
  readonly ocGroups: number; // register oc groups per conv group (depthwise: channel vectors)
  readonly colBlocks: number; // register column blocks per row
  readonly icBlocks: number; // reduction blocks (1 for depthwise)
  readonly ocTiles: number;
  readonly rowTiles: number;
  readonly colTiles: number;
  readonly icTiles: number;
  readonly chunks: number; // iterations of the parallel loop
}

export function tileCounts(p: Problem, s: Schedule): TileCounts {
  const ocGroups = p.kind === 'direct' ? ceilDiv(p.ocVecs, s.regOc) : p.chanVecs;
  const groups = p.kind === 'direct' ? p.groups : 1;
  const icBlocks = p.kind === 'direct' ? p.icBlocks : 1;
  const colBlocks = ceilDiv(p.cols, s.regCols);
  const ocTiles = ceilDiv(ocGroups, s.tileOc),
    rowTiles = ceilDiv(p.rows, s.tileRows);
  const colTiles = ceilDiv(colBlocks, s.tileCols),
    icTiles = ceilDiv(icBlocks, s.tileIc);
  return { ocGroups, colBlocks, icBlocks, ocTiles, rowTiles, colTiles, icTiles, chunks: p.batch * groups * ocTiles * rowTiles * colTiles };
}

/** A tile index of the parallel loop: its name in the generated C and its trip count. */
export type TileAxis = readonly ['g' | 'ocT' | 'rowT' | 'colT', number];

/**
 * The parallel loop's tile indices, least significant first (batch is the most significant, after
 * them): the generated run functions decode the loop index in this order, so with schedule(static)
 * a thread's contiguous chunk range is a range of the last index whose count exceeds one.
 */
export function parallelOrder(p: Problem, s: Schedule): TileAxis[] {
  const c = tileCounts(p, s);
  if (p.kind === 'depthwise') {
    return s.parallelAxis === 'oc'
      ? [
          ['colT', c.colTiles],
          ['rowT', c.rowTiles],
          ['ocT', c.ocTiles],
        ]
      : [
          ['ocT', c.ocTiles],
          ['colT', c.colTiles],
          ['rowT', c.rowTiles],
        ];
  }
  return s.parallelAxis === 'oc'
    ? [
        ['colT', c.colTiles],
        ['rowT', c.rowTiles],
        ['ocT', c.ocTiles],
        ['g', p.groups],
      ]
    : [
        ['ocT', c.ocTiles],
        ['g', p.groups],
        ['colT', c.colTiles],
        ['rowT', c.rowTiles],
      ];
}

/** What threads divide among themselves in a version's output: channel blocks, bands of rows, columns, or nothing (one chunk). */
export type ThreadSplit = 'channels' | 'rows' | 'columns' | 'none';

/**
 * How threads split a version's output when more than one runs it (at any count: the run function
 * takes its thread count at run time): along the outermost tile index with more than one value
 * (batch 1), or not at all when the loop has one chunk.
 */
export function threadSplit(p: Problem, s: Schedule): ThreadSplit {
  // Winograd versions write their output in a loop over (image, oc vector, row-major 4×4 tiles)
  if (isWinograd(s) && p.kind === 'direct') {
    return p.ocVecs > 1 ? 'channels' : Math.ceil(p.rows / WINO_M) * Math.ceil(p.cols / WINO_M) > 1 ? 'rows' : 'none';
  }
  const outer = parallelOrder(p, s)
    .reverse()
    .find(([, n]) => n > 1);
  if (outer === undefined) return 'none';
  return outer[0] === 'rowT' ? 'rows' : outer[0] === 'colT' ? 'columns' : 'channels';
}

/** Why a schedule is not valid for this workload on this target, or undefined when it is. */
export function whyInvalid(s: Schedule, w: WorkloadShape, t: Target): string | undefined {
  if (!vectorWidths(t.isa).includes(s.vec)) return `vector width ${s.vec} not supported by the target`;
  if (!widthFits(w, s.vec)) return `channels per group are not a multiple of ${s.vec}`;
  const p = problemOf(w, s.vec);
  const ints = [s.regOc, s.regCols, s.tileIc, s.tileOc, s.tileRows, s.tileCols, s.unroll, s.threads];
  if (!ints.every((x) => Number.isInteger(x) && x >= 1)) return 'knobs must be positive integers';
  if (s.loopOrder !== 'oc_outer' && s.loopOrder !== 'spatial_outer') return 'bad loopOrder';
  if (s.parallelAxis !== 'oc' && s.parallelAxis !== 'spatial') return 'bad parallelAxis';
  if (s.algo !== undefined && s.algo !== 'direct' && s.algo !== 'winograd') return 'bad algo';
  if (isWinograd(s)) return whyInvalidWinograd(s, w, t);
  const regs = vectorRegisters(t.isa);
  if (p.kind === 'depthwise') {
    if (s.regOc !== 1 || s.tileIc !== 1 || s.unroll !== 1) return 'depthwise uses regOc = tileIc = unroll = 1';
    if (s.regCols + 2 > regs) return 'register tile does not fit the register file';
  } else {
    if (s.regOc > p.ocVecs) return 'regOc exceeds the output vectors';
    if (s.regOc * s.regCols + s.regOc + 1 > regs) return 'register tile does not fit the register file';
    if (s.unroll > s.vec) return 'unroll exceeds the vector width';
    if (p.kw * s.unroll * s.regOc * s.regCols > MAX_UNROLLED_FMAS) return 'unrolled body too large';
  }
  const c = tileCounts(p, s);
  if (s.regCols > p.cols) return 'regCols exceeds the output columns';
  if (s.tileIc > c.icBlocks || s.tileOc > c.ocGroups || s.tileRows > p.rows || s.tileCols > c.colBlocks) {
    return 'a cache tile exceeds its dimension';
  }
  if (s.threads > t.cores) return `threads exceed the target's ${t.cores} cores`;
  return undefined;
}

function whyInvalidWinograd(s: Schedule, w: WorkloadShape, t: Target): string | undefined {
  if (!winogradEligible(w)) return 'winograd needs an ungrouped stride-1 3×3 conv with more than a few input channels';
  const p = winogradProblem(w, s.vec);
  if (s.regOc > p.ocVecs) return 'regOc exceeds the output vectors';
  if (s.regOc * s.regCols + s.regOc + 1 > vectorRegisters(t.isa)) return 'register tile does not fit the register file';
  if (s.unroll > s.vec) return 'unroll exceeds the vector width';
  if (s.unroll * s.regOc * s.regCols > MAX_UNROLLED_FMAS) return 'unrolled body too large';
  if (s.regCols > p.tiles) return 'regCols exceeds the tiles';
  const c = winogradCounts(p, s);
  if (s.tileOc > c.ocGroups || s.tileCols > c.colBlocks) return 'a cache tile exceeds its dimension';
  if (s.tileIc !== 1 || s.tileRows !== 1) return 'winograd pins tileIc = tileRows = 1';
  if (s.threads > t.cores) return `threads exceed the target's ${t.cores} cores`;
  return undefined;
}

export function isValid(s: Schedule, w: WorkloadShape, t: Target): boolean {
  return whyInvalid(s, w, t) === undefined;
}

/** 1, 2, 4, … below n, plus n itself. */
export function powersUpTo(n: number): number[] {
  const out: number[] = [];
  for (let x = 1; x < n; x *= 2) out.push(x);
  out.push(n);
  return out;
}

/** Clamp every knob into its legal range for this workload (used after sampling and mutation). */
export function repair(s: Schedule, w: WorkloadShape, t: Target): Schedule {
  if (isWinograd(s) && winogradEligible(w)) return repairWinograd(s, w, t);
  const widths = vectorWidths(t.isa).filter((v) => widthFits(w, v));
  const vec = widths.includes(s.vec) ? s.vec : widths[0]!;
  const p = problemOf(w, vec);
  const tiles = registerTiles(p, t);
  const fits =
    tiles.find((r) => r.regOc === s.regOc && r.regCols === s.regCols) ??
    tiles.find((r) => r.regOc <= s.regOc && r.regCols <= s.regCols) ??
    tiles[0]!;
  const draft = { ...s, vec, regOc: fits.regOc, regCols: fits.regCols, algo: 'direct' as const };
  const c = tileCounts(p, draft);
  const clamp = (x: number, hi: number) => Math.max(1, Math.min(hi, Math.round(x)));
  const depthwise = p.kind === 'depthwise';
  let unroll = depthwise ? 1 : clamp(s.unroll, vec);
  while (!depthwise && p.kw * unroll * fits.regOc * fits.regCols > MAX_UNROLLED_FMAS) unroll = Math.max(1, unroll >> 1);
  return makeSchedule({
    ...draft,
    tileIc: depthwise ? 1 : clamp(s.tileIc, c.icBlocks),
    tileOc: clamp(s.tileOc, c.ocGroups),
    tileRows: clamp(s.tileRows, p.rows),
    tileCols: clamp(s.tileCols, c.colBlocks),
    unroll,
    threads: clamp(s.threads, t.cores),
  });
}

function repairWinograd(s: Schedule, w: WorkloadShape, t: Target): Schedule {
  const widths = widthsFor(w, t);
  const vec = widths.includes(s.vec) ? s.vec : widths[0]!;
  const p = winogradProblem(w, vec);
  const tiles = winogradRegisterTiles(w, vec, t);
  const fits =
    tiles.find((r) => r.regOc === s.regOc && r.regCols === s.regCols) ??
    tiles.find((r) => r.regOc <= s.regOc && r.regCols <= s.regCols) ??
    tiles[0]!;
  const c = winogradCounts(p, { ...s, ...fits });
  const clamp = (x: number, hi: number) => Math.max(1, Math.min(hi, Math.round(x)));
  let unroll = clamp(s.unroll, vec);
  while (unroll * fits.regOc * fits.regCols > MAX_UNROLLED_FMAS) unroll = Math.max(1, unroll >> 1);
  return makeSchedule({
    ...s,
    vec,
    regOc: fits.regOc,
    regCols: fits.regCols,
    tileIc: 1,
    tileOc: clamp(s.tileOc, c.ocGroups),
    tileRows: 1,
    tileCols: clamp(s.tileCols, c.colBlocks),
    unroll,
    threads: clamp(s.threads, t.cores),
    algo: 'winograd',
  });
}

/** Valid vector widths for a workload, widest first. */
export function widthsFor(w: WorkloadShape, t: Target): (16 | 8 | 1)[] {
  return vectorWidths(t.isa).filter((v) => widthFits(w, v));
}

/** One random schedule; biased toward the widest vector and the better register tiles. */
export function sampleSchedule(w: WorkloadShape, t: Target, rng: Rng): Schedule {
  const widths = widthsFor(w, t);
  const vec = rng.next() < 0.75 ? widths[0]! : rng.pick(widths);
  const p = problemOf(w, vec);
  const tiles = registerTiles(p, t);
  const reg = tiles[Math.floor(tiles.length * rng.next() ** 3)]!;
  const c = tileCounts(
    p,
    makeSchedule({
      vec,
      ...reg,
      tileIc: 1,
      tileOc: 1,
      tileRows: 1,
      tileCols: 1,
      loopOrder: 'oc_outer',
      parallelAxis: 'oc',
      unroll: 1,
      threads: 1,
    }),
  );
  const unrolls = powersUpTo(vec).filter((u) => u <= vec);
  return repair(
    makeSchedule({
      vec,
      ...reg,
      tileIc: rng.next() < 0.5 ? c.icBlocks : rng.pick(powersUpTo(c.icBlocks)),
      tileOc: rng.pick(powersUpTo(c.ocGroups)),
      tileRows: rng.pick(powersUpTo(p.rows)),
      tileCols: rng.pick(powersUpTo(c.colBlocks)),
      loopOrder: rng.pick(['oc_outer', 'spatial_outer'] as const),
      parallelAxis: rng.pick(['oc', 'spatial'] as const),
      unroll: rng.pick(unrolls),
      threads: rng.int(1, t.cores),
    }),
    w,
    t,
  );
}

/** n distinct random schedules (fewer if the space is smaller than n). */
export function sampleSchedules(w: WorkloadShape, t: Target, n: number, rng: Rng): Schedule[] {
  const seen = new Map<string, Schedule>();
  for (let attempt = 0; attempt < n * 20 && seen.size < n; attempt++) {
    const s = sampleSchedule(w, t, rng);
    seen.set(JSON.stringify(s), s);
  }
  return [...seen.values()];
}

type Knob = keyof Schedule;
const KNOBS: readonly Knob[] = [
  'vec',
  'regOc',
  'regCols',
  'tileIc',
  'tileOc',
  'tileRows',
  'tileCols',
  'loopOrder',
  'parallelAxis',
  'unroll',
  'threads',
];

/** One knob moved: numeric knobs halve/double or step by one, enums flip; the result is repaired. */
export function mutate(s: Schedule, w: WorkloadShape, t: Target, rng: Rng): Schedule {
  // only convs that may run the Winograd form can flip to it (every other workload draws as before)
  const knobs = winogradEligible(w) ? [...KNOBS, 'algo' as const] : KNOBS;
  for (let attempt = 0; attempt < 16; attempt++) {
    const knob = rng.pick(knobs);
    let next: Schedule;
    if (knob === 'algo') next = { ...s, algo: isWinograd(s) ? 'direct' : 'winograd' };
    else if (knob === 'vec') next = { ...s, vec: rng.pick(widthsFor(w, t)) };
    else if (knob === 'loopOrder') next = { ...s, loopOrder: s.loopOrder === 'oc_outer' ? 'spatial_outer' : 'oc_outer' };
    else if (knob === 'parallelAxis') next = { ...s, parallelAxis: s.parallelAxis === 'oc' ? 'spatial' : 'oc' };
    else {
      const x = s[knob];
      const moves = [x * 2, Math.floor(x / 2), x + 1, x - 1];
      next = { ...s, [knob]: rng.pick(moves) };
    }
    const fixed = repair(next, w, t);
    if (JSON.stringify(fixed) !== JSON.stringify(s)) return fixed;
  }
  return sampleSchedule(w, t, rng);
}
