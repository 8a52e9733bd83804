/**
 * Which interference level a block will meet, for the scheduler's version choice: the bundle's
 * fitted proxy (`veltair bench --calibrate-proxy`) over OS features sampled for the cores outside
 * this server (the other tenants of the machine) and the server's own latency ratio (observed /
 * expected time of its recent blocks). A model whose bundle has no fitted proxy is never guessed
 * at: level 0.
 */
import { availableCores } from '../toolchain/cpu.js';
import { FeatureSampler } from '../interference/proxy-features.js';
import { compiledLevel, compileLevelModel, type CompiledLevelModel } from '../interference/proxy-model.js';
import type { Manifest } from '../bundle/manifest.js';

export class LevelPredictor {
  private readonly sampler: FeatureSampler;
  private readonly models: readonly (CompiledLevelModel | undefined)[];

  constructor(serverCpus: readonly number[], manifests: readonly Manifest[]) {
    this.sampler = new FeatureSampler({ kernelCores: serverCpus, allCores: availableCores() });
    this.models = manifests.map((m) => (m.interferenceProxy ? compileLevelModel(m.interferenceProxy.models.system) : undefined));
  }

  /** Whether any served model can be predicted at all (else every block runs at level 0). */
  get calibrated(): boolean {
    return this.models.some((m) => m !== undefined);
  }

  predict(model: number): number {
    const m = this.models[model];
    if (!m) return 0;
    return Math.max(0, Math.min(4, compiledLevel(m, this.sampler.features())));
  }

  /** A block took `observedMs` where the scheduler expected `expectedMs`. */
  observe(observedMs: number, expectedMs: number): void {
    if (expectedMs > 0 && observedMs > 0) this.sampler.ratio.observe(observedMs, expectedMs);
  }

  close(): void {
    this.sampler.close();
  }
}
