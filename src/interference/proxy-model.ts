/**
 * The interference proxy's linear model at decision time: features → a continuous interference
 * level (a dot product), rounded to the nearest calibrated level. Pure arithmetic, no I/O: this
 * and proxy-features.ts are all of the interference room the runtime loads. The fit lives in
 * proxy-fit.ts.
 */

/** Names of the proxy's inputs, in the order the model stores its weights. */
export const SYSTEM_FEATURES = ['otherCoresBusy', 'psiCpuSome', 'psiMemorySome', 'latencyRatio'] as const;
/** With tenants: the co-runners' memory traffic (GB/s), as the tenants' own counters report it over the window. */
export const TENANT_FEATURES = [...SYSTEM_FEATURES, 'coRunnerMemGBps'] as const;
export type FeatureName = (typeof TENANT_FEATURES)[number];
export type FeatureVector = Readonly<Record<FeatureName, number>>;

/** A fitted linear map features → interference level, as a bundle's manifest stores it (interferenceProxy.models). */
export interface LevelModel {
  /** Feature names (see proxy-features.ts), in weight order. */
  readonly features: readonly string[];
  readonly intercept: number;
  /** One weight per feature (0 for a feature that was constant during calibration). */
  readonly weights: readonly number[];
  /** Fit quality on the calibration samples it was fitted on (in-sample): R², residual RMS (levels), share rounded to the true level. */
  readonly r2: number;
  readonly rmsError: number;
  readonly accuracy: number;
  /**
   * The same measures on held-out samples (proxy-fit.ts crossValidate): each fold refitted without
   * its samples and scored on them. What the proxy can be expected to do on data it has not seen.
   */
  readonly heldOut?: HeldOutFit;
}

export interface HeldOutFit {
  readonly folds: number;
  readonly samples: number;
  /** 1 − Σ(held-out error²) / Σ(level − mean level)²: can be negative when the fit predicts worse than the mean. */
  readonly r2: number;
  readonly rmsError: number;
  readonly accuracy: number;
}

/** A LevelModel over the proxy's own feature names. */
export interface LinearLevelModel extends LevelModel {
  readonly features: readonly FeatureName[];
}

export interface CalibrationSample {
  readonly level: number;
  readonly features: FeatureVector;
  /** Which pass of the calibration sweep took it (0: levels ascending, 1: descending): the cross-validation folds. */
  readonly pass?: number;
}

/**
 * A fitted model as five weights in TENANT_FEATURES order (0 for a feature it does not use), so a
 * decision reads the sampler's five numbers by fixed property names: no string-keyed lookups, no
 * walk through the manifest's objects, which matters when a decision follows a model run that
 * evicted the JS heap from the caches (`veltair bench` reports the decision's cost in its run).
 */
export interface CompiledLevelModel {
  readonly intercept: number;
  readonly w: Float64Array;
}

export function compileLevelModel(m: Pick<LevelModel, 'features' | 'intercept' | 'weights'>): CompiledLevelModel {
  const w = new Float64Array(TENANT_FEATURES.length);
  m.features.forEach((f, i) => {
    const at = TENANT_FEATURES.indexOf(f as FeatureName);
    if (at >= 0) w[at] = m.weights[i]!;
  });
  return { intercept: m.intercept, w };
}

export function compiledLevel(m: CompiledLevelModel, x: FeatureVector): number {
  const w = m.w;
  return (
    m.intercept +
    w[0]! * x.otherCoresBusy +
    w[1]! * x.psiCpuSome +
    w[2]! * x.psiMemorySome +
    w[3]! * x.latencyRatio +
    w[4]! * x.coRunnerMemGBps
  );
}

/** The model's unrounded level for one feature vector (the runtime compiles the model once instead). */
export function continuousLevel(m: Pick<LevelModel, 'features' | 'intercept' | 'weights'>, x: FeatureVector): number {
  return compiledLevel(compileLevelModel(m), x);
}

/** The calibrated level nearest to `level` (ties go to the lower, less pessimistic level). */
export function snapLevel(level: number, calibrated: readonly number[]): number {
  let best = calibrated[0]!;
  for (const c of calibrated) if (Math.abs(c - level) < Math.abs(best - level)) best = c;
  return best;
}
