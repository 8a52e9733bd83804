/**
 * Measuring candidates at several interference levels, each candidate's levels back to back in one
 * harness child: the co-runner bank (interference/bank.ts) lets exactly one level's co-runner run
 * around each job.
 */
import { internalError } from '../errors.js';
import { kernelCores, type LevelBank } from '../interference/bank.js';
import { availableCores } from '../toolchain/cpu.js';
import { measureJobsSkippable, type MeasureJob, type Measurement, type MeasureOptions } from './run-candidate.js';

/** One compiled candidate and the levels it is to be measured at, quiet (0) first when requested. */
export interface LevelledJob {
  readonly job: MeasureJob;
  readonly levels: readonly number[];
}

export interface CandidateHooks {
  /**
   * After a candidate's first level measured ok: false skips its remaining levels (screening:
   * a candidate far slower quiet than the best so far is not worth its noisy measurements).
   */
  readonly keepMeasuring?: (candidate: number, first: Measurement) => boolean;
  /** A candidate's measurements, one per level (undefined: skipped), the moment its last level is settled. */
  readonly onCandidate?: (candidate: number, ms: readonly (Measurement | undefined)[]) => Promise<void> | void;
}

/**
 * Measure several candidates of one workload in one harness child — one reference computation
 * and one check per candidate, not one per level — each at its levels back to back. A candidate
 * whose first level is not ok, or that keepMeasuring turns down, skips its other levels.
 */
export async function measureCandidatesAtLevels(
  cands: readonly LevelledJob[],
  bank: LevelBank | undefined,
  o: Omit<MeasureOptions, 'cores' | 'beforeJob' | 'afterJob' | 'skipJob'>,
  hooks: CandidateHooks = {},
): Promise<(Measurement | undefined)[][]> {
  if (cands.some((c) => c.levels.some((l) => l !== 0)) && !bank) throw internalError('noisy levels need a level bank');
  const threads = new Set(cands.map((c) => c.job.threads));
  if (threads.size > 1) throw internalError('one harness child pins one core set: candidates of one thread count only');
  const plan = bank?.plan;
  const cores = plan ? kernelCores(plan, cands[0]?.job.threads ?? 1) : availableCores().slice(0, cands[0]?.job.threads ?? 1);
  const flat = cands.flatMap((c, k) => c.levels.map((level, j) => ({ k, j, level, job: c.job })));
  const results: (Measurement | undefined)[][] = cands.map((c) => c.levels.map(() => undefined));
  const settle = async (k: number, j: number) => {
    if (j === cands[k]!.levels.length - 1) await hooks.onCandidate?.(k, results[k]!);
  };
  try {
    await measureJobsSkippable(
      flat.map((f) => f.job),
      {
        ...o,
        cores,
        skipJob: async (i) => {
          const { k, j } = flat[i]!;
          const first = results[k]![0];
          const skip =
            j > 0 &&
            (results[k]!.slice(0, j).some((m) => m === undefined || m.status !== 'ok') ||
              (hooks.keepMeasuring !== undefined && !hooks.keepMeasuring(k, first!)));
          if (skip) await settle(k, j);
          return skip;
        },
        beforeJob: async (i) => {
          await bank?.activate(flat[i]!.level);
        },
        afterJob: async (i, m) => {
          await bank?.quiesce();
          const { k, j } = flat[i]!;
          results[k]![j] = m;
          await settle(k, j);
        },
      },
    );
  } finally {
    await bank?.quiesce();
  }
  return results;
}
