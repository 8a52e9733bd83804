/**
 * Interference between co-running blocks, from their memory traffic and cache footprint,
 * calibrated on the measured noise levels.
 *
 * Pressure is the share of a machine's memory bandwidth and last-level cache that the
 * co-runners take: π = GB/s ÷ bandwidth + footprint ÷ L3. Each measured level k was caused by a
 * co-runner whose own traffic G_k (GB/s: stream bytes + one 64-byte line per random operation,
 * measured alone) and buffers F_k the profile records; on the profiling machine (its L3 from the
 * profile; its bandwidth taken as the strongest co-runner's, one core streaming) that is π_k,
 * made monotone in k (running maximum). On the simulated machine (its socket bandwidth and L3,
 * both stated assumptions), a block's pressure is the *other* running blocks' summed traffic
 * (bytes ÷ latency of their layers) and summed footprints, and its level is π mapped through
 * (0, 0), (π_1, 1) … (π_4, 4), linearly; beyond the heaviest measured co-runner the level stays
 * 4, because no figure exists there. The block's latency at that (fractional) level comes from
 * its own measured per-level figures (model-table.ts).
 *
 * So the effect of a level is always the profiling machine's measurement; what is modelled is
 * which level a given mix of co-runners amounts to. Without calibration data (e.g. the artifact's
 * profile, which has no levels) every block runs at level 0, and the output says so. Pure.
 */
import type { ProfileLevel } from '../schedule/scheduling-profile.js';

export interface InterferenceModel {
  /** Continuous level for co-runners moving `gbps` in total with `footprintBytes` of buffers. */
  levelFor(gbps: number, footprintBytes: number): number;
  readonly calibrated: boolean;
  readonly points: readonly { readonly level: number; readonly pressure: number; readonly gbps: number; readonly bytes: number }[];
  readonly description: string;
}

/** A machine's capacities the pressure is relative to. */
export interface Capacity {
  readonly gbps: number;
  readonly l3Bytes: number;
}

export const NO_INTERFERENCE: InterferenceModel = {
  levelFor: () => 0,
  calibrated: false,
  points: [],
  description: 'no interference calibration (no measured noise levels in the profiles): every block runs at level 0',
};

export function calibrateInterference(
  levels: readonly ProfileLevel[],
  from: string,
  profiled: { readonly l3Bytes: number | null },
  target: Capacity,
): InterferenceModel {
  const usable = levels.filter((l) => l.level > 0 && l.coRunnerGBps !== null && l.coRunnerBytes !== null).sort((a, b) => a.level - b.level);
  if (usable.length === 0) return NO_INTERFERENCE;
  const here: Capacity = { gbps: Math.max(1e-9, ...usable.map((l) => l.coRunnerGBps!)), l3Bytes: profiled.l3Bytes ?? 32 * 2 ** 20 };
  let running = 0;
  const points = usable.map((l) => {
    running = Math.max(running, l.coRunnerGBps! / here.gbps + l.coRunnerBytes! / here.l3Bytes);
    return { level: l.level, pressure: running, gbps: l.coRunnerGBps!, bytes: l.coRunnerBytes! };
  });
  const xs = [0, ...points.map((p) => p.pressure)];
  const ys = [0, ...points.map((p) => p.level)];
  const top = ys[ys.length - 1]!;
  const levelFor = (gbps: number, footprintBytes: number): number => {
    const pi = gbps / target.gbps + footprintBytes / target.l3Bytes;
    if (pi <= 0) return 0;
    for (let i = 1; i < xs.length; i++) {
      if (pi <= xs[i]!) {
        const span = xs[i]! - xs[i - 1]!;
        return span > 0 ? ys[i - 1]! + ((ys[i]! - ys[i - 1]!) * (pi - xs[i - 1]!)) / span : ys[i]!;
      }
    }
    return top;
  };
  const mib = (b: number) => (b / 2 ** 20).toFixed(0);
  const description =
    `levels calibrated from ${from}: ` +
    points.map((p) => `L${p.level} at π=${p.pressure.toFixed(2)} (${p.gbps.toFixed(1)} GB/s, ${mib(p.bytes)} MiB)`).join(', ') +
    ` on the profiling machine (π = GB/s / ${here.gbps.toFixed(1)} + bytes / ${mib(here.l3Bytes)} MiB L3); a block's π = the other running blocks' GB/s ` +
    `/ ${target.gbps} + their footprint / ${mib(target.l3Bytes)} MiB (the simulated machine); capped at L${top}`;
  return { levelFor, calibrated: true, points, description };
}
