/**
 * The ranking model: what the search knows about a workload's candidates before measuring any of
 * them, learned from the tuning database — every complete ok record of every target and workload,
 * not only this one's (a fresh workload has none of its own).
 *
 * It predicts a candidate's quiet latency relative to its run's other candidates, not in
 * milliseconds: a run is one (target, workload, thread count, code generator) group, and the
 * target of the fit is ln(level-0 median) minus the group's mean of it. Milliseconds differ by
 * orders of magnitude between workloads and machines; how much a schedule gains or loses against
 * its siblings is what carries over. Ridge regression (cost-model.ts fitRidge) on:
 *  - the schedule columns of the in-pass model (cost-model.ts scheduleColumns): log2 footprints at
 *    L1/L2/L3, log2 parallel chunks, threads, load balance, log2 arithmetic intensity, register
 *    tile, log2 reduction split, vector width, unroll, loop order, parallel axis;
 *  - cache pressure against the record's own machine: log2(footprint / cache size) at L1d, L2 and
 *    L3, clipped to ±8, and its overshoot max(0, ·) — a tile over its cache costs a factor, one well
 *    inside costs nothing, and the sizes differ per target;
 *  - the work per chunk, log2(flops / chunks): a chunk too small to pay for its fork.
 * Groups with a single record say nothing about ranking and are left out.
 */
import { medianMs, type TuningRecord } from '../db/record.js';
import type { ScheduleFeatures } from '../space/features.js';
import type { Schedule } from '../space/knobs.js';
import type { CacheSizes } from '../toolchain/target.js';
import { fitRidge, scheduleColumns } from './cost-model.js';

const lg = (x: number) => Math.log2(Math.max(1e-9, x));
const clip = (x: number) => Math.max(-8, Math.min(8, x));

/** Names of rankColumns' columns, in order (docs and the evaluation's output). */
export const RANK_FEATURES: readonly string[] = [
  'log2 L1 footprint',
  'log2 L2 footprint',
  'log2 L3 footprint',
  'log2 parallel chunks',
  'threads',
  'log2 threads',
  'load balance',
  'log2 arithmetic intensity',
  'register tile',
  'log2 reduction split',
  'vector width',
  'unroll',
  'loop order oc_outer',
  'parallel axis oc',
  'log2 L1 footprint / L1d',
  'log2 L2 footprint / L2',
  'log2 L3 footprint / L3',
  'L1d overshoot',
  'L2 overshoot',
  'L3 overshoot',
  'log2 flops per chunk',
];

/** One candidate's row: its schedule columns, its cache pressure on `caches`, its work per chunk. */
export function rankColumns(f: ScheduleFeatures, s: Schedule, caches: CacheSizes): number[] {
  const pressure = [
    clip(lg(f.footprintBytes.l1 / Math.max(1, caches.l1d))),
    clip(lg(f.footprintBytes.l2 / Math.max(1, caches.l2))),
    clip(lg(f.footprintBytes.l3 / Math.max(1, caches.l3))),
  ];
  return [...scheduleColumns(f, s), ...pressure, ...pressure.map((p) => Math.max(0, p)), lg(f.flops / Math.max(1, f.parallelChunks))];
}

/** The group a record ranks within: one tuning run. */
export const runGroupKey = (r: TuningRecord) => `${r.target} ${r.workload} ${r.threads} ${r.tool.codegen}`;

/** A record with a level-0 median, as a row and its log latency. */
export interface RankedRecord {
  readonly record: TuningRecord;
  readonly group: string;
  readonly row: readonly number[];
  readonly logMs: number;
}

/** The records that can teach or test a ranking: ok, complete, with a quiet median, in a group of at least two. */
export function rankingRecords(records: Iterable<TuningRecord>): RankedRecord[] {
  const usable: RankedRecord[] = [];
  for (const r of records) {
    const ms = r.status === 'ok' && r.stage === undefined ? medianMs(r, 0) : undefined;
    if (ms === undefined || !(ms > 0)) continue;
    usable.push({ record: r, group: runGroupKey(r), row: rankColumns(r.features, r.schedule, r.targetSpec.caches), logMs: Math.log(ms) });
  }
  const sizes = new Map<string, number>();
  for (const u of usable) sizes.set(u.group, (sizes.get(u.group) ?? 0) + 1);
  return usable.filter((u) => sizes.get(u.group)! >= 2);
}

export interface RankModel {
  /** Predicted ln(latency) relative to the candidate's run: lower is faster. Only differences within one run mean anything. */
  score(f: ScheduleFeatures, s: Schedule, caches: CacheSizes): number;
  /** The same from a row already made (rankColumns). */
  scoreRow(row: readonly number[]): number;
  /** Records it was fitted on. */
  readonly records: number;
}

/** Fewer records than this fit no model: the search then keeps its own order. */
export const MIN_RANK_RECORDS = 16;

/** Fit the ranking model, or undefined with fewer than MIN_RANK_RECORDS usable records. */
export function fitRankModel(records: readonly RankedRecord[], lambda = 1): RankModel | undefined {
  if (records.length < MIN_RANK_RECORDS) return undefined;
  const mean = new Map<string, { sum: number; n: number }>();
  for (const r of records) {
    const m = mean.get(r.group) ?? { sum: 0, n: 0 };
    mean.set(r.group, { sum: m.sum + r.logMs, n: m.n + 1 });
  }
  const model = fitRidge(
    records.map((r) => r.row),
    records.map((r) => r.logMs - mean.get(r.group)!.sum / mean.get(r.group)!.n),
    lambda,
  );
  return {
    score: (f, s, caches) => model.predict(rankColumns(f, s, caches)),
    scoreRow: (row) => model.predict(row),
    records: records.length,
  };
}
