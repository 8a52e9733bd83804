/**
 * Named points of the schedule space: the two ends of the locality–parallelism trade-off, a
 * balanced default, weight streaming for convs whose weights dominate, and the Winograd form's
 * default for the convs that may take it. The tuner seeds its
 * search with them; the trade-off evidence measures the two ends.
 */
import type { WorkloadShape } from '../ir/workload.js';
import { scheduleFeatures } from './features.js';
import { problemOf } from './problem.js';
import { isValid, makeSchedule, registerTiles, repair, tileCounts, widthsFor, winogradRegisterTiles, type Schedule } from './knobs.js';
import { winogradCounts, winogradEligible, winogradProblem } from './winograd.js';
import type { Target } from '../toolchain/target.js';

/**
 * Whole-layer tiles around the best register tile that still allows `minChunks` parallel chunks
 * (small layers need smaller register tiles to give every thread work).
 */
function base(w: WorkloadShape, t: Target, threads: number, minChunks = 1): Schedule {
  const vec = widthsFor(w, t)[0]!;
  const p = problemOf(w, vec);
  const tiles = registerTiles(p, t);
  const most = (r: { regOc: number; regCols: number }) =>
    tileCounts(
      p,
      makeSchedule({
        vec,
        ...r,
        tileIc: 1,
        tileOc: 1,
        tileRows: 1,
        tileCols: 1,
        loopOrder: 'oc_outer',
        parallelAxis: 'oc',
        unroll: 1,
        threads,
      }),
    ).chunks;
  const reg = tiles.find((r) => most(r) >= minChunks) ?? tiles.reduce((a, b) => (most(b) > most(a) ? b : a));
  const draft = makeSchedule({
    vec,
    ...reg,
    tileIc: 1,
    tileOc: 1,
    tileRows: 1,
    tileCols: 1,
    loopOrder: 'oc_outer',
    parallelAxis: 'oc',
    unroll: Math.min(vec, 4),
    threads,
  });
  const c = tileCounts(p, draft);
  return repair({ ...draft, tileIc: c.icBlocks, tileOc: c.ocGroups, tileRows: p.rows, tileCols: c.colBlocks }, w, t);
}

/** Halve the largest splittable tile dimension (oc first: weights dominate most layers). */
function split(s: Schedule): Schedule | undefined {
  if (s.tileOc > 1) return { ...s, tileOc: Math.ceil(s.tileOc / 2) };
  if (s.tileRows > 1) return { ...s, tileRows: Math.ceil(s.tileRows / 2) };
  if (s.tileCols > 1) return { ...s, tileCols: Math.ceil(s.tileCols / 2) };
  return undefined;
}

/**
 * Locality-greedy: whole reductions, tiles as large as L2 allows, only as many chunks as threads
 * (each thread streams one big tile: maximal reuse from its cache, nothing left to rebalance).
 */
export function localityGreedy(w: WorkloadShape, t: Target, threads = t.cores): Schedule {
  let s = base(w, t, threads);
  const p = problemOf(w, s.vec);
  for (;;) {
    const f = scheduleFeatures(w, s);
    if (f.parallelChunks >= threads && f.footprintBytes.l2 <= t.caches.l2) break;
    const next = split(s);
    if (!next) break;
    s = next;
  }
  return repair({ ...s, parallelAxis: tileCounts(p, s).ocTiles >= threads ? 'oc' : 'spatial' }, w, t);
}

/**
 * Parallelism-heavy: one register oc group and one row of register blocks per chunk, reductions
 * split so a tile stays in a quarter of L2, all cores: many small chunks, a small footprint.
 */
export function parallelHeavy(w: WorkloadShape, t: Target, threads = t.cores): Schedule {
  const s = base(w, t, threads, 4 * threads);
  let heavy = repair(
    { ...s, tileOc: 1, tileRows: 1, tileCols: Math.min(s.tileCols, 2), parallelAxis: 'spatial', loopOrder: 'spatial_outer' },
    w,
    t,
  );
  while (heavy.tileIc > 1 && scheduleFeatures(w, heavy).footprintBytes.l2 > t.caches.l2 / 4) {
    heavy = { ...heavy, tileIc: Math.ceil(heavy.tileIc / 2) };
  }
  return heavy;
}

/** A conv whose weights outweigh its input and output together (ResNet's late stages: 9.4 MB of weights on 0.1 MB of input at 7×7 × 512). */
export function weightHeavy(w: WorkloadShape): boolean {
  if (w.op !== 'conv2d' || w.groups !== 1) return false;
  const weights = w.cout * w.cin * w.kh * w.kw,
    activations = w.n * (w.cin * w.h * w.w + w.cout * w.oh * w.ow);
  return weights > activations;
}

/**
 * Weight-streaming, for weight-heavy convs only (undefined otherwise): one register oc group and
 * one input-channel block per pass over the whole image (rows halved until the cache tile fits L1), so
 * every weight is read once from memory and the output tile stays in L1 across the reduction —
 * the order MLAS's GEMM takes for such shapes. On a 512→512 3×3 layer at 7×7 (Zen 3, AVX2) it ran
 * at 69 GFLOP/s against 55 for the best of the other presets.
 */
export function weightStreaming(w: WorkloadShape, t: Target, threads = t.cores): Schedule | undefined {
  if (!weightHeavy(w)) return undefined;
  let s = repair({ ...base(w, t, threads, threads), tileIc: 1, tileOc: 1, loopOrder: 'oc_outer', parallelAxis: 'oc' }, w, t);
  while (s.tileRows > 1 && scheduleFeatures(w, s).footprintBytes.l2 > t.caches.l1d)
    s = repair({ ...s, tileRows: Math.ceil(s.tileRows / 2) }, w, t);
  return isValid(s, w, t) ? s : undefined;
}

/** A balanced starting point: best register tile, L2-sized tiles, ≥ 4 chunks per thread. */
export function defaultTableRefresh(w: WorkloadShape, t: Target, threads = t.cores): Schedule {
  let s = base(w, t, threads);
  for (;;) {
    const f = scheduleFeatures(w, s);
    if (f.parallelChunks >= 4 * threads && f.footprintBytes.l2 <= t.caches.l2 / 2) break;
    const next = split(s);
    if (!next) break;
    s = next;
  }
  return repair(s, w, t);
}

/**
 * The Winograd form's starting point, for the convs that may take it (undefined otherwise): the
 * best register tile of its GEMMs, chunks of all oc groups × all tile blocks of one point ξ, halved
 * (tile blocks first, they are re-read per oc group) until a chunk's working set fits half of L2.
 * Whether it beats the direct versions of the layer, and at which levels, is for tuning to measure.
 */
export function winogradDefault(w: WorkloadShape, t: Target, threads = t.cores): Schedule | undefined {
  if (!winogradEligible(w)) return undefined;
  const vec = widthsFor(w, t)[0]!;
  const reg = winogradRegisterTiles(w, vec, t)[0]!;
  const c = winogradCounts(winogradProblem(w, vec), { ...reg, tileOc: 1, tileCols: 1 });
  let s = repair(
    makeSchedule({
      vec,
      ...reg,
      tileIc: 1,
      tileOc: c.ocGroups,
      tileRows: 1,
      tileCols: c.colBlocks,
      loopOrder: 'oc_outer',
      parallelAxis: 'oc',
      unroll: Math.min(vec, 4),
      threads,
      algo: 'winograd',
    }),
    w,
    t,
  );
  while (scheduleFeatures(w, s).footprintBytes.l2 > t.caches.l2 / 2 && (s.tileCols > 1 || s.tileOc > 1)) {
    s = repair(s.tileCols > 1 ? { ...s, tileCols: Math.ceil(s.tileCols / 2) } : { ...s, tileOc: Math.ceil(s.tileOc / 2) }, w, t);
  }
  return isValid(s, w, t) ? s : undefined;
}
