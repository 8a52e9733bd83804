/**
 * Trials: a batch of schedules for one workload in, one TrialResult per schedule out. A schedule
 * whose record id is already in the database is a database hit (its record is read back, nothing
 * runs); the rest are generated and built together (parallel compiles, cached objects), then
 * measured one at a time at every level they can be measured at, and each one's record is appended
 * to the database the moment its measurement ends — kill -9 loses at most the candidate in flight.
 */
import { generateKernel, kernelSymbol } from '../codegen/kernel.js';
import { levelsOf, makeRecord, medianMs, recordId, recordIdOf, type TuningRecord } from '../db/record.js';
import type { TuningDatabase } from '../db/store.js';
import type { Workload } from '../ir/workload.js';
import { buildKernels } from '../measure/build.js';
import type { Measurement } from '../measure/run-candidate.js';
import { makeCandidate } from '../space/candidate.js';
import type { Schedule } from '../space/schedule.js';
import type { Target } from '../toolchain/target.js';
import { measureAtLevels } from '../measure/at-levels.js';
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

/** Fold per-level measurements into one record: ok only if every level was ok. */
function recordFrom(w: Workload, s: Schedule, ctx: EvaluateContext, levels: readonly number[], ms: readonly Measurement[],
  candidateFeatures: TuningRecord['features']): TuningRecord {
  const latencies: Record<string, readonly number[]> = {};
  let failure: { status: Measurement['status']; message: string } | undefined;
  ms.forEach((m, i) => {
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
    for (const [k, i] of todo.entries()) {
      const cand = cands[k]!, unit = units[k]!, s = schedules[i]!;
      const levels = ctx.levelsFor(s.threads).filter((l) => ctx.levels.includes(l));
      const b = built.get(unit.symbol)!;
      let record: TuningRecord;
      if (b.status !== 'ok') {
        record = makeRecord({ workload: w, target: ctx.target, schedule: s, features: cand.features, latencies: {},
          status: 'compile_error', error: b.message });
      } else {
        const bank = levels.some((l) => l !== 0) ? await ctx.bank() : undefined;
        const ms = await measureAtLevels({ soPath: b.soPath, symbol: b.symbol, threads: s.threads }, levels, bank, {
          ...(ctx.cacheDir ? { cacheDir: ctx.cacheDir } : {}),
          ...(ctx.minTimeMs !== undefined ? { minTimeMs: ctx.minTimeMs } : {}),
          ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
        });
        record = recordFrom(w, s, ctx, levels, ms, cand.features);
      }
      await ctx.db.append([record], ctx.recordsFile ? { file: ctx.recordsFile } : {});
      results[i] = trialFromRecord(record, ids[i]!, ctx.levels, false);
      ctx.onTrial?.(results[i]!);
    }
  }
  schedules.forEach((_, i) => { if (results[i]!.fromDb) ctx.onTrial?.(results[i]!); });
  return results as TrialResult[];
}
