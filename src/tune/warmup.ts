/**
 * The warm-up batches of a tuning pass, proposed before the pass measures anything.
 *
 * The task scheduler gives every run that has had no batch yet one batch first, in run order
 * (trial-allocator.ts: such a run's priority is Infinity, ties go to the earlier run), and a search's first
 * proposals depend only on its own seeds, never on what other runs measure (search.ts). So those
 * batches are known up front, and proposing them early changes nothing the pass does: the pass can
 * compile them all at once, on every core, while the co-runners start, and then hand each run its
 * batch when the scheduler picks it. For a pass that seeds from other targets (transfer), the
 * warm-up batches are the whole budget; from scratch, the first batch of every run.
 */
import { generateKernel } from '../codegen/kernel.js';
import { recordIdOf } from '../db/record.js';
import type { Workload } from '../ir/workload.js';
import { precompileKernels } from '../measure/build.js';
import { ensureHarness } from '../measure/run-candidate.js';
import { makeCandidate } from '../space/candidate.js';
import type { Schedule } from '../space/knobs.js';
import type { EvaluateContext } from './evaluate.js';
import type { TaskProgress } from './trial-allocator.js';
import type { TaskSearch } from './search.js';

/**
 * Propose the first batch of every run the scheduler will warm up, in the order and with the sizes
 * the pass would ask for them: min(batch, budget left, the run's room under its cap). Run index →
 * its first batch (an empty batch: the run has nothing to propose, it is exhausted).
 */
export function proposeWarmups(
  searches: readonly TaskSearch[],
  progress: readonly TaskProgress[],
  caps: readonly number[],
  batch: number,
  budget: number,
  done: number,
): Map<number, Schedule[]> {
  const batches = new Map<number, Schedule[]>();
  let planned = done;
  for (let i = 0; i < searches.length; i++) {
    if (planned >= budget) break;
    if (progress[i]!.exhausted || progress[i]!.history.length > 0) continue;
    const room = caps[i]! - searches[i]!.visited.length;
    if (room <= 0) continue;
    const schedules = searches[i]!.propose(Math.min(batch, budget - planned, room));
    batches.set(i, schedules);
    planned += schedules.length;
  }
  return batches;
}

/**
 * Compile every warm-up candidate the database does not hold, all at once on every core (and the
 * measurement harness, when the cache lacks it), and start
 * the co-runners meanwhile when any of them will be measured under noise (their start touches
 * gigabytes: seconds that would otherwise come before the first noisy measurement). A rerun whose
 * candidates are all in the database compiles nothing and starts no co-runner.
 */
export async function prebuildWarmups(
  runs: readonly { readonly use: { readonly workload: Workload } }[],
  warmups: ReadonlyMap<number, Schedule[]>,
  ctx: EvaluateContext & { readonly batch: number; readonly onCompiled?: (done: number, total: number) => void },
): Promise<void> {
  const todo = [...warmups]
    .flatMap(([i, schedules]) => schedules.map((s) => ({ w: runs[i]!.use.workload, s })))
    .filter(({ w, s }) => !ctx.db.has(recordIdOf(w.key, ctx.fingerprint, s, s.threads)));
  if (todo.length === 0) return;
  const noisy = todo.some(({ s }) => ctx.levelsFor(s.threads).some((l) => l !== 0 && ctx.levels.includes(l)));
  const starting = noisy ? ctx.bank() : undefined;
  starting?.catch(() => {
    /* reported where the bank is first awaited */
  });
  const units = todo.map(({ w, s }) => generateKernel(makeCandidate(w, s, ctx.target)));
  // The measurement harness too (a second of cc on a fresh machine), beside the kernels rather than
  // before the first measurement. A failure here is left to the first measurement to report.
  const harness = ensureHarness(...(ctx.cacheDir ? [ctx.cacheDir] : [])).catch(() => undefined);
  await precompileKernels(units, {
    cflags: ctx.target.cflags,
    batchSize: ctx.batch,
    ...(ctx.cacheDir ? { cacheDir: ctx.cacheDir } : {}),
    ...(ctx.onCompiled ? { onCompiled: ctx.onCompiled } : {}),
  });
  await harness;
  await starting?.catch(() => undefined);
}
