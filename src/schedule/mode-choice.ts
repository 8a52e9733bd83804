/**
 * veltair's online choice between time sharing and a spatial partition. Pure: it is told each
 * arrival's model and time and keeps no clock.
 *
 * Load: each model's arrival rate, estimated per window (arrivals counted since the last decision
 * over the time since), smoothed across windows (rate ← SMOOTHING · window + (1 − SMOOTHING) · rate)
 * so one bursty window does not decide alone. The mix is the rates' shares.
 *
 * Decision: at the first arrival at least `intervalMs` after the last decision, once `minArrivals`
 * arrivals were counted since, the mode comparison (partition.ts) at the estimated mix names the
 * best configuration, time sharing or a split. It replaces the current one only when its predicted
 * capacity exceeds the current configuration's (re-predicted at the same mix) by more than
 * `margin`: hysteresis, so a mix near the break-even does not flip the mode at every decision,
 * and a switch (which strands in-flight blocks on cores that change owner until they finish) is
 * paid only for a clear gain. The cost is one comparison per decision (partition.ts: models ×
 * cores capacity bisections, then O(models) per split), at most once per interval.
 */
import { compareModes, partitionCapacityQps, timeSharedCapacityQps, type Partition } from './partition.js';
import type { ModelPlan } from './requirement.js';

export type SpatialMode = 'time-shared' | 'partitioned';

export interface ChoiceSettings {
  /** Fewest ms between two decisions. */
  readonly intervalMs: number;
  /** Fewest arrivals counted since the last decision before the next one. */
  readonly minArrivals: number;
  /** A configuration replaces the current one only above (1 + margin) × its capacity. */
  readonly margin: number;
}

export const DEFAULT_CHOICE: ChoiceSettings = { intervalMs: 1000, minArrivals: 50, margin: 0.15 };

/** Weight of the newest window in the smoothed rate. */
export const SMOOTHING = 0.5;

export interface SpatialState {
  readonly mode: SpatialMode;
  /** The partition in force (null when time-shared). */
  readonly partition: Partition | null;
  /** Each model's estimated arrival rate (requests/s; zeros before the first decision). */
  readonly ratesPerSec: readonly number[];
  /** Predicted capacities at the last decision's mix (requests/s; NaN before the first). */
  readonly predictedPartitionQps: number;
  readonly predictedTimeSharedQps: number;
  readonly decisions: number;
  readonly switches: number;
}

/** A readable name for a state: `time-shared` or `partitioned 1+1`. */
export function describeSpatial(s: SpatialState): string {
  return s.partition ? `partitioned ${s.partition.cores.join('+')}` : 'time-shared';
}

export class ModeChooser {
  private readonly counts: Float64Array;
  private readonly rates: Float64Array;
  private windowStartMs = NaN;
  private counted = 0;
  private current: Partition | null;
  private predictedPartitionQps = NaN;
  private predictedTimeSharedQps = NaN;
  private decisions = 0;
  private switches = 0;

  constructor(
    private readonly plans: readonly ModelPlan[],
    private readonly cores: number,
    private readonly settings: ChoiceSettings = DEFAULT_CHOICE,
    initial: Partition | null = null,
  ) {
    this.counts = new Float64Array(plans.length);
    this.rates = new Float64Array(plans.length);
    this.current = initial;
  }

  get state(): SpatialState {
    return {
      mode: this.current ? 'partitioned' : 'time-shared',
      partition: this.current,
      ratesPerSec: Array.from(this.rates),
      predictedPartitionQps: this.predictedPartitionQps,
      predictedTimeSharedQps: this.predictedTimeSharedQps,
      decisions: this.decisions,
      switches: this.switches,
    };
  }

  /** The partition in force (null: time sharing). */
  get partition(): Partition | null {
    return this.current;
  }

  /** Count an arrival of `model` at `nowMs`; true when the configuration changed. */
  observe(model: number, nowMs: number): boolean {
    if (Number.isNaN(this.windowStartMs)) this.windowStartMs = nowMs;
    this.counts[model]!++;
    this.counted++;
    const elapsed = nowMs - this.windowStartMs;
    if (elapsed < this.settings.intervalMs || this.counted < this.settings.minArrivals) return false;
    for (let m = 0; m < this.rates.length; m++) {
      const windowRate = (this.counts[m]! * 1000) / elapsed;
      this.rates[m] = this.decisions === 0 ? windowRate : SMOOTHING * windowRate + (1 - SMOOTHING) * this.rates[m]!;
    }
    this.counts.fill(0);
    this.counted = 0;
    this.windowStartMs = nowMs;
    this.decisions++;
    return this.decide();
  }

  private decide(): boolean {
    const mix = Array.from(this.rates);
    const cmp = compareModes(this.plans, mix, this.cores);
    this.predictedPartitionQps = cmp.partition ? cmp.partition.capacityQps : 0;
    this.predictedTimeSharedQps = cmp.timeSharedQps;
    const currentQps = this.current
      ? partitionCapacityQps(this.plans, mix, this.current.cores)
      : timeSharedCapacityQps(this.plans, mix, this.cores);
    const partitionWins = cmp.partition !== null && cmp.partition.capacityQps > cmp.timeSharedQps;
    const best = partitionWins ? cmp.partition : null;
    const bestQps = partitionWins ? cmp.partition!.capacityQps : cmp.timeSharedQps;
    const same = best === null ? this.current === null : this.current !== null && best.cores.every((c, m) => c === this.current!.cores[m]);
    if (same || !(bestQps > currentQps * (1 + this.settings.margin))) {
      // Keep the configuration; a kept partition carries its capacity at the new mix.
      if (this.current) this.current = { ...this.current, capacityQps: currentQps };
      return false;
    }
    this.current = best;
    this.switches++;
    return true;
  }
}
