/**
 * The interference proxy at run time: before a run, `decide()` maps the current features through
 * the bundle's fitted linear model to a calibrated level and switches each kernel step to that
 * level's best-profiled version (only the steps whose choice changes); after the run, `observe()`
 * feeds the run's kernel time into the latency-ratio feature and re-reads procfs when due, so the
 * decision itself normally works from cached OS features (a dot product and a table lookup). A bundle without coefficients is
 * never guessed at: the proxy reports `calibrated: false` and stays at level 0.
 */
import type { Manifest, ManifestInterferenceProxy } from '../bundle/manifest.js';
import type { Executor } from './native-bridge.js';
import { FeatureSampler, DEFAULT_REFRESH_MS } from '../interference/proxy-features.js';
import { compileLevelModel, compiledLevel, snapLevel, type CompiledLevelModel, type FeatureVector } from '../interference/proxy-model.js';
import { kernelSteps, pickTable, profiledKernelMs, type KernelStepChoice } from './version-picker.js';

export interface Decision {
  readonly level: number;
  /** The model's unrounded output (NaN when the bundle is not calibrated). */
  readonly continuous: number;
  /** The sampler's live vector: valid until the next decision (copy it to keep it). */
  readonly features: FeatureVector;
  /** Kernel steps whose version changed. */
  readonly switched: number;
}

export interface ProxyOptions {
  readonly manifest: Manifest;
  readonly executor: Executor;
  readonly stepOfPlan: readonly number[];
  readonly threads: number;
  readonly kernelCores: readonly number[];
  readonly allCores: readonly number[];
  /** Use the tenant-aware model (the caller sets sampler.coRunnerMemGBps from co-runner profiles). */
  readonly tenantAware?: boolean;
  readonly refreshMs?: number;
}

export class InterferenceProxy {
  readonly sampler: FeatureSampler;
  readonly steps: readonly KernelStepChoice[];
  readonly levels: readonly number[];
  readonly calibration: ManifestInterferenceProxy | undefined;
  private readonly table: Map<number, Int32Array>;
  private readonly profiled: Map<number, number>;
  private readonly kernelStepIds: Int32Array;
  private current: number | undefined;
  private readonly model: CompiledLevelModel | undefined;

  constructor(private readonly o: ProxyOptions) {
    this.calibration = o.manifest.interferenceProxy;
    this.model = this.calibration
      ? compileLevelModel(o.tenantAware ? this.calibration.models.tenant : this.calibration.models.system)
      : undefined;
    this.levels = this.calibration ? [...this.calibration.levels].sort((a, b) => a - b) : [0];
    this.sampler = new FeatureSampler({
      kernelCores: o.kernelCores,
      allCores: o.allCores,
      refreshMs: o.refreshMs ?? this.calibration?.refreshMs ?? DEFAULT_REFRESH_MS,
      ...(this.calibration ? { ratioWindow: this.calibration.ratioWindow } : {}),
    });
    this.steps = kernelSteps(o.manifest, o.stepOfPlan);
    this.kernelStepIds = Int32Array.from(this.steps.map((s) => s.step));
    this.table = pickTable(this.steps, o.executor.stepCount, [...new Set([0, ...this.levels])], o.threads);
    this.profiled = new Map([...this.table].map(([l, pick]) => [l, profiledKernelMs(this.steps, pick, o.threads)]));
  }

  get calibrated(): boolean {
    return this.calibration !== undefined;
  }

  /** The version index per native step that `level` picks (-1: not a kernel step). */
  pickFor(level: number): Int32Array {
    return this.table.get(level) ?? this.table.get(0)!;
  }

  /** Predict the level from the current features (no side effects). */
  predict(): { level: number; continuous: number; features: FeatureVector } {
    const features = this.sampler.features();
    if (!this.model) return { level: 0, continuous: Number.NaN, features };
    const continuous = compiledLevel(this.model, features);
    return { level: snapLevel(continuous, this.levels), continuous, features };
  }

  /** Switch every kernel step to `level`'s pick; returns the number of steps changed. */
  apply(level: number): number {
    // The common case in steady state: nothing to switch, so nothing to walk.
    if (level === this.current) return 0;
    const next = this.pickFor(level);
    const prev = this.current === undefined ? undefined : this.pickFor(this.current);
    let switched = 0;
    for (const s of this.kernelStepIds) {
      if (prev === undefined || prev[s] !== next[s]) {
        this.o.executor.setVersion(s, next[s]!);
        switched++;
      }
    }
    this.current = level;
    return switched;
  }

  decide(): Decision {
    const p = this.predict();
    return { level: p.level, continuous: p.continuous, features: p.features, switched: this.apply(p.level) };
  }

  /** The applied level (undefined before the first apply). */
  get level(): number | undefined {
    return this.current;
  }

  /** After a run with executor profiling on: kernel steps' observed time over the applied pick's quiet profile → the latency ratio. */
  observeRun(): void {
    if (this.current === undefined) return;
    const ns = this.o.executor.stepTimesNs();
    let observedNs = 0;
    for (const s of this.kernelStepIds) observedNs += ns[s] ?? 0;
    this.sampler.ratio.observe(observedNs / 1e6, this.profiled.get(this.current) ?? this.profiled.get(0)!);
  }

  /**
   * observeRun, then the procfs re-read when `refreshMs` has passed — here, after the run's
   * result exists, rather than in the next decision, so a request never waits on procfs.
   * Returns whether procfs was read.
   */
  observe(): boolean {
    this.observeRun();
    if (this.sampler.ageMs() < this.sampler.refreshMs) return false;
    this.sampler.refresh();
    return true;
  }

  close(): void {
    this.sampler.close();
  }
}
