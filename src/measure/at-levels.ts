/**
 * Measuring one candidate at several interference levels, back to back in one harness child: the
 * co-runner bank (interference/bank.ts) lets exactly one level's co-runner run around each job.
 */
import { internalError } from '../errors.js';
import { kernelCores, type LevelBank } from '../interference/bank.js';
import { availableCores } from '../toolchain/cpu.js';
import { measureJobs, type MeasureJob, type Measurement, type MeasureOptions } from './run-candidate.js';

/**
 * Measure one compiled candidate at each of `levels`, back to back in one harness child, switching
 * the co-runner between jobs. Returns one Measurement per level, in `levels` order.
 */
export async function measureAtLevels(job: MeasureJob, levels: readonly number[], bank: LevelBank | undefined,
  o: Omit<MeasureOptions, 'cores' | 'beforeJob' | 'afterJob'>): Promise<Measurement[]> {
  if (levels.some((l) => l !== 0) && !bank) throw internalError('noisy levels need a level bank');
  const plan = bank?.plan;
  const cores = plan ? kernelCores(plan, job.threads) : availableCores().slice(0, job.threads);
  try {
    return await measureJobs(levels.map(() => job), {
      ...o,
      cores,
      beforeJob: async (i) => { await bank?.activate(levels[i]!); },
      afterJob: async () => { await bank?.quiesce(); },
    });
  } finally {
    await bank?.quiesce();
  }
}
