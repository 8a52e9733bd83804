/**
 * The search policy for one workload, one pass: seeds first (schedules that were fastest under an
 * older code generator, when the database has any — measured again, never taken as measured —
 * then the three presets at every thread count considered, and the Winograd default where the
 * workload may take that form, then a few random samples), then
 * evolutionary batches: mutate the fittest
 * measured candidates, rank the proposals with the cost model, and fill each slot with the next
 * best-ranked proposal — or, with probability ε, with a fresh random sample.
 *
 * Fitness is per-level aware: fitness(c) = min over levels L of latency_L(c) / best_L, i.e. how
 * close c comes to the best seen at the level where it shines. Every level's winner has fitness 1,
 * so the quiet winner and the heavy-noise winner both breed: the search widens the whole frontier
 * rather than polishing only the quiet end.
 *
 * Before a workload has observations of its own, a ranking model learned from the database's other
 * records (rank-model.ts), when given, picks the random seeds from a larger draw and orders the
 * first mutations: the pass measures the promising candidates first.
 *
 * Deterministic: proposals depend only on the seed, the ranking model (the database it was fitted
 * on) and the sequence of observed results (a rerun against the same database replays the same
 * trials as database hits).
 */
import type { Workload } from '../ir/workload.js';
import type { MeasureStatus } from '../measure/run-candidate.js';
import type { ScheduleFeatures } from '../space/features.js';
import { scheduleFeatures } from '../space/features.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy, weightStreaming, winogradDefault } from '../space/presets.js';
import { seededRng, type Rng } from '../random.js';
import { isValid, makeSchedule, mutate, repair, sampleSchedule, type Schedule } from '../space/knobs.js';
import type { Target } from '../toolchain/target.js';
import { fitLatencyModel, type Observation } from './cost-model.js';

/** One visited candidate: measured now or found in the database. */
export interface TrialResult {
  readonly id: string;
  readonly schedule: Schedule;
  readonly features: ScheduleFeatures;
  readonly symbol: string;
  readonly status: MeasureStatus;
  /** level → median latency (ms), ok levels only. */
  readonly medianMs: Readonly<Record<string, number>>;
  /** level → every repeat (ms). */
  readonly repeatsMs: Readonly<Record<string, readonly number[]>>;
  /** Requested levels this candidate could not be measured at (no core left for a co-runner). */
  readonly unavailableLevels: readonly number[];
  readonly fromDb: boolean;
  /** Dropped by a racing round (race.ts): its level-0 median is from a short window, and it has no other level. */
  readonly raced?: boolean;
  readonly error?: string;
}

export interface SearchOptions {
  readonly levels: readonly number[];
  /** Thread counts candidates may use; every schedule's threads is snapped to one of them. */
  readonly threads: readonly number[];
  /** Levels a schedule with `threads` threads can be measured at (from the core plan). */
  readonly levelsFor: (threads: number) => readonly number[];
  readonly seed: number;
  readonly epsilon?: number;
  readonly randomSeeds?: number;
  readonly population?: number;
  /** Schedules to try first (db.seeds(): this target's best under another codegen version; measured again). */
  readonly seedSchedules?: readonly Schedule[];
  /**
   * Candidates other targets measured for this workload (db/transfer.ts), nearest first: measured
   * first here, and — rescaled to this machine's best — priors for the cost model until this
   * workload has its own observations. With priors the random seeds are skipped: the budget goes
   * to confirming and refining them.
   */
  readonly priors?: readonly Prior[];
  /**
   * The database's ranking model for this workload (rank-model.ts): lower is predicted faster.
   * It picks the random seeds from a larger draw (RANK_DRAW each) and orders the mutations until
   * the pass has observations enough for its own cost model.
   */
  readonly rank?: (s: Schedule) => number;
  /** Offer Winograd candidates where the workload may take that form (default true; false: every proposal is direct). */
  readonly winograd?: boolean;
}

/** With a ranking model, each random seed is the best-ranked of this many draws. */
export const RANK_DRAW = 8;

/** A schedule measured on another target, with its medians there (level → ms). */
export interface Prior {
  readonly schedule: Schedule;
  readonly medianMs: Readonly<Record<string, number>>;
}

/** Old-codegen records a search starts from: the fastest few, one per schedule. */
export const MAX_CARRIED_SEEDS = 3;

export interface TaskSearch {
  readonly workload: Workload;
  /** Up to n new distinct valid schedules (fewer, even none, when the space runs dry). */
  propose(n: number): Schedule[];
  observe(r: TrialResult): void;
  readonly visited: readonly TrialResult[];
  /** Best median per level over ok visited candidates. */
  bestMs(): Record<string, number>;
}

export const scheduleKey = (s: Schedule) => JSON.stringify(makeSchedule(s));

export function fitnessOf(medianMs: Readonly<Record<string, number>>, best: Readonly<Record<string, number>>): number {
  let f = Infinity;
  for (const [l, ms] of Object.entries(medianMs)) if (best[l]) f = Math.min(f, ms / best[l]!);
  return f;
}

export function createTaskSearch(workload: Workload, target: Target, o: SearchOptions): TaskSearch {
  const rng: Rng = seededRng((o.seed ^ hash32(workload.key)) >>> 0);
  const epsilon = o.epsilon ?? 0.2;
  const threadOptions = [...new Set(o.threads)].sort((a, b) => a - b);
  const visited: TrialResult[] = [];
  const seen = new Set<string>();
  const best: Record<string, number> = {};

  const snap = (s: Schedule): Schedule => {
    const t = threadOptions.reduce((a, b) => (Math.abs(b - s.threads) < Math.abs(a - s.threads) ? b : a));
    return repair({ ...s, threads: t, ...(o.winograd === false ? { algo: 'direct' as const } : {}) }, workload, target);
  };
  const usable = (s: Schedule) => isValid(s, workload, target) && o.levelsFor(s.threads).length > 0;

  const priors = (o.priors ?? []).map((p) => ({ schedule: snap(p.schedule), medianMs: p.medianMs })).filter((p) => usable(p.schedule));
  const seeds: Schedule[] = [...(o.seedSchedules ?? []).slice(0, MAX_CARRIED_SEEDS).map(snap), ...priors.map((p) => p.schedule)];
  for (const t of threadOptions) {
    const streaming = weightStreaming(workload, target, t);
    if (streaming) seeds.push(streaming);
    for (const make of [localityGreedy, parallelHeavy, defaultTableRefresh]) seeds.push(make(workload, target, t));
    const winograd = o.winograd === false ? undefined : winogradDefault(workload, target, t);
    if (winograd) seeds.push(winograd);
  }
  const random = (): Schedule => snap({ ...sampleSchedule(workload, target, rng), threads: rng.pick(threadOptions) });
  const randomSeeds = priors.length > 0 ? 0 : (o.randomSeeds ?? 4);
  if (o.rank && randomSeeds > 0) {
    const drawn = new Map<string, Schedule>();
    for (let i = 0; i < randomSeeds * RANK_DRAW; i++) {
      const s = random();
      if (usable(s)) drawn.set(scheduleKey(s), s);
    }
    const byRank = [...drawn.values()].map((s) => ({ s, score: o.rank!(s) }));
    byRank.sort((a, b) => a.score - b.score || (scheduleKey(a.s) < scheduleKey(b.s) ? -1 : 1));
    for (const { s } of byRank.slice(0, randomSeeds)) seeds.push(s);
  } else for (let i = 0; i < randomSeeds; i++) seeds.push(random());
  const priorBest: Record<string, number> = {};
  for (const p of priors) for (const [l, ms] of Object.entries(p.medianMs)) priorBest[l] = Math.min(priorBest[l] ?? Infinity, ms);

  const fresh = (s: Schedule, taken: Set<string>) => usable(s) && !seen.has(scheduleKey(s)) && !taken.has(scheduleKey(s));

  function evolve(n: number, taken: Set<string>): Schedule[] {
    const ok = visited.filter((r) => r.status === 'ok');
    if (ok.length === 0) return [];
    const parents = [...ok]
      .sort((a, b) => fitnessOf(a.medianMs, best) - fitnessOf(b.medianMs, best) || (a.id < b.id ? -1 : 1))
      .slice(0, o.population ?? 8);
    const pool = new Map<string, Schedule>();
    for (let i = 0; i < n * 16 && pool.size < n * 8; i++) {
      let child = snap(mutate(rng.pick(parents).schedule, workload, target, rng));
      if (rng.next() < 0.3) child = snap(mutate(child, workload, target, rng));
      if (fresh(child, taken)) pool.set(scheduleKey(child), child);
    }
    const obs: Observation[] = ok.flatMap((r) =>
      Object.entries(r.medianMs).map(([l, ms]) => ({ features: r.features, schedule: r.schedule, level: Number(l), medianMs: ms })),
    );
    // Priors speak in another machine's milliseconds: scaled so their best equals this machine's best so far.
    if (ok.length < 8) {
      for (const p of priors) {
        if (seen.has(scheduleKey(p.schedule))) continue;
        for (const [l, ms] of Object.entries(p.medianMs)) {
          if (best[l] === undefined || !priorBest[l]) continue;
          obs.push({
            features: scheduleFeatures(workload, p.schedule),
            schedule: p.schedule,
            level: Number(l),
            medianMs: (ms * best[l]!) / priorBest[l]!,
          });
        }
      }
    }
    const model = fitLatencyModel(obs, o.levels);
    const ranked = [...pool.values()].map((s) => {
      if (!model) return { s, score: o.rank ? o.rank(s) : 0 };
      const f = scheduleFeatures(workload, s);
      const predicted = Object.fromEntries(o.levelsFor(s.threads).map((l) => [String(l), model.predictMs(f, s, l)]));
      return { s, score: fitnessOf(predicted, best) };
    });
    // without a model of either kind, keep the mutation order (already random); with one, best predicted first
    if (model || o.rank) ranked.sort((a, b) => a.score - b.score || (scheduleKey(a.s) < scheduleKey(b.s) ? -1 : 1));
    return ranked.map((x) => x.s);
  }

  return {
    workload,
    visited,
    bestMs: () => ({ ...best }),
    propose(n) {
      const out: Schedule[] = [];
      const taken = new Set<string>();
      const take = (s: Schedule) => {
        out.push(s);
        taken.add(scheduleKey(s));
      };
      while (out.length < n && seeds.length > 0) {
        const s = seeds.shift()!;
        if (fresh(s, taken)) take(s);
      }
      if (out.length >= n) return out;
      const ranked = evolve(n - out.length, taken);
      let next = 0;
      for (let attempts = 0; out.length < n && attempts < n * 40; attempts++) {
        if (rng.next() < epsilon || next >= ranked.length) {
          const s = random();
          if (fresh(s, taken)) take(s);
        } else {
          const s = ranked[next++]!;
          if (fresh(s, taken)) take(s);
        }
      }
      return out;
    },
    observe(r) {
      if (seen.has(scheduleKey(r.schedule))) return;
      seen.add(scheduleKey(r.schedule));
      visited.push(r);
      if (r.status !== 'ok') return;
      for (const [l, ms] of Object.entries(r.medianMs)) best[l] = Math.min(best[l] ?? Infinity, ms);
    },
  };
}

function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
