/**
 * The interference proxy's linear model: features → a continuous interference level, fitted by
 * least squares on calibration samples (features recorded while the noise generator really ran at
 * each level) and rounded to the nearest calibrated level at run time. Pure arithmetic: no I/O.
 *
 * A feature that did not vary during calibration (PSI memory is 0 on a machine that never
 * reclaims, the tenant input when no tenant was described) carries no information; it is left out
 * of the fit and gets weight 0, so a constant column can never make the system singular.
 */

import type { ManifestLevelModel } from '../bundle/manifest.js';

/** Names of the proxy's inputs, in the order the model stores its weights. */
export const SYSTEM_FEATURES = ['otherCoresBusy', 'psiCpuSome', 'psiMemorySome', 'latencyRatio'] as const;
/** With tenants: the co-runners' memory traffic (GB/s) as their profiles state it. */
export const TENANT_FEATURES = [...SYSTEM_FEATURES, 'coRunnerMemGBps'] as const;
export type FeatureName = typeof TENANT_FEATURES[number];
export type FeatureVector = Readonly<Record<FeatureName, number>>;

/** A fitted linear map, as stored in the bundle's manifest (interferenceProxy.models). */
export interface LinearLevelModel extends ManifestLevelModel {
  readonly features: readonly FeatureName[];
}

export interface CalibrationSample {
  readonly level: number;
  readonly features: FeatureVector;
}

/** Solve the symmetric positive semi-definite system A x = b by Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    if (Math.abs(m[p]![c]!) < 1e-12) throw new RangeError('the calibration features are linearly dependent');
    [m[c], m[p]] = [m[p]!, m[c]!];
    for (let r = c + 1; r < n; r++) {
      const f = m[r]![c]! / m[c]![c]!;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let s = m[r]![n]!;
    for (let k = r + 1; k < n; k++) s -= m[r]![k]! * x[k]!;
    x[r] = s / m[r]![r]!;
  }
  return x;
}

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/**
 * Ordinary least squares of level on `features` (+ intercept). Columns are centred and scaled
 * before solving, so features in very different units (fractions, GB/s) condition the normal
 * equations equally; a column that is (near) constant is dropped. Collinear informative columns
 * get a ridge of 1e-6 (in standardised units), small enough to leave any well-posed fit unchanged.
 */
export function fitLevelModel(samples: readonly CalibrationSample[], features: readonly FeatureName[]): LinearLevelModel {
  const levels = new Set(samples.map((s) => s.level));
  if (samples.length < features.length + 2 || levels.size < 2) {
    throw new RangeError(`a proxy fit needs samples at two or more levels and more samples than features (got ${samples.length} at ${levels.size} level(s))`);
  }
  const y = samples.map((s) => s.level);
  const cols = features.map((f) => samples.map((s) => s.features[f]));
  const centres = cols.map(mean);
  const scales = cols.map((c, i) => Math.sqrt(mean(c.map((v) => (v - centres[i]!) ** 2))));
  const used = features.map((_, i) => scales[i]! > 1e-9 * Math.max(1, Math.abs(centres[i]!)));
  const idx = features.map((_, i) => i).filter((i) => used[i]);
  const yMean = mean(y);
  const z = (i: number, r: number) => (cols[i]![r]! - centres[i]!) / scales[i]!;
  const ata = idx.map((i) => idx.map((j) => samples.reduce((s, _, r) => s + z(i, r) * z(j, r), 0) + (i === j ? 1e-6 * samples.length : 0)));
  const aty = idx.map((i) => samples.reduce((s, _, r) => s + z(i, r) * (y[r]! - yMean), 0));
  const beta = idx.length > 0 ? solve(ata, aty) : [];
  const weights = features.map(() => 0);
  let intercept = yMean;
  idx.forEach((i, k) => {
    weights[i] = beta[k]! / scales[i]!;
    intercept -= weights[i]! * centres[i]!;
  });
  const model = { features: [...features], intercept, weights, r2: 0, rmsError: 0, accuracy: 0 };
  const calibrated = [...levels].sort((a, b) => a - b);
  const predicted = samples.map((s) => continuousLevel(model, s.features));
  const ssRes = predicted.reduce((s, p, r) => s + (p - y[r]!) ** 2, 0);
  const ssTot = y.reduce((s, v) => s + (v - yMean) ** 2, 0);
  const hits = samples.filter((s, r) => snapLevel(predicted[r]!, calibrated) === s.level).length;
  return { ...model, r2: ssTot > 0 ? 1 - ssRes / ssTot : 0, rmsError: Math.sqrt(ssRes / samples.length), accuracy: hits / samples.length };
}

/** intercept + w·x; a feature the vector lacks counts as 0. */
/**
 * A fitted model as five weights in TENANT_FEATURES order (0 for a feature it does not use), so a
 * decision reads the sampler's five numbers by fixed property names: no string-keyed lookups, no
 * walk through the manifest's objects — what makes a decision cost ~1 µs instead of ~10 µs when it
 * follows a model run that evicted the JS heap from the caches.
 */
export interface CompiledLevelModel { readonly intercept: number; readonly w: Float64Array }

export function compileLevelModel(m: Pick<ManifestLevelModel, 'features' | 'intercept' | 'weights'>): CompiledLevelModel {
  const w = new Float64Array(TENANT_FEATURES.length);
  m.features.forEach((f, i) => {
    const at = TENANT_FEATURES.indexOf(f as FeatureName);
    if (at >= 0) w[at] = m.weights[i]!;
  });
  return { intercept: m.intercept, w };
}

export function compiledLevel(m: CompiledLevelModel, x: FeatureVector): number {
  const w = m.w;
  return m.intercept + w[0]! * x.otherCoresBusy + w[1]! * x.psiCpuSome + w[2]! * x.psiMemorySome + w[3]! * x.latencyRatio + w[4]! * x.coRunnerMemGBps;
}

/** The model's unrounded level for one feature vector (the runtime compiles the model once instead). */
export function continuousLevel(m: Pick<ManifestLevelModel, 'features' | 'intercept' | 'weights'>, x: FeatureVector): number {
  return compiledLevel(compileLevelModel(m), x);
}

/** The calibrated level nearest to `level` (ties go to the lower, less pessimistic level). */
export function snapLevel(level: number, calibrated: readonly number[]): number {
  let best = calibrated[0]!;
  for (const c of calibrated) if (Math.abs(c - level) < Math.abs(best - level)) best = c;
  return best;
}
