/**
 * Which thread moves each part of a channel gather (ops_channel.c), chosen so that each thread
 * reads what its own core wrote. The op's fixed split (pixels in equal halves on planes of ≥ 128,
 * else output blocks in equal halves) misses its writers: ShuffleNet's 14×14 1×1 convs give 6 of
 * their 11 column tiles to the first thread (pixels 0–107, not 0–97), and a 7×7 gather's halves of
 * output blocks need not be the halves of source blocks each core wrote (space/tile-owner.ts).
 * Here each (output block, pixel) goes to the thread that wrote most of the source blocks it
 * loads; where no writer is known, or the writers tie, the fixed split's choice stands.
 *
 * Locality is not worth any imbalance: on ShuffleNet's 7×7 stage, giving one core 4 of 6 blocks
 * it wrote itself ran slower than the even split that reads 3 of them across cores. So an
 * assignment that leaves one thread more than MAX_IMBALANCE times an even share of the loads is
 * dropped, as is one equal to the fixed split.
 *
 * The writers are the level-0 versions at the plan's thread count (translate.ts). When the session runs a
 * writer at another version or count (setLevel, a block's cores), the map is stale: every pixel is still
 * written exactly once, by a thread that may read across cores.
 *
 * Work items are numbered as the C op numbers them: outputs in order, then batch, then block.
 * Returns the runs (item, q0, q1, thread), sorted by item then q0, covering every item's pixels
 * [0, hw) exactly, or undefined.
 */
import type { OutputOwner } from '../bundle/thread-split.js';

export interface GatherRun {
  readonly item: number;
  readonly q0: number;
  readonly q1: number;
  readonly thread: number;
}

export interface GatherShape {
  /** Per output, per channel: [input, input channel]. */
  readonly sources: readonly (readonly (readonly [number, number])[])[];
  readonly n: number;
  readonly hw: number;
  readonly v: number;
}

/** The most a thread's loads may exceed an even share by (the 14×14 gathers above run at 108 / 88 pixels: 1.10). */
export const MAX_IMBALANCE = 1.15;

/** The most threads an assignment may name (ops_channel.c check_runs: VT_MAX_CORES). */
export const MAX_ASSIGNED_THREADS = 1024;

/** Pixels of a plane from which the op's fixed split divides pixels rather than blocks (ops_channel.c). */
const PIXEL_SPLIT_FROM = 128;

/**
 * The fixed split's thread for work item `item` of `items`, pixel `q` (ops_channel.c vt_op_channel_gather):
 * pixels in equal parts over every thread, or items in equal parts over min(threads, items) (vt_parallel
 * runs no more threads than items).
 */
export function fixedOwner(item: number, items: number, q: number, hw: number, threads: number): number {
  const [at, of, parts] = hw >= PIXEL_SPLIT_FROM ? [q, hw, threads] : [item, items, Math.min(threads, items)];
  let t = 0;
  while (t < parts - 1 && at >= Math.floor((of * (t + 1)) / parts)) t++;
  return t;
}

/** The distinct (input, source block) pairs each output block loads, outputs in order. */
function blockSources(g: GatherShape): { input: number; block: number }[][] {
  const out: { input: number; block: number }[][] = [];
  for (const list of g.sources) {
    for (let ob = 0; ob * g.v < list.length; ob++) {
      const seen = new Map<string, { input: number; block: number }>();
      for (const [input, ch] of list.slice(ob * g.v, ob * g.v + g.v)) {
        const block = Math.floor(ch / g.v);
        seen.set(`${input}/${block}`, { input, block });
      }
      out.push([...seen.values()]);
    }
  }
  return out;
}

export function assignGather(g: GatherShape, threads: number, owners: readonly (OutputOwner | undefined)[]): GatherRun[] | undefined {
  if (threads < 2 || threads > MAX_ASSIGNED_THREADS || owners.every((o) => o === undefined)) return undefined;
  const perBlock = blockSources(g);
  const blocksOf = g.sources.map((list) => Math.ceil(list.length / g.v));
  const items = g.n * blocksOf.reduce((a, b) => a + b, 0);
  const runs: GatherRun[] = [];
  const loads = new Array<number>(threads).fill(0);
  let differs = false,
    item = 0,
    firstBlock = 0;
  for (let o = 0; o < g.sources.length; o++) {
    for (let n = 0; n < g.n; n++) {
      for (let ob = 0; ob < blocksOf[o]!; ob++, item++) {
        const pieces = perBlock[firstBlock + ob]!;
        for (let q = 0; q < g.hw; q++) {
          const fixed = fixedOwner(item, items, q, g.hw, threads);
          const votes = new Array<number>(threads).fill(0);
          for (const p of pieces) {
            const w = owners[p.input]?.(n, p.block, q);
            if (w !== undefined && w < threads) votes[w]!++;
          }
          const most = Math.max(...votes);
          const thread = most === 0 || votes[fixed] === most ? fixed : votes.indexOf(most);
          differs ||= thread !== fixed;
          loads[thread]! += pieces.length;
          const last = runs[runs.length - 1];
          if (last && last.item === item && last.thread === thread) runs[runs.length - 1] = { ...last, q1: q + 1 };
          else runs.push({ item, q0: q, q1: q + 1, thread });
        }
      }
    }
    firstBlock += blocksOf[o]!;
  }
  const share = loads.reduce((a, b) => a + b, 0) / threads;
  return differs && Math.max(...loads) <= MAX_IMBALANCE * share ? runs : undefined;
}
