/**
 * Trials: a batch of schedules for one workload in, one TrialResult per schedule out. A schedule
 * whose record id is already in the database is a database hit (its record is read back, nothing
 * runs; a recorded timeout is measured again); the rest are generated and built together (parallel compiles, cached objects), then
 * measured in one harness child per thread count (one reference computation per workload, one
 * check per candidate), one candidate at a time at every level it can be measured at — the noisy
 * ones only if its quiet median passes the screen below — and each one's record is appended to
 * the database the moment its last level is settled: kill -9 loses at most the candidate in
 * flight. evaluateBatches does the same for several workloads' batches in one build and one child.
 *
 * A racing evaluation (search: 'race', race.ts) first times every candidate at level 0 with a short
 * window, then measures only the survivors as above; the dropped ones are written as raced records
 * (record.ts stage 'race') as soon as their workload's round is judged, so kill -9 during round 1
 * loses at most the round of the workload in flight.
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
import type { Schedule } from '../space/knobs.js';
import type { Target } from '../toolchain/target.js';
import { measureCandidatesAtLevels } from '../measure/at-levels.js';
import type { LevelBank } from '../interference/bank.js';
import type { TrialResult } from './search.js';
import { DEFAULT_RACE_K, quietBounds, raceVerdicts, raceWindowMs, type QuietBounds, type SearchMode } from './race.js';

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
  /**
   * 'race': round 1 at level 0 with a short window, full measurement for its survivors only
   * (race.ts); 'exhaustive' (default here; tuneWorkloads defaults to 'race'): every candidate fully.
   */
  readonly search?: SearchMode;
  /** Called after each trial (measured or hit). */
  readonly onTrial?: (r: TrialResult) => void;
  /** Seconds a batch spent building its kernels, and in the harness (checks and timing at every level): the compile summary's phases. */
  readonly onPhase?: (phase: 'build' | 'measure' | 'race', seconds: number) => void;
}

/** A database record as a trial result, restricted to the requested levels. */
export function trialFromRecord(r: TuningRecord, id: string, levels: readonly number[], fromDb: boolean): TrialResult {
  const wanted = levels.map(String);
  const have = levelsOf(r)
    .map(String)
    .filter((l) => wanted.includes(l));
  const medians: Record<string, number> = {};
  const repeats: Record<string, readonly number[]> = {};
  for (const l of have) {
    repeats[l] = r.latencies[l]!;
    const m = medianMs(r, l);
    if (m !== undefined) medians[l] = m;
  }
  return {
    id,
    schedule: r.schedule,
    features: r.features,
    symbol: kernelSymbol(r.workloadSpec, r.schedule),
    status: r.status,
    medianMs: medians,
    repeatsMs: repeats,
    unavailableLevels: r.status === 'ok' ? levels.filter((l) => !have.includes(String(l))) : [],
    fromDb,
    ...(r.stage !== undefined ? { raced: true } : {}),
    ...(r.error !== undefined ? { error: r.error } : {}),
  };
}

/**
 * Noisy levels are measured only for a candidate whose quiet median is within this factor of the
 * best quiet median of its workload and thread count so far. A slower one is dominated at level 0
 * by a candidate measured at every level (family.ts), and could matter only by beating that one
 * under noise by more than 1.5×: rare, not never (10 family members among 1,355 such candidates
 * in ten torchvision models' runs, bench/RESULTS.md), and it spares a quarter of the noisy windows.
 */
export const DEFAULT_NOISY_SCREEN = 1.5;

/** Quiet bounds (race.ts) of this workload's complete ok records at `threads` threads (this codegen, this target). */
function heldBounds(db: TuningDatabase, key: string, threads: number): QuietBounds[] {
  return db
    .lookup(key)
    .filter((r) => r.threads === threads)
    .flatMap((r) => {
      const b = quietBounds(r.latencies['0'] ?? []);
      return b ? [b] : [];
    });
}

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
function recordFrom(
  w: Workload,
  s: Schedule,
  ctx: EvaluateContext,
  levels: readonly number[],
  ms: readonly (Measurement | undefined)[],
  candidateFeatures: TuningRecord['features'],
): TuningRecord {
  const latencies: Record<string, readonly number[]> = {};
  let failure: { status: Measurement['status']; message: string } | undefined;
  ms.forEach((m, i) => {
    if (m === undefined) return;
    if (m.status === 'ok' && m.repeatsMs.length > 0) latencies[String(levels[i])] = m.repeatsMs;
    else failure ??= { status: m.status === 'ok' ? 'crash' : m.status, message: `level ${levels[i]}: ${m.message ?? m.status}` };
  });
  return makeRecord({
    workload: w,
    target: ctx.target,
    schedule: s,
    features: candidateFeatures,
    latencies,
    status: failure ? failure.status : 'ok',
    ...(failure ? { error: failure.message } : {}),
  });
}

/** One workload's schedules, within a multi-workload evaluation (evaluateBatches); `onTrial` replaces the context's for them. */
export interface WorkloadBatch {
  readonly workload: Workload;
  readonly schedules: readonly Schedule[];
  readonly onTrial?: (r: TrialResult) => void;
}

export async function evaluateBatch(w: Workload, schedules: readonly Schedule[], ctx: EvaluateContext): Promise<TrialResult[]> {
  return (await evaluateBatches([{ workload: w, schedules }], ctx))[0]!;
}

/** A schedule of evaluateBatches' input that is not in the database: what building and measuring it needs. */
interface Todo {
  readonly b: number;
  readonly i: number;
  readonly id: string;
  readonly cand: ReturnType<typeof makeCandidate>;
  readonly unit: ReturnType<typeof generateKernel>;
}

/** A built candidate ready to measure: its levels, its shared object, its thread count. */
interface Runnable extends Todo {
  readonly levels: number[];
  readonly soPath: string;
  readonly symbol: string;
  readonly threads: number;
}

/**
 * Round 1 of a racing evaluation for one thread count's candidates: each one whose first level is 0
 * timed there with a short window, judged per workload against its round-mates and the database's
 * complete records (race.ts), and the dropped and the failed settled. Returns the candidates to
 * measure in full: the survivors and those not raced (no level 0 to race at).
 */
async function raceRound(
  group: readonly Runnable[],
  batches: readonly WorkloadBatch[],
  bank: LevelBank | undefined,
  ctx: EvaluateContext,
  settle: (t: Todo, record: TuningRecord) => Promise<void>,
  slack: number,
): Promise<Set<Runnable>> {
  const racing = group.filter((r) => r.levels[0] === 0);
  const keep = new Set(group.filter((r) => r.levels[0] !== 0));
  if (racing.length === 0) return keep;
  const first: (Measurement | undefined)[] = racing.map(() => undefined);
  const left = new Map<number, number>();
  for (const r of racing) left.set(r.b, (left.get(r.b) ?? 0) + 1);
  // A workload is judged, and its dropped candidates written, once its last candidate is timed:
  // kill -9 loses at most the verdicts of the workload in flight.
  const judge = async (b: number) => {
    const contenders = racing.flatMap((r, k) => {
      const bounds = r.b === b && first[k]!.status === 'ok' ? quietBounds(first[k]!.repeatsMs) : undefined;
      return bounds ? [{ k, bounds }] : [];
    });
    const verdicts = raceVerdicts(
      contenders.map((c) => c.bounds),
      heldBounds(ctx.db, batches[b]!.workload.key, racing[0]!.threads),
      { slack, k: DEFAULT_RACE_K },
    );
    contenders.forEach((c, j) => {
      if (verdicts[j]) keep.add(racing[c.k]!);
    });
    for (let k = 0; k < racing.length; k++) {
      const r = racing[k]!;
      if (r.b !== b || keep.has(r)) continue;
      const w = batches[b]!.workload,
        s = batches[b]!.schedules[r.i]!;
      const m = first[k]!;
      // A failed check or a crash is the same verdict at any window: a complete (failed) record.
      if (m.status !== 'ok' || m.repeatsMs.length === 0) await settle(r, recordFrom(w, s, ctx, [0], [m], r.cand.features));
      else
        await settle(
          r,
          makeRecord({
            workload: w,
            target: ctx.target,
            schedule: s,
            features: r.cand.features,
            latencies: { '0': m.repeatsMs },
            status: 'ok',
            stage: 'race',
          }),
        );
    }
  };
  const round = await measureCandidatesAtLevels(
    racing.map((r) => ({ job: { soPath: r.soPath, symbol: r.symbol, threads: r.threads, flops: r.cand.features.flops }, levels: [0] })),
    bank,
    {
      ...(ctx.cacheDir ? { cacheDir: ctx.cacheDir } : {}),
      minTimeMs: raceWindowMs(ctx.minTimeMs ?? 100),
      ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
    },
    {
      onCandidate: async (k, ms) => {
        first[k] = ms[0] ?? { status: 'crash', repeatsMs: [], message: 'not measured' };
        const b = racing[k]!.b;
        left.set(b, left.get(b)! - 1);
        if (left.get(b) === 0) await judge(b);
      },
    },
  );
  // A child that died before a job started reports it without the hook: judge what is left.
  for (const [b, n] of left) {
    if (n === 0) continue;
    racing.forEach((r, k) => {
      if (r.b === b) first[k] ??= round[k]![0] ?? { status: 'crash', repeatsMs: [], message: 'harness exited before the job started' };
    });
    await judge(b);
  }
  return keep;
}

/**
 * Several workloads' batches as one: every kernel built in one call (links spread over the cores,
 * candidates of several workloads in one shared object), and one harness child per thread count
 * measuring every candidate of that count, batch by batch in input order. Results and records are
 * those evaluateBatch gives each batch alone (the screen reads each workload's own records); what
 * is saved is a build call, a child start and a harness check per batch.
 */
export async function evaluateBatches(batches: readonly WorkloadBatch[], ctx: EvaluateContext): Promise<TrialResult[][]> {
  const results = batches.map((x) => new Array<TrialResult | undefined>(x.schedules.length));
  const onTrial = (b: number) => batches[b]!.onTrial ?? ctx.onTrial;
  const todo: Todo[] = [];
  batches.forEach(({ workload: w, schedules }, b) => {
    const known = new Map(ctx.db.records(w.key).map((r) => [recordId(r), r]));
    schedules.forEach((s, i) => {
      const id = recordIdOf(w.key, ctx.fingerprint, s, s.threads);
      const r = ctx.db.has(id) ? known.get(id) : undefined;
      // A timeout says as much about the limit and the machine's load then as about the kernel: measure it again.
      // A raced record is a verdict, not a measurement: an exhaustive search measures it in full.
      const stale = r !== undefined && (r.status === 'timeout' || (r.stage !== undefined && ctx.search !== 'race'));
      if (r && !stale) results[b]![i] = trialFromRecord(r, id, ctx.levels, true);
      else {
        const cand = makeCandidate(w, s, ctx.target);
        todo.push({ b, i, id, cand, unit: generateKernel(cand) });
      }
    });
  });

  if (todo.length > 0) {
    const buildStart = performance.now();
    const built = new Map(
      (
        await buildKernels(
          todo.map((t) => t.unit),
          { cflags: ctx.target.cflags, ...(ctx.cacheDir ? { cacheDir: ctx.cacheDir } : {}) },
        )
      ).map((b) => [b.symbol, b]),
    );
    ctx.onPhase?.('build', (performance.now() - buildStart) / 1000);
    const settle = async (t: Todo, record: TuningRecord) => {
      await ctx.db.append([record], ctx.recordsFile ? { file: ctx.recordsFile } : {});
      const r = trialFromRecord(record, t.id, ctx.levels, false);
      results[t.b]![t.i] = r;
      onTrial(t.b)?.(r);
    };
    const runnable: Runnable[] = [];
    for (const t of todo) {
      const b = built.get(t.unit.symbol)!,
        s = batches[t.b]!.schedules[t.i]!;
      const levels = ctx.levelsFor(s.threads).filter((l) => ctx.levels.includes(l));
      if (levels.length === 0) throw internalError(`schedule with ${s.threads} threads has no level to be measured at`);
      if (b.status === 'ok') runnable.push({ ...t, levels, soPath: b.soPath, symbol: b.symbol, threads: s.threads });
      else {
        await settle(
          t,
          makeRecord({
            workload: batches[t.b]!.workload,
            target: ctx.target,
            schedule: s,
            features: t.cand.features,
            latencies: {},
            status: 'compile_error',
            error: b.message,
          }),
        );
      }
    }
    for (const threads of [...new Set(runnable.map((r) => r.threads))]) {
      let group = runnable.filter((r) => r.threads === threads);
      const bank = group.some((r) => r.levels.some((l) => l !== 0)) ? await ctx.bank() : undefined;
      const screen = ctx.noisyScreen ?? DEFAULT_NOISY_SCREEN;
      if (ctx.search === 'race') {
        const raceStart = performance.now();
        const survivors = await raceRound(group, batches, bank, ctx, settle, screen - 1);
        ctx.onPhase?.('race', (performance.now() - raceStart) / 1000);
        group = group.filter((r) => survivors.has(r));
      }
      const measureStart = performance.now();
      const jobs = group.map((r) => ({
        job: { soPath: r.soPath, symbol: r.symbol, threads, flops: r.cand.features.flops },
        levels: r.levels,
      }));
      await measureCandidatesAtLevels(
        jobs,
        bank,
        {
          ...(ctx.cacheDir ? { cacheDir: ctx.cacheDir } : {}),
          ...(ctx.minTimeMs !== undefined ? { minTimeMs: ctx.minTimeMs } : {}),
          ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
        },
        {
          // The median the record will hold (of its repeats), so a rerun's view of the screen agrees with this one's.
          keepMeasuring: (g, first) =>
            group[g]!.levels[0] !== 0 ||
            !(median(first.repeatsMs) > screen * (bestQuietMs(ctx.db, batches[group[g]!.b]!.workload.key, threads) ?? Infinity)),
          onCandidate: async (g, ms) => {
            const r = group[g]!,
              w = batches[r.b]!.workload;
            await settle(r, recordFrom(w, batches[r.b]!.schedules[r.i]!, ctx, r.levels, ms, r.cand.features));
          },
        },
      );
      ctx.onPhase?.('measure', (performance.now() - measureStart) / 1000);
    }
  }
  results.forEach((rs, b) =>
    rs.forEach((r) => {
      if (r!.fromDb) onTrial(b)?.(r!);
    }),
  );
  return results as TrialResult[][];
}
