/**
 * Fitting the interference proxy's linear model by least squares on calibration samples (features
 * recorded while the noise generator really ran at each level).
 *
 * A feature that did not vary during calibration (PSI memory is 0 on a machine that never
 * reclaims, the tenant input when no tenant was described) carries no information; it is left out
 * of the fit and gets weight 0, so a constant column can never make the system singular.
 */
import {
  continuousLevel,
  snapLevel,
  type CalibrationSample,
  type FeatureName,
  type HeldOutFit,
  type LinearLevelModel,
} from './proxy-model.js';

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
    throw new RangeError(
      `a proxy fit needs samples at two or more levels and more samples than features (got ${samples.length} at ${levels.size} level(s))`,
    );
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

/**
 * Held-out fit quality: for each fold (samples sharing `foldOf`), fit on every other fold, predict
 * that fold's samples; R², RMS and accuracy over all held-out predictions. Folds are the
 * calibration sweep's passes (ascending, then descending levels), so a fold holds whole visits:
 * samples seconds apart at one level are never split between training and test, which would let
 * the machine's slow drift pass for skill. Undefined when fewer than two folds can be fitted.
 */
export function crossValidate(
  samples: readonly CalibrationSample[],
  features: readonly FeatureName[],
  foldOf: (s: CalibrationSample) => number = (s) => s.pass ?? 0,
): HeldOutFit | undefined {
  const folds = [...new Set(samples.map(foldOf))].sort((a, b) => a - b);
  if (folds.length < 2) return undefined;
  const calibrated = [...new Set(samples.map((s) => s.level))].sort((a, b) => a - b);
  const yMean = samples.reduce((s, x) => s + x.level, 0) / samples.length;
  let ssRes = 0,
    ssTot = 0,
    hits = 0,
    n = 0,
    fitted = 0;
  for (const k of folds) {
    const train = samples.filter((s) => foldOf(s) !== k),
      test = samples.filter((s) => foldOf(s) === k);
    let model: LinearLevelModel;
    try {
      model = fitLevelModel(train, features);
    } catch {
      continue;
    }
    fitted++;
    for (const s of test) {
      const p = continuousLevel(model, s.features);
      ssRes += (p - s.level) ** 2;
      ssTot += (s.level - yMean) ** 2;
      if (snapLevel(p, calibrated) === s.level) hits++;
      n++;
    }
  }
  if (fitted < 2 || n === 0) return undefined;
  return { folds: fitted, samples: n, r2: ssTot > 0 ? 1 - ssRes / ssTot : 0, rmsError: Math.sqrt(ssRes / n), accuracy: hits / n };
}
