/**
 * Trials: a batch of schedules for one workload in, one TrialResult per schedule out. A schedule
 * whose record id is already in the database is a database hit (its record is read back, nothing
 * runs); the rest are generated and built together (parallel compiles, cached objects), then
 * measured in one harness child (one reference computation per batch, one check per candidate),
 * one candidate at a time at every level it can be measured at — the noisy ones only if its quiet
 * median passes the screen below — and each one's record is appended to the database the moment
 * its last level is settled: kill -9 loses at most the candidate in flight.
 */
import { generateKernel, kernelSymbol } from '../codegen/kernel.js';
import { internalError } from '../errors.js';
import { median } from '../stats.js';
import { levelsOf, makeRecord, medianMs, recordId, recordIdOf, type TuningRecord } from '../db/record.js';
import type { TuningDatabase } from '../db/store.js';
import type { Workload } from '../ir/workload.js';
import { buildKernels } from '../measure/build.js';
import type { Measurement } from '../measure/run-candidate.js';
import { makeCandidate } from '../space/candidate.js';
import type { Schedule } from '../space/schedule.js';
import type { Target } from '../toolchain/target.js';
import { measureCandidatesAtLevels } from '../measure/at-levels.js';
import type { LevelBank } from '../interference/bank.js';
import type { TrialResult } from './search.js';

export interface EvaluateContext {
  readonly target: Target;
  readonly fingerprint: string;
  readonly db: TuningDatabase;
  /** Records file for appends (shards write their own). */
  readonly recordsFile?: string;
  readonly levels: readonly number[];
  readonly levelsFor: (threads: number) => readonly number[];
  /** The co-runner bank, started on first need (a warm rerun starts no noise at all). */
  readonly bank: () => Promise<LevelBank | undefined>;
  readonly cacheDir?: string;
  readonly minTimeMs?: number;
  readonly timeoutMs?: number;
  /** Noisy levels only for candidates within this factor of the best quiet median so far (DEFAULT_NOISY_SCREEN; Infinity: all). */
  readonly noisyScreen?: number;
  /** Called after each trial (measured or hit). */
  readonly onTrial?: (r: TrialResult) => void;
}

/** A database record as a trial result, restricted to the requested levels. */
export function trialFromRecord(r: TuningRecord, id: string, levels: readonly number[], fromDb: boolean): TrialResult {
  const wanted = levels.map(String);
  const have = levelsOf(r).map(String).filter((l) => wanted.includes(l));
  const medians: Record<string, number> = {};
  const repeats: Record<string, readonly number[]> = {};
  for (const l of have) {
    repeats[l] = r.latencies[l]!;
    const m = medianMs(r, l);
    if (m !== undefined) medians[l] = m;
  }
  return {
    id, schedule: r.schedule, features: r.features, symbol: kernelSymbol(r.workloadSpec, r.schedule), status: r.status,
    medianMs: medians, repeatsMs: repeats,
    unavailableLevels: r.status === 'ok' ? levels.filter((l) => !have.includes(String(l))) : [],
    fromDb, ...(r.error !== undefined ? { error: r.error } : {}),
  };
}

/**
 * Noisy levels are measured only for a candidate whose quiet median is within this factor of the
 * best quiet median of its workload and thread count so far. A slower one is dominated at level 0
 * by a candidate measured at every level (family.ts), and could matter only by beating that one
 * under noise by more than 1.5×: far beyond the level-to-level trade-offs measured on this
 * machine (bench/RESULTS.md, single pass vs five passes).
 */
export const DEFAULT_NOISY_SCREEN = 1.5;

/** The best level-0 median over this workload's ok records at `threads` threads (this codegen, this target). */
function bestQuietMs(db: TuningDatabase, key: string, threads: number): number | undefined {
  let best: number | undefined;
  for (const r of db.lookup(key)) {
    if (r.status !== 'ok' || r.threads !== threads) continue;
    const ms = medianMs(r, 0);
    if (ms !== undefined && (best === undefined || ms < best)) best = ms;
  }
  return best;
}

/**
 * Fold per-level measurements into one record: ok only if every measured level was ok. A level
 * skipped by screening is simply absent (the record says where it was measured, nothing more).
 */
function recordFrom(w: Workload, s: Schedule, ctx: EvaluateContext, levels: readonly number[], ms: readonly (Measurement | undefined)[],
  candidateFeatures: TuningRecord['features']): TuningRecord {
  const latencies: Record<string, readonly number[]> = {};
  let failure: { status: Measurement['status']; message: string } | undefined;
  ms.forEach((m, i) => {
    if (m === undefined) return;
    if (m.status === 'ok' && m.repeatsMs.length > 0) latencies[String(levels[i])] = m.repeatsMs;
    else failure ??= { status: m.status === 'ok' ? 'crash' : m.status, message: `level ${levels[i]}: ${m.message ?? m.status}` };
  });
  return makeRecord({ workload: w, target: ctx.target, schedule: s, features: candidateFeatures, latencies,
    status: failure ? failure.status : 'ok', ...(failure ? { error: failure.message } : {}) });
}

export async function evaluateBatch(w: Workload, schedules: readonly Schedule[], ctx: EvaluateContext): Promise<TrialResult[]> {
  const known = new Map(ctx.db.records(w.key).map((r) => [recordId(r), r]));
  const ids = schedules.map((s) => recordIdOf(w.key, ctx.fingerprint, s, s.threads));
  const results = new Array<TrialResult | undefined>(schedules.length);
  const todo: number[] = [];
  ids.forEach((id, i) => {
    const r = ctx.db.has(id) ? known.get(id) : undefined;
    if (r) results[i] = trialFromRecord(r, id, ctx.levels, true);
    else todo.push(i);
  });

  if (todo.length > 0) {
    const cands = todo.map((i) => makeCandidate(w, schedules[i]!, ctx.target));
    const units = cands.map(generateKernel);
    const built = new Map((await buildKernels(units, { cflags: ctx.target.cflags, ...(ctx.cacheDir ? { cacheDir: ctx.cacheDir } : {}) }))
      .map((b) => [b.symbol, b]));
    const settle = async (i: number, record: TuningRecord) => {
      await ctx.db.append([record], ctx.recordsFile ? { file: ctx.recordsFile } : {});
      results[i] = trialFromRecord(record, ids[i]!, ctx.levels, false);
      ctx.onTrial?.(results[i]!);
    };
    const runnable: { i: number; k: number; levels: number[]; soPath: string; symbol: string }[] = [];
    for (const [k, i] of todo.entries()) {
      const b = built.get(units[k]!.symbol)!, s = schedules[i]!;
      const levels = ctx.levelsFor(s.threads).filter((l) => ctx.levels.includes(l));
      if (levels.length === 0) throw internalError(`schedule with ${s.threads} threads has no level to be measured at`);
      if (b.status === 'ok') runnable.push({ i, k, levels, soPath: b.soPath, symbol: b.symbol });
      else {
        await settle(i, makeRecord({ workload: w, target: ctx.target, schedule: s, features: cands[k]!.features, latencies: {},
          status: 'compile_error', error: b.message }));
      }
    }
    for (const t of [...new Set(runnable.map((r) => schedules[r.i]!.threads))]) {
      const group = runnable.filter((r) => schedules[r.i]!.threads === t);
      const bank = group.some((r) => r.levels.some((l) => l !== 0)) ? await ctx.bank() : undefined;
      const screen = ctx.noisyScreen ?? DEFAULT_NOISY_SCREEN;
      await measureCandidatesAtLevels(group.map((r) => ({ job: { soPath: r.soPath, symbol: r.symbol, threads: t }, levels: r.levels })), bank, {
        ...(ctx.cacheDir ? { cacheDir: ctx.cacheDir } : {}),
        ...(ctx.minTimeMs !== undefined ? { minTimeMs: ctx.minTimeMs } : {}),
        ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
      }, {
        // The median the record will hold (of its repeats), so a rerun's view of the screen agrees with this one's.
        keepMeasuring: (g, first) => group[g]!.levels[0] !== 0 || !(median(first.repeatsMs) > screen * (bestQuietMs(ctx.db, w.key, t) ?? Infinity)),
        onCandidate: async (g, ms) => {
          const r = group[g]!, s = schedules[r.i]!;
          await settle(r.i, recordFrom(w, s, ctx, r.levels, ms, cands[r.k]!.features));
        },
      });
    }
  }
  schedules.forEach((_, i) => { if (results[i]!.fromDb) ctx.onTrial?.(results[i]!); });
  return results as TrialResult[];
}
