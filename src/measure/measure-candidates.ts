/**
 * Candidates in, measurements out: generate each candidate's C, build them (parallel, cached),
 * then measure one at a time in the harness child. A candidate that does not compile is a
 * compile_error measurement; the rest of the batch goes on.
 */
import { generateKernel } from '../codegen/kernel.js';
import type { Candidate } from '../space/candidate.js';
import { buildKernels, type BuildOptions } from './build.js';
import { measureJobs, type MeasureJob, type MeasureOptions, type Measurement } from './run-candidate.js';

export interface CandidateMeasurement {
  readonly candidate: Candidate;
  readonly symbol: string;
  readonly soPath?: string;
  readonly measurement: Measurement;
}

/** Hooks (beforeJob/afterJob) receive the index into `cands`. */
export async function measureCandidates(
  cands: readonly Candidate[],
  options: MeasureOptions & { build?: BuildOptions } = {},
): Promise<CandidateMeasurement[]> {
  const units = cands.map(generateKernel);
  const built = await buildKernels(units, { ...(options.cacheDir ? { cacheDir: options.cacheDir } : {}), ...options.build });
  const bySymbol = new Map(built.map((b) => [b.symbol, b]));
  const jobs: MeasureJob[] = [];
  const jobOf: (number | undefined)[] = [];
  cands.forEach((c, i) => {
    const b = bySymbol.get(units[i]!.symbol)!;
    if (b.status === 'ok') {
      jobOf.push(jobs.length);
      jobs.push({ soPath: b.soPath, symbol: b.symbol, threads: c.schedule.threads, flops: c.features.flops });
    } else {
      jobOf.push(undefined);
    }
  });
  // hooks see candidate indices, not job indices (candidates that failed to compile have no job)
  const candidateOf = jobOf.flatMap((j, i) => (j === undefined ? [] : [i]));
  const { beforeJob, afterJob } = options;
  const measured = await measureJobs(jobs, {
    ...options,
    ...(beforeJob ? { beforeJob: (j: number) => beforeJob(candidateOf[j]!) } : {}),
    ...(afterJob ? { afterJob: (j: number, m: Measurement) => afterJob(candidateOf[j]!, m) } : {}),
  });
  return cands.map((candidate, i) => {
    const b = bySymbol.get(units[i]!.symbol)!;
    const j = jobOf[i];
    if (b.status !== 'ok' || j === undefined) {
      return {
        candidate,
        symbol: b.symbol,
        measurement: { status: 'compile_error', repeatsMs: [], message: b.status === 'ok' ? '' : b.message },
      };
    }
    return { candidate, symbol: b.symbol, soPath: b.soPath, measurement: measured[j]! };
  });
}
