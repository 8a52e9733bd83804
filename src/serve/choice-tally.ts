/**
 * The blocks and kernel versions a dispatcher ran, counted in plain arrays per model and added to
 * the Prometheus counters (`veltair_blocks_total`, `veltair_version_choices_total`) when they are
 * read. Why: a chain of a few dozen layers would otherwise pay as many labelled counter updates on
 * the event loop each time it ends, each hashing its label strings, right where the next block
 * waits to be handed off.
 *
 * Levels are the predicted interference level rounded to 0..MAX_LEVEL; versions index a layer's
 * kept versions (0..versionsPerLayer-1).
 */
import { internalError } from '../errors.js';
import { LEVEL_COUNT } from '../schedule/model-table.js';
import type { ServerMetrics } from './metrics.js';

const LEVELS = LEVEL_COUNT;
const MAX_LEVEL = LEVEL_COUNT - 1;

export class ChoiceTally {
  /** Per model: blocks not yet added, by level. */
  private readonly blocks: Float64Array[];
  /** Per model: kernel steps not yet added, at level * versionsPerLayer + version. */
  private readonly versions: Float64Array[];

  /** `versionsPerLayer[m]`: the most versions any tunable layer of model m keeps (at least 1). */
  constructor(
    private readonly names: readonly string[],
    private readonly versionsPerLayer: readonly number[],
  ) {
    this.blocks = names.map(() => new Float64Array(LEVELS));
    this.versions = names.map((_, m) => new Float64Array(LEVELS * Math.max(1, versionsPerLayer[m]!)));
  }

  static levelIndex(level: number): number {
    return Math.max(0, Math.min(MAX_LEVEL, Math.round(level)));
  }

  countBlock(model: number, level: number): void {
    this.blocks[model]![ChoiceTally.levelIndex(level)]!++;
  }

  countVersion(model: number, level: number, version: number): void {
    const per = Math.max(1, this.versionsPerLayer[model]!);
    if (!(Number.isInteger(version) && version >= 0 && version < per)) {
      throw internalError(`model ${this.names[model]} ran version ${version} of a layer that keeps ${per}`);
    }
    this.versions[model]![ChoiceTally.levelIndex(level) * per + version]!++;
  }

  /** Add what was counted since the last call to the counters, and start again from zero. */
  flushInto(metrics: Pick<ServerMetrics, 'blocks' | 'versionChoices'>): void {
    this.names.forEach((model, m) => {
      const blocks = this.blocks[m]!;
      const versions = this.versions[m]!;
      const per = Math.max(1, this.versionsPerLayer[m]!);
      for (let l = 0; l < LEVELS; l++) {
        if (blocks[l]! > 0) metrics.blocks.inc({ model, level: String(l) }, blocks[l]!);
        for (let v = 0; v < per; v++) {
          const n = versions[l * per + v]!;
          if (n > 0) metrics.versionChoices.inc({ model, level: String(l), version: String(v) }, n);
        }
      }
      blocks.fill(0);
      versions.fill(0);
    });
  }
}
