/**
 * How well the scaling model predicts core counts it was not given, where figures exist:
 *  - a profile measured at several core counts: predict the next count up from the lowest one
 *    alone (here: 2 cores from 1), per step and version, against the measured figure; and the
 *    whole model (Σ of each step's first version) the same way. Beside it the naive prediction
 *    (perfect scaling, t·c₀/c) as a yardstick;
 *  - a many-core profile (the artifact): fit each layer on its two lowest core counts and predict
 *    the rest.
 * Pure.
 */
import type { Profile } from './scheduling-profile.js';
import { fitStep, predictStep, quantile, type Point, type ScalingConstants } from './scaling.js';

export interface PredictionCheck {
  readonly profile: string;
  readonly fromCores: readonly number[];
  readonly toCores: readonly number[];
  readonly points: number;
  readonly medianAbsError: number;
  readonly p90AbsError: number;
  /** Median signed error (predicted / measured − 1): > 0 means the model predicts too slow. */
  readonly medianError: number;
  readonly wholeModelError: number | null;
  readonly naiveMedianAbsError: number;
  readonly naiveWholeModelError: number | null;
}

function quietPoints(latency: Profile['steps'][number]['versions'][number]['latencyUs']): Point[] {
  return Object.entries(latency)
    .filter(([, l]) => l['0'] !== undefined)
    .map(([c, l]) => ({ cores: Number(c), us: l['0']!.us }))
    .sort((a, b) => a.cores - b.cores);
}

export function checkPrediction(p: Profile, k: ScalingConstants, fromCount = 1): PredictionCheck | null {
  const counts = [...new Set(p.steps.flatMap((s) => s.versions.flatMap((v) => quietPoints(v.latencyUs).map((x) => x.cores))))].sort(
    (a, b) => a - b,
  );
  if (counts.length <= fromCount) return null;
  const from = counts.slice(0, fromCount),
    to = counts.slice(fromCount);
  const errs: number[] = [],
    naive: number[] = [];
  let sumPred = 0,
    sumNaive = 0,
    sumMeas = 0,
    complete = true;
  for (const s of p.steps) {
    s.versions.forEach((v, j) => {
      const pts = quietPoints(v.latencyUs);
      const given = pts.filter((x) => from.includes(x.cores));
      if (given.length === 0) {
        if (j === 0) complete = false;
        return;
      }
      const fit = fitStep(given, v.parallelChunks, s.bytes, k);
      const base = given[given.length - 1]!;
      for (const t of pts.filter((x) => to.includes(x.cores))) {
        const pred = predictStep(fit, t.cores, k);
        const nv = (base.us * base.cores) / t.cores;
        errs.push(pred / t.us - 1);
        naive.push(nv / t.us - 1);
        if (j === 0 && t.cores === to[0]) {
          sumPred += pred;
          sumNaive += nv;
          sumMeas += t.us;
        }
      }
      if (j === 0 && !pts.some((x) => x.cores === to[0])) complete = false;
    });
  }
  if (errs.length === 0) return null;
  const abs = errs.map(Math.abs);
  return {
    profile: p.model.name,
    fromCores: from,
    toCores: to,
    points: errs.length,
    medianAbsError: quantile(abs, 0.5),
    p90AbsError: quantile(abs, 0.9),
    medianError: quantile(errs, 0.5),
    wholeModelError: complete && sumMeas > 0 ? sumPred / sumMeas - 1 : null,
    naiveMedianAbsError: quantile(naive.map(Math.abs), 0.5),
    naiveWholeModelError: complete && sumMeas > 0 ? sumNaive / sumMeas - 1 : null,
  };
}
