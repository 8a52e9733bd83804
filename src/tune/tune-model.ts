/**
 * tuneWorkloads: the single tuning pass over a model's workloads. Budget = trials × workloads,
 * spread by the task scheduler; each batch goes through the task's search and evaluateBatch
 * (database hits count as trials, so a rerun against the same database replays the same trials
 * and measures nothing). Afterwards every workload's family is selected from all of its ok
 * records in the database for this target and the thread counts considered, and — when asked —
 * each kept version is profiled at the other thread counts at level 0 (what the runtime needs to
 * pick a version for a given number of free cores).
 */
import { createHash } from 'node:crypto';
import { kernelSymbol } from '../codegen/kernel.js';
import { recordId, medianMs, levelsOf } from '../db/record.js';
import type { TuningDatabase } from '../db/store.js';
import { shardFileName } from '../db/store.js';
import { targetFingerprint } from '../db/target-fingerprint.js';
import { transferSeeds } from '../db/transfer.js';
import { internalError, userError } from '../errors.js';
import type { Workload } from '../ir/workload.js';
import type { NoiseSettings } from '../interference/levels.js';
import { detectTarget, type Target } from '../toolchain/target.js';
import { evaluateBatch, evaluateBatches, trialFromRecord } from './evaluate.js';
import { roundPhases, type TunePhases } from './phases.js';
import { profileUntilSettled } from './other-thread-counts.js';
import { selectFamily, type Family, type FamilyCandidate } from '../space/family.js';
import { workloadProfile, type WorkloadProfile } from './candidate-points.js';
import { measurableLevels, openLevelBank, planCores, type LevelBank } from '../interference/bank.js';
import { pickTask, taskCost, type TaskProgress } from './trial-allocator.js';
import { createTaskSearch, type TaskSearch, type TrialResult } from './search.js';
import { prebuildWarmups, proposeWarmups } from './warmup.js';
import type { SearchMode } from './race.js';
import { fitRankModel, rankingRecords } from './rank-model.js';
import { scheduleFeatures } from '../space/features.js';
import { isWinograd, type Schedule } from '../space/knobs.js';

export interface WorkloadUse {
  readonly workload: Workload;
  /** How many layers of the model(s) compute this workload. */
  readonly count: number;
}

export interface Shard {
  readonly index: number;
  readonly count: number;
}

export interface TuneProgress {
  readonly workload: string;
  readonly taskIndex: number;
  readonly tasks: number;
  /** Trials this workload has had so far. */
  readonly taskTrials: number;
  readonly trialsDone: number;
  readonly budget: number;
  readonly measured: number;
  readonly dbHits: number;
  readonly seconds: number;
}

export interface TuneOptions {
  readonly trials: number;
  readonly db: TuningDatabase;
  readonly levels?: readonly number[];
  readonly maxVersions?: number;
  /**
   * Thread counts to tune at (default: every count the runtime may use, defaultThreadCounts). Each
   * count is its own search with its own `trials` budget and its own family of versions.
   */
  readonly threads?: readonly number[];
  readonly seed?: number;
  readonly shard?: Shard;
  /**
   * Winograd candidates for the convs that may take that form (default true). false: none is
   * proposed, and records of Winograd schedules are neither replayed, nor transferred, nor kept.
   */
  readonly winograd?: boolean;
  readonly target?: Target;
  readonly onProgress?: (p: TuneProgress) => void;
  /** While the warm-up batches compile, before anything is measured (tune/warmup.ts): kernels compiled of those to compile. */
  readonly onCompileProgress?: (done: number, total: number) => void;
  readonly cacheDir?: string;
  readonly minTimeMs?: number;
  readonly timeoutMs?: number;
  /** Trials per scheduler step (default min(8, trials)). */
  readonly batchSize?: number;
  readonly epsilon?: number;
  /** Family worst-regret slack (fraction) within which fewer versions win; default 0.03. */
  readonly regretTolerance?: number;
  /** Thread counts to profile kept versions at (level 0); [] or undefined: none. */
  readonly profileThreads?: readonly number[];
  /** Override co-runner settings per level (tests). */
  readonly noiseSettingsFor?: (level: number) => NoiseSettings | undefined;
  /**
   * Seed workloads without a record for this target from other targets' records (db/transfer.ts),
   * and give a workload those records cover at most this many trials, on every pass (so a rerun
   * does not top it up): confirming and refining, not searching from nothing. Default:
   * defaultTransferTrials(trials); 0 turns transfer off, and the full budget applies.
   */
  readonly transferTrials?: number;
  /**
   * Co-runners the caller started and still owns (kept warm across tuning passes: starting levels
   * 2–4 touches gigabytes, tens of seconds on this VM). tuneWorkloads neither starts nor closes
   * any then; the bank must have every noisy level requested and this session's core plan.
   */
  readonly bank?: LevelBank;
  /** Noisy levels only for candidates within this factor of the best quiet median (evaluate.ts; default 1.5, Infinity: every one). */
  readonly noisyScreen?: number;
  /**
   * 'race' (default): each batch timed at level 0 with a short window first, and only the
   * candidates that can still reach the family measured in full (race.ts); 'exhaustive': every
   * candidate at every level with full windows.
   */
  readonly search?: SearchMode;
}

/** Of a tuning pass's workloads: how their starting points came about. */
export interface TransferSummary {
  /** Workloads with records for this very target (used as measurements). */
  readonly exactWorkloads: number;
  /** Workloads seeded from other targets' records, and how many seed schedules that gave. */
  readonly transferredWorkloads: number;
  readonly transferredSeeds: number;
  /** Workloads with neither: searched from the presets. */
  readonly freshWorkloads: number;
  /** The nearest source target's distance (db/transfer.ts) per transferred workload, its median. */
  readonly medianDistance: number | null;
}

/** The family tuned at one thread count (its versions are among the workload family's). */
export interface ThreadFamily {
  readonly count: number;
  readonly regretPercent: Readonly<Record<string, number>>;
  readonly bestMs: Readonly<Record<string, number>>;
  readonly candidates: number;
  readonly dominated: number;
}

/**
 * A workload's family: the union of the families tuned at each thread count, ordered by thread
 * count, then locality-heavy first. The Family fields (regret, best) are those of the primary
 * count (the widest one that leaves a core to the co-runner, see primaryThreads); `byThreads`
 * has every count's own.
 */
export interface WorkloadFamily extends Family {
  readonly key: string;
  readonly byThreads: Readonly<Record<string, ThreadFamily>>;
  readonly occurrences: number;
  /** Trials this pass gave the workload (measured + database hits). */
  readonly trials: number;
  /** Per kept version (same order): threads → level-0 median latency (ms), where measured. */
  readonly threadProfiles: readonly Readonly<Record<string, number>>[];
  /** Every candidate the family was chosen from, and every failed one, for plots and reports. */
  readonly profile: WorkloadProfile;
}

export interface LevelRegret {
  readonly meanPercent: number;
  readonly maxPercent: number;
}

export interface TuneResult {
  readonly families: Map<string, WorkloadFamily>;
  readonly measured: number;
  readonly dbHits: number;
  /** Of `measured`, the thread-count profiling measurements. */
  readonly profileMeasured: number;
  /** Of `measured`, the candidates a racing search dropped after round 1 (race.ts): timed at level 0 only, briefly. */
  readonly raced: number;
  readonly seconds: number;
  /** Versions kept → number of layers (occurrence-weighted) with that many. */
  readonly versionsHistogram: Record<string, number>;
  /** Versions kept → number of unique workloads with that many. */
  readonly workloadVersionsHistogram: Record<string, number>;
  readonly perLevelRegret: Record<string, LevelRegret>;
  readonly levels: readonly number[];
  readonly threads: readonly number[];
  /** What each noisy level's co-runner did, when one was started. */
  readonly noise: Record<string, { readonly cores: readonly number[]; readonly settings: NoiseSettings }>;
  readonly transfer: TransferSummary;
  /** Where `seconds` went (TunePhases). */
  readonly phases: TunePhases;
}

export type { TunePhases } from './phases.js';

/** Deterministic shard of a workload key: sha256(key) mod count. */
export function shardOf(key: string, count: number): number {
  return Number(BigInt(`0x${createHash('sha256').update(key).digest('hex').slice(0, 12)}`) % BigInt(count));
}

function checkOptions(o: TuneOptions, target: Target): { levels: number[]; threads: number[] } {
  if (!Number.isInteger(o.trials) || o.trials < 1) {
    throw userError(
      'BAD_ARGUMENT',
      `--trials ${o.trials} is not a positive integer`,
      'give at least 1 trial per workload, e.g. --trials 64',
    );
  }
  const levels = [...new Set(o.levels ?? [0, 1, 2, 3, 4])].sort((a, b) => a - b);
  if (levels.length === 0 || levels.some((l) => !Number.isInteger(l) || l < 0 || l > 4)) {
    throw userError(
      'BAD_ARGUMENT',
      `--levels ${JSON.stringify(o.levels)} must be interference levels from 0 to 4`,
      'e.g. --levels 0,1,2,3,4',
    );
  }
  const threads = [...new Set(o.threads ?? defaultThreadCounts(target.cores))].sort((a, b) => a - b);
  if (threads.length === 0 || threads.some((t) => !Number.isInteger(t) || t < 1 || t > target.cores)) {
    throw userError(
      'BAD_ARGUMENT',
      `--threads ${JSON.stringify(o.threads)} must be thread counts from 1 to ${target.cores}`,
      `e.g. --threads 1,${target.cores}`,
    );
  }
  if (o.maxVersions !== undefined && (!Number.isInteger(o.maxVersions) || o.maxVersions < 1)) {
    throw userError('BAD_ARGUMENT', `--max-versions ${o.maxVersions} is not a positive integer`, 'e.g. --max-versions 5');
  }
  if (
    o.shard &&
    !(
      Number.isInteger(o.shard.count) &&
      o.shard.count >= 1 &&
      Number.isInteger(o.shard.index) &&
      o.shard.index >= 0 &&
      o.shard.index < o.shard.count
    )
  ) {
    throw userError('BAD_ARGUMENT', `--shard ${o.shard.index}/${o.shard.count} is not a shard i/n with 0 ≤ i < n`, 'e.g. --shard 0/4');
  }
  return { levels, threads };
}

/**
 * The thread counts a default compile tunes at: every count from 1 to the machine's cores (the
 * scheduler grants blocks any of them), beyond 8 cores only the powers of two and the core count
 * itself (a version tuned at the nearest count below stands in for the counts between).
 */
export function defaultThreadCounts(cores: number): number[] {
  const counts = new Set<number>();
  for (let t = 1; t <= Math.min(cores, 8); t++) counts.add(t);
  for (let t = 16; t < cores; t *= 2) counts.add(t);
  counts.add(Math.max(1, cores));
  return [...counts].sort((a, b) => a - b);
}

/** The count whose family stands for the workload in summaries: the widest that leaves a core free, else the widest. */
export function primaryThreads(threads: readonly number[], cores: number): number {
  const fitting = threads.filter((t) => t < cores);
  return fitting.length > 0 ? Math.max(...fitting) : Math.max(...threads);
}

/** Merge duplicate workloads (summing counts), order by key, keep this shard's part. */
export function tasksOf(uses: readonly WorkloadUse[], shard?: Shard): WorkloadUse[] {
  const byKey = new Map<string, WorkloadUse>();
  for (const u of uses) {
    const seen = byKey.get(u.workload.key);
    byKey.set(u.workload.key, { workload: u.workload, count: (seen?.count ?? 0) + u.count });
  }
  return [...byKey.values()]
    .sort((a, b) => (a.workload.key < b.workload.key ? -1 : 1))
    .filter((u) => !shard || shardOf(u.workload.key, shard.count) === shard.index);
}

/**
 * Candidates per workload and thread count when only other machines' records seed it:
 * max(2, ⌈trials / 4⌉), 2 at the default budget: the nearest target's two best frontier
 * candidates, confirmed here. On a new host type (ResNet-50, Zen 5) that took 96–100 s of tuning
 * against 127 s at 3, with bundles at 1.006–1.013× a from-scratch compile's latency; with the
 * warm-up measured as one batch (evaluateBatches), 76–84 s at 1.007–1.015× (bench/RESULTS.md,
 * "Any x86-64 host").
 */
export function defaultTransferTrials(trials: number): number {
  return Math.max(2, Math.ceil(trials / 4));
}

export async function tuneWorkloads(uses: readonly WorkloadUse[], o: TuneOptions): Promise<TuneResult> {
  const started = Date.now();
  const target = o.target ?? (await detectTarget());
  const { levels, threads } = checkOptions(o, target);
  const plan = planCores(threads);
  const levelsFor = (t: number) => measurableLevels(plan, t, levels);
  if (threads.every((t) => levelsFor(t).length === 0)) {
    throw userError(
      'BAD_ARGUMENT',
      `no thread count in ${threads.join(',')} leaves a core free for the co-runner of levels ${levels.join(',')}`,
      'add level 0 to --levels or give a smaller --threads',
    );
  }
  const tasks = tasksOf(uses, o.shard);
  const fingerprint = targetFingerprint(target);
  const recordsFile = o.shard ? shardFileName(o.shard.index, o.shard.count) : undefined;
  if (o.bank && (levels.some((l) => l !== 0 && !o.bank!.levels.includes(l)) || o.bank.plan.noiseCores.join() !== plan.noiseCores.join())) {
    throw internalError(
      `the given co-runner bank (levels ${o.bank.levels.join(',')}) does not serve levels ${levels.join(',')} on this core plan`,
    );
  }
  let bankPromise: Promise<LevelBank | undefined> | undefined = o.bank ? Promise.resolve(o.bank) : undefined;
  const bank = () =>
    (bankPromise ??=
      levels.some((l) => l !== 0) && plan.noiseCores.length > 0
        ? openLevelBank({
            levels,
            plan,
            ...(o.cacheDir ? { cacheDir: o.cacheDir } : {}),
            ...(o.noiseSettingsFor ? { settingsFor: o.noiseSettingsFor } : {}),
          })
        : Promise.resolve(undefined));

  let measured = 0,
    dbHits = 0,
    done = 0,
    profileMeasured = 0;
  const phases = { warmup: 0, searchBuild: 0, searchRace: 0, searchMeasure: 0, profileBuild: 0, profileMeasure: 0 };
  const addTo = (build: keyof typeof phases, measure: keyof typeof phases) => (p: 'build' | 'measure' | 'race', s: number) => {
    phases[p === 'build' ? build : p === 'race' ? 'searchRace' : measure] += s;
  };
  // One search per (workload, thread count): each count gets its own budget and its own family.
  // A run that other targets' records cover at its count starts from their frontier (db/transfer.ts)
  // and is capped at transferCap trials, whether or not this target has records of its own yet: the
  // cap and the candidates must be the same on every pass, or the compile after a transfer compile
  // tops the run up to the full budget and measures again what the first one settled, and an
  // interrupted transfer resumes elsewhere than it would have gone (transferTrials 0 asks for that).
  // seedsOf: the runs seeded with no record of their own, what the transfer summary counts.
  const runs = tasks.flatMap((use) => threads.map((t) => ({ use, threads: t })));
  const transferCap = o.transferTrials ?? defaultTransferTrials(o.trials);
  const ownAt = (key: string, n: number) => o.db.lookup(key).filter((r) => r.threads === n && allowed(o, r.schedule));
  const foreignSeeds = runs.map((r) =>
    transferCap > 0
      ? transferSeeds(
          o.db.foreign(r.use.workload.key).filter((f) => f.threads === r.threads && allowed(o, f.schedule)),
          target,
          fingerprint,
          transferCap,
        )
      : [],
  );
  const seedsOf = runs.map((r, i) => (ownAt(r.use.workload.key, r.threads).length === 0 ? foreignSeeds[i]! : []));
  const caps = foreignSeeds.map((seeds) => (seeds.length > 0 ? Math.min(o.trials, transferCap) : o.trials));
  const budget = caps.reduce((a, b) => a + b, 0);
  // One ranking model for the pass, from every complete record of every target (rank-model.ts).
  const rankModel = fitRankModel(rankingRecords(o.db.corpus()));
  const rankFor = (w: Workload) => (rankModel ? (s: Schedule) => rankModel.score(scheduleFeatures(w, s), s, target.caches) : undefined);
  const searches: TaskSearch[] = runs.map((r, i) =>
    createTaskSearch(r.use.workload, target, {
      ...(rankModel ? { rank: rankFor(r.use.workload)! } : {}),
      levels,
      threads: [r.threads],
      levelsFor,
      seed: o.seed ?? 1,
      ...(o.epsilon !== undefined ? { epsilon: o.epsilon } : {}),
      ...(o.winograd === false ? { winograd: false } : {}),
      seedSchedules: o.db
        .seeds(r.use.workload.key)
        .filter((s) => s.threads === r.threads && allowed(o, s.schedule))
        .map((s) => s.schedule),
      priors: foreignSeeds[i]!.map((s) => ({
        schedule: s.record.schedule,
        medianMs: Object.fromEntries(
          levelsOf(s.record)
            .filter((l) => levels.includes(l))
            .map((l) => [String(l), medianMs(s.record, l)!]),
        ),
      })),
    }),
  );
  const progress: (TaskProgress & { history: number[]; exhausted: boolean })[] = runs.map((r) => ({
    weight: r.use.count,
    history: [],
    exhausted: false,
  }));
  const transferredOf = (t: WorkloadUse) => runs.flatMap((r, i) => (r.use === t ? [seedsOf[i]!] : [])).filter((x) => x.length > 0);
  const distances = tasks.flatMap((t) => transferredOf(t).map((x) => x[0]!.distance)).sort((a, b) => a - b);
  const transfer: TransferSummary = {
    exactWorkloads: tasks.filter((t) => o.db.lookup(t.workload.key).length > 0).length,
    transferredWorkloads: tasks.filter((t) => transferredOf(t).length > 0).length,
    transferredSeeds: tasks.reduce((n, t) => n + transferredOf(t).reduce((m, x) => m + x.length, 0), 0),
    freshWorkloads: tasks.filter((t) => o.db.lookup(t.workload.key).length === 0 && transferredOf(t).length === 0).length,
    medianDistance: distances.length > 0 ? Number(distances[Math.floor(distances.length / 2)]!.toFixed(3)) : null,
  };
  const batch = Math.max(1, o.batchSize ?? Math.min(8, o.trials));
  const ctxBase = {
    target,
    fingerprint,
    db: o.db,
    levels,
    levelsFor,
    bank,
    ...(recordsFile ? { recordsFile } : {}),
    ...(o.cacheDir ? { cacheDir: o.cacheDir } : {}),
    ...(o.minTimeMs !== undefined ? { minTimeMs: o.minTimeMs } : {}),
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    ...(o.noisyScreen !== undefined ? { noisyScreen: o.noisyScreen } : {}),
    search: o.search ?? 'race',
  };
  let raced = 0;
  const count = (r: TrialResult) => {
    if (r.fromDb) dbHits++;
    else measured++;
    if (!r.fromDb && r.raced) raced++;
  };

  // Resume, as a tuner reading its own log does: the records this target already holds for a run
  // count toward the run's budget (fastest first), whichever search proposed them. Without this, a
  // change to the presets or the seeds makes every rerun against a full database (the shipped
  // records included) measure a new batch of candidates for workloads it has tuned.
  const spentElsewhere = runs.map(() => 0);
  runs.forEach((r, i) => {
    const quiet = (x: TrialResult) => (x.status === 'ok' ? (x.medianMs['0'] ?? Infinity) : Infinity);
    // A recorded timeout does not count: evaluate.ts measures it again (the limit or the load, not the kernel, may have ended it).
    // Nor, in an exhaustive search, does a raced record: it is measured in full.
    const own = o.db
      .records(r.use.workload.key)
      .filter(
        (x) =>
          x.threads === r.threads &&
          x.status !== 'timeout' &&
          (x.stage === undefined || ctxBase.search === 'race') &&
          allowed(o, x.schedule),
      )
      .map((x) => trialFromRecord(x, recordId(x), levels, true))
      .sort((a, b) => quiet(a) - quiet(b) || (a.id < b.id ? -1 : 1));
    const replayed = own.slice(0, caps[i]!);
    for (const t of replayed) {
      searches[i]!.observe(t);
      progress[i]!.history.push(taskCost(searches[i]!.bestMs()));
      count(t);
      done++;
    }
    // A compacted record set (db/compact.ts) keeps a run's family and best records, not every
    // candidate: the trials it dropped were spent all the same, and count as database hits.
    // Winograd records a pass without that form leaves out were not spent on it either.
    const left = o.db.records(r.use.workload.key).filter((x) => x.threads === r.threads && !allowed(o, x.schedule)).length;
    const spent = Math.max(0, o.db.trialsSpent(r.use.workload.key, r.threads) - left);
    spentElsewhere[i] = Math.max(0, Math.min(caps[i]!, spent) - replayed.length);
    dbHits += spentElsewhere[i]!;
    done += spentElsewhere[i]!;
    if (replayed.length + spentElsewhere[i]! >= caps[i]!) progress[i]!.exhausted = true;
  });

  try {
    const warmups = proposeWarmups(searches, progress, caps, batch, budget, done);
    // The co-runners start while the warm-up kernels compile: levels 2–4 allocate and touch
    // gigabytes, and each stops itself once ready (interference/bank.ts), so the two overlap
    // instead of adding up. Not when the database already holds every trial: nothing is measured.
    if (done < budget) void bank().catch(() => undefined);
    const warmupStart = performance.now();
    await prebuildWarmups(runs, warmups, { ...ctxBase, batch, ...(o.onCompileProgress ? { onCompiled: o.onCompileProgress } : {}) });
    phases.warmup = (performance.now() - warmupStart) / 1000;
    const trialHook = (i: number) => (r: TrialResult) => {
      count(r);
      done++;
      o.onProgress?.({
        workload: runs[i]!.use.workload.key,
        taskIndex: i,
        tasks: runs.length,
        taskTrials: searches[i]!.visited.length + 1,
        trialsDone: done,
        budget,
        measured,
        dbHits,
        seconds: (Date.now() - started) / 1000,
      });
    };
    const observe = (i: number, results: readonly TrialResult[]) => {
      for (const r of results) {
        searches[i]!.observe(r);
        progress[i]!.history.push(taskCost(searches[i]!.bestMs()));
      }
    };
    // The scheduler's first picks are the warm-up runs, in run order (warmup.ts), and a run's
    // proposals depend only on its own results: so they are measured together, as the scheduler
    // would have them one by one, saving a build call and a harness child per run.
    const order = [...warmups.keys()];
    const first = await evaluateBatches(
      order.map((i) => ({ workload: runs[i]!.use.workload, schedules: warmups.get(i)!, onTrial: trialHook(i) })),
      { ...ctxBase, onPhase: addTo('searchBuild', 'searchMeasure') },
    );
    order.forEach((i, k) => {
      if (warmups.get(i)!.length === 0) progress[i]!.exhausted = true;
      else observe(i, first[k]!);
    });
    while (done < budget) {
      const i = pickTask(progress);
      if (i === undefined) break;
      const search = searches[i]!;
      const room = caps[i]! - search.visited.length - spentElsewhere[i]!;
      if (room <= 0) {
        progress[i]!.exhausted = true;
        continue;
      }
      const schedules = search.propose(Math.min(batch, budget - done, room));
      if (schedules.length === 0) {
        progress[i]!.exhausted = true;
        continue;
      }
      observe(
        i,
        await evaluateBatch(runs[i]!.use.workload, schedules, {
          ...ctxBase,
          onPhase: addTo('searchBuild', 'searchMeasure'),
          onTrial: trialHook(i),
        }),
      );
    }

    const primary = primaryThreads(threads, target.cores);
    const select = (k: number) => familyFromRecords(tasks[k]!, o, levels, threads, primary);
    const { fams, profiles } = await profileUntilSettled(
      tasks.map((t) => t.workload),
      select,
      o.profileThreads ?? [],
      {
        ...ctxBase,
        onPhase: addTo('profileBuild', 'profileMeasure'),
        onTrial: (r) => {
          count(r);
          if (!r.fromDb) profileMeasured++;
        },
      },
    );
    const families = new Map<string, WorkloadFamily>();
    tasks.forEach((t, k) => {
      const trials = runs.reduce((n, r, i) => n + (r.use === t ? searches[i]!.visited.length : 0), 0);
      families.set(t.workload.key, { ...fams[k]!, key: t.workload.key, occurrences: t.count, trials, threadProfiles: profiles[k]! });
    });
    const runners = bankPromise ? await bankPromise : undefined;
    return {
      families,
      measured,
      dbHits,
      profileMeasured,
      raced,
      seconds: (Date.now() - started) / 1000,
      versionsHistogram: histogram(tasks.map((t) => [families.get(t.workload.key)!.count, t.count])),
      workloadVersionsHistogram: histogram(tasks.map((t) => [families.get(t.workload.key)!.count, 1])),
      perLevelRegret: regretSummary([...families.values()], levels),
      levels,
      threads,
      transfer,
      phases: roundPhases(phases),
      noise: Object.fromEntries(
        [...(runners?.runners ?? new Map())]
          .filter(([l]) => levels.includes(l))
          .map(([l, r]) => [String(l), { cores: plan.noiseCores, settings: r.settings }]),
      ),
    };
  } finally {
    const b = bankPromise && !o.bank ? await bankPromise.catch(() => undefined) : undefined;
    await b?.close();
  }
}

/**
 * The family from every ok record of this workload in the database (this target): one family per
 * thread count, from the records tuned at that count, joined in thread-count order.
 */
function familyFromRecords(
  t: WorkloadUse,
  o: TuneOptions,
  levels: readonly number[],
  threads: readonly number[],
  primary: number,
): Family & { profile: WorkloadProfile; byThreads: Record<string, ThreadFamily> } {
  const cands: FamilyCandidate[] = o.db
    .lookup(t.workload.key)
    .filter((r) => threads.includes(r.threads) && allowed(o, r.schedule))
    .map((r) => ({
      id: recordId(r),
      schedule: r.schedule,
      features: r.features,
      symbol: kernelSymbol(t.workload, r.schedule),
      latencyMs: Object.fromEntries(
        levelsOf(r)
          .filter((l) => levels.includes(l))
          .map((l) => [String(l), medianMs(r, l)!]),
      ),
    }));
  const perCount = threads.map((n) => ({
    n,
    family: selectFamily(
      cands.filter((c) => c.schedule.threads === n),
      { maxVersions: o.maxVersions ?? 5, tolerance: o.regretTolerance ?? 0.03 },
    ),
  }));
  const byThreads: Record<string, ThreadFamily> = {};
  for (const { n, family: f } of perCount) {
    if (f.count > 0)
      byThreads[String(n)] = {
        count: f.count,
        regretPercent: f.regretPercent,
        bestMs: f.bestMs,
        candidates: f.candidates,
        dominated: f.dominated,
      };
  }
  const versions = perCount.flatMap((p) => p.family.versions);
  const lead = perCount.find((p) => p.n === primary && p.family.count > 0) ?? perCount.find((p) => p.family.count > 0);
  const family: Family = {
    versions,
    count: versions.length,
    regretPercent: lead?.family.regretPercent ?? {},
    bestMs: lead?.family.bestMs ?? {},
    candidates: cands.length,
    dominated: perCount.reduce((s, p) => s + p.family.dominated, 0),
  };
  const records = o.db.records(t.workload.key).filter((r) => threads.includes(r.threads) && allowed(o, r.schedule));
  return { ...family, byThreads, profile: workloadProfile(t.workload.key, records, levels, family, cands) };
}

/** Whether the pass may use a record or seed of this schedule (TuneOptions.winograd). */
function allowed(o: TuneOptions, s: Schedule): boolean {
  return o.winograd !== false || !isWinograd(s);
}

function histogram(pairs: readonly (readonly [number, number])[]): Record<string, number> {
  const h: Record<string, number> = {};
  for (const [k, n] of pairs) h[String(k)] = (h[String(k)] ?? 0) + n;
  return h;
}

function regretSummary(fams: readonly Family[], levels: readonly number[]): Record<string, LevelRegret> {
  return Object.fromEntries(
    levels.map((l) => {
      const xs = fams.map((f) => f.regretPercent[String(l)]).filter((x): x is number => x !== undefined && Number.isFinite(x));
      return [
        String(l),
        { meanPercent: xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : 0, maxPercent: xs.length ? Math.max(...xs) : 0 },
      ];
    }),
  );
}
