/**
 * The cost model: ridge regression of log-latency on a candidate's analytic features and the
 * interference level, fitted in closed form on the records measured so far in this pass
 * ((XᵀX + λI) w = Xᵀy by Cholesky; a few dozen columns, so no library is needed).
 *
 * Log-latency because latencies span orders of magnitude across schedules and effects multiply
 * (a tile that misses L2 costs a factor, not a constant). The level enters as a one-hot plus its
 * interactions with the locality and parallelism features, so the model can learn that big cache
 * footprints lose more under a co-runner than small ones — the frontier the search is after.
 */
import type { ScheduleFeatures } from '../space/features.js';
import { isWinograd, type Schedule } from '../space/knobs.js';

export interface RidgeModel {
  readonly weights: readonly number[];
  readonly intercept: number;
  readonly mean: readonly number[];
  readonly scale: readonly number[];
  predict(x: readonly number[]): number;
}

/** Solve A x = b for symmetric positive-definite A (Cholesky). */
export function solveSpd(a: readonly (readonly number[])[], b: readonly number[]): number[] {
  const n = b.length;
  const l = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = a[i]![j]!;
      for (let k = 0; k < j; k++) s -= l[i]![k]! * l[j]![k]!;
      if (i === j) {
        if (!(s > 0)) throw new RangeError('matrix is not positive definite');
        l[i]![i] = Math.sqrt(s);
      } else {
        l[i]![j] = s / l[j]![j]!;
      }
    }
  }
  const y = new Array<number>(n).fill(0);
  for (let i = 0; i < n; i++) {
    let s = b[i]!;
    for (let k = 0; k < i; k++) s -= l[i]![k]! * y[k]!;
    y[i] = s / l[i]![i]!;
  }
  const x = new Array<number>(n).fill(0);
  for (let i = n - 1; i >= 0; i--) {
    let s = y[i]!;
    for (let k = i + 1; k < n; k++) s -= l[k]![i]! * x[k]!;
    x[i] = s / l[i]![i]!;
  }
  return x;
}

/**
 * Ridge fit with standardised columns and an unpenalised intercept. Constant columns get scale 1
 * (they standardise to 0 and the penalty keeps their weight at 0).
 */
export function fitRidge(rows: readonly (readonly number[])[], y: readonly number[], lambda = 1): RidgeModel {
  if (rows.length === 0 || rows.length !== y.length) throw new RangeError('ridge needs as many targets as rows, at least one');
  const d = rows[0]!.length;
  const n = rows.length;
  const mean = Array.from({ length: d }, (_, j) => rows.reduce((s, r) => s + r[j]!, 0) / n);
  const scale = Array.from({ length: d }, (_, j) => {
    const v = rows.reduce((s, r) => s + (r[j]! - mean[j]!) ** 2, 0) / n;
    return v > 1e-12 ? Math.sqrt(v) : 1;
  });
  const z = rows.map((r) => r.map((x, j) => (x - mean[j]!) / scale[j]!));
  const yMean = y.reduce((s, v) => s + v, 0) / n;
  const a = Array.from({ length: d }, (_, i) =>
    Array.from({ length: d }, (_, j) => z.reduce((s, r) => s + r[i]! * r[j]!, 0) + (i === j ? lambda : 0)),
  );
  const b = Array.from({ length: d }, (_, i) => z.reduce((s, r, k) => s + r[i]! * (y[k]! - yMean), 0));
  const w = solveSpd(a, b);
  const weights = w.map((wj, j) => wj / scale[j]!);
  const intercept = yMean - weights.reduce((s, wj, j) => s + wj * mean[j]!, 0);
  return {
    weights,
    intercept,
    mean,
    scale,
    predict: (x) => intercept + x.reduce((s, xj, j) => s + xj * weights[j]!, 0),
  };
}

const lg = (x: number) => Math.log2(Math.max(1, x));

/** The schedule part of a row: locality (footprints), parallelism (chunks, threads) and code shape. */
export function scheduleColumns(f: ScheduleFeatures, s: Schedule): number[] {
  return [
    lg(f.footprintBytes.l1),
    lg(f.footprintBytes.l2),
    lg(f.footprintBytes.l3),
    lg(f.parallelChunks),
    f.threads,
    lg(f.threads),
    f.loadBalance,
    lg(f.arithmeticIntensity + 1),
    f.registerTile,
    lg(f.reductionSplit),
    s.vec,
    s.unroll,
    s.loopOrder === 'oc_outer' ? 1 : 0,
    s.parallelAxis === 'oc' ? 1 : 0,
    isWinograd(s) ? 1 : 0,
  ];
}

/** One row: schedule columns, the level's one-hot, and level × (L2/L3 footprint, chunks, threads). */
export function rowFor(f: ScheduleFeatures, s: Schedule, level: number, levels: readonly number[]): number[] {
  const base = scheduleColumns(f, s);
  const noisy = levels.filter((l) => l !== 0);
  const oneHot = noisy.map((l) => (l === level ? 1 : 0));
  const interactions = noisy.flatMap((l) =>
    l === level ? [lg(f.footprintBytes.l2), lg(f.footprintBytes.l3), lg(f.parallelChunks), f.threads] : [0, 0, 0, 0],
  );
  return [...base, ...oneHot, ...interactions];
}

export interface Observation {
  readonly features: ScheduleFeatures;
  readonly schedule: Schedule;
  readonly level: number;
  readonly medianMs: number;
}

export interface LatencyModel {
  /** Predicted latency (ms) of a schedule at a level. */
  predictMs(f: ScheduleFeatures, s: Schedule, level: number): number;
}

/** Fit the latency model, or undefined with too few observations to say anything. */
export function fitLatencyModel(obs: readonly Observation[], levels: readonly number[], lambda = 1): LatencyModel | undefined {
  const ok = obs.filter((o) => o.medianMs > 0 && Number.isFinite(o.medianMs));
  if (ok.length < 4) return undefined;
  const model = fitRidge(
    ok.map((o) => rowFor(o.features, o.schedule, o.level, levels)),
    ok.map((o) => Math.log(o.medianMs)),
    lambda,
  );
  return { predictMs: (f, s, level) => Math.exp(model.predict(rowFor(f, s, level, levels))) };
}
