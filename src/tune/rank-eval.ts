/**
 * How well the ranking model (rank-model.ts) orders candidates it has not seen, from records alone
 * (no timing runs, so the figures hold on any machine): leave one workload out. For each workload
 * with a run of at least `minGroup` records, the model is fitted on every other workload's records
 * (every target's) and ranks that workload's runs; per run:
 *  - Kendall τ-b between predicted and measured level-0 medians (1: the same order, 0: none);
 *  - top-1: the predicted fastest is the measured fastest;
 *  - top-k recall: of the k measured fastest (k = min(k, n − 1)), the share among the k predicted
 *    fastest;
 *  - the regret of trusting it blindly: measured latency of the predicted fastest / the fastest − 1.
 * Each is averaged over runs, beside what a random order scores in expectation (τ 0, top-1 1/n,
 * top-k recall k/n, and the mean regret of a uniformly drawn candidate).
 */
import { fitRankModel, rankingRecords, type RankedRecord } from './rank-model.js';
import type { TuningRecord } from '../db/record.js';

export interface RankEvaluation {
  /** Usable records read (ok, complete, with a level-0 median, in a run of at least two). */
  readonly records: number;
  readonly targets: number;
  /** Workloads held out in turn, and the runs of theirs ranked. */
  readonly heldOutWorkloads: number;
  readonly runs: number;
  /** Mean candidates per ranked run. */
  readonly meanRunSize: number;
  readonly k: number;
  readonly model: RankScores;
  readonly random: RankScores;
}

export interface RankScores {
  readonly kendallTau: number;
  readonly top1: number;
  readonly topKRecall: number;
  readonly meanRegretPercent: number;
}

export interface RankEvalOptions {
  /** Runs with fewer records are not ranked (τ over two items says little). Default 3. */
  readonly minGroup?: number;
  /** The k of top-k recall. Default 3. */
  readonly k?: number;
  /** The model's ridge penalty (rank-model.ts; default its own). */
  readonly lambda?: number;
}

/** Kendall τ-b of two equally long lists (0 when either is constant). */
export function kendallTau(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new RangeError('kendallTau needs lists of one length');
  let concordant = 0,
    discordant = 0,
    tiesA = 0,
    tiesB = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = i + 1; j < a.length; j++) {
      const da = Math.sign(a[i]! - a[j]!),
        db = Math.sign(b[i]! - b[j]!);
      if (da === 0 && db === 0) continue;
      if (da === 0) tiesA++;
      else if (db === 0) tiesB++;
      else if (da === db) concordant++;
      else discordant++;
    }
  }
  const denom = Math.sqrt((concordant + discordant + tiesA) * (concordant + discordant + tiesB));
  return denom > 0 ? (concordant - discordant) / denom : 0;
}

/** Indices of the k smallest values (ties: the earlier index). */
function smallest(xs: readonly number[], k: number): number[] {
  return xs
    .map((x, i) => ({ x, i }))
    .sort((p, q) => p.x - q.x || p.i - q.i)
    .slice(0, k)
    .map((p) => p.i);
}

/** Scores of one run: predicted and measured ln latencies of its candidates. */
export function runScores(predicted: readonly number[], measured: readonly number[], k: number): RankScores & { random: RankScores } {
  const n = measured.length;
  const kk = Math.max(1, Math.min(k, n - 1));
  const best = Math.min(...measured);
  const pick = smallest(predicted, 1)[0]!;
  const trueTop = new Set(smallest(measured, kk));
  const hits = smallest(predicted, kk).filter((i) => trueTop.has(i)).length;
  const regret = (i: number) => (Math.exp(measured[i]! - best) - 1) * 100;
  return {
    kendallTau: kendallTau(predicted, measured),
    top1: measured[pick] === best ? 1 : 0,
    topKRecall: hits / kk,
    meanRegretPercent: regret(pick),
    random: {
      kendallTau: 0,
      top1: measured.filter((m) => m === best).length / n,
      topKRecall: kk / n,
      meanRegretPercent: measured.reduce((s, _, i) => s + regret(i), 0) / n,
    },
  };
}

const mean = (xs: readonly number[]) => (xs.length > 0 ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);

/** Leave-one-workload-out evaluation of the ranking model over `records` (see the header). */
export function evaluateRanking(records: Iterable<TuningRecord>, o: RankEvalOptions = {}): RankEvaluation {
  const minGroup = o.minGroup ?? 3;
  const k = o.k ?? 3;
  const usable = rankingRecords(records);
  const runs = new Map<string, RankedRecord[]>();
  for (const r of usable) runs.set(r.group, [...(runs.get(r.group) ?? []), r]);
  const ranked = [...runs.values()].filter((g) => g.length >= minGroup);
  const workloads = [...new Set(ranked.map((g) => g[0]!.record.workload))].sort();
  const scores: (RankScores & { random: RankScores })[] = [];
  let runSizes = 0;
  const heldOut = new Set<string>();
  for (const w of workloads) {
    const model = fitRankModel(
      usable.filter((r) => r.record.workload !== w),
      o.lambda,
    );
    if (!model) continue;
    heldOut.add(w);
    for (const g of ranked.filter((x) => x[0]!.record.workload === w)) {
      scores.push(
        runScores(
          g.map((r) => model.scoreRow(r.row)),
          g.map((r) => r.logMs),
          k,
        ),
      );
      runSizes += g.length;
    }
  }
  const summary = (pick: (s: RankScores & { random: RankScores }) => RankScores): RankScores => ({
    kendallTau: mean(scores.map((s) => pick(s).kendallTau)),
    top1: mean(scores.map((s) => pick(s).top1)),
    topKRecall: mean(scores.map((s) => pick(s).topKRecall)),
    meanRegretPercent: mean(scores.map((s) => pick(s).meanRegretPercent)),
  });
  return {
    records: usable.length,
    targets: new Set(usable.map((r) => r.record.target)).size,
    heldOutWorkloads: heldOut.size,
    runs: scores.length,
    meanRunSize: scores.length > 0 ? runSizes / scores.length : 0,
    k,
    model: summary((s) => s),
    random: summary((s) => s.random),
  };
}
