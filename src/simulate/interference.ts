/**
 * Interference between co-running blocks, from their memory traffic and cache footprint,
 * calibrated on the measured noise levels.
 *
 * Each measured level k was caused by a co-runner whose own traffic G_k (GB/s: stream bytes + one
 * 64-byte line per random operation, measured alone on the profiling machine) and buffers F_k
 * (bytes) the profile records. They are placed on one pressure axis,
 *     π = G / G_ref + F / F_ref,   G_ref = max G_k, F_ref = max F_k,
 * made monotone in k (running maximum), and a block's level is π of the *other* running blocks —
 * their summed traffic (bytes ÷ latency of their layers) and summed footprints — mapped through
 * the calibration points (0, 0), (π_1, 1) … (π_4, 4) by linear interpolation; beyond the heaviest
 * measured co-runner the level stays 4, because no figure exists there. The block's latency at
 * that (fractional) level comes from its own measured per-level figures (model-table.ts).
 *
 * So the effect of a level is always this machine's measurement; what is modelled is which level
 * a given mix of co-runners amounts to. Without calibration data (e.g. the artifact's profile,
 * which has no levels) every block runs at level 0, and the output says so. Pure.
 */
import type { ProfileLevel } from '../schedule/profile.js';

export interface InterferenceModel {
  /** Continuous level for co-runners moving `gbps` in total with `footprintBytes` of buffers. */
  levelFor(gbps: number, footprintBytes: number): number;
  readonly calibrated: boolean;
  readonly points: readonly { readonly level: number; readonly pressure: number; readonly gbps: number; readonly bytes: number }[];
  readonly gRef: number;
  readonly fRef: number;
  readonly description: string;
}

export const NO_INTERFERENCE: InterferenceModel = {
  levelFor: () => 0, calibrated: false, points: [], gRef: 0, fRef: 0,
  description: 'no interference calibration (no measured noise levels in the profiles): every block runs at level 0',
};

export function calibrateInterference(levels: readonly ProfileLevel[], from: string): InterferenceModel {
  const usable = levels.filter((l) => l.level > 0 && l.coRunnerGBps !== null && l.coRunnerBytes !== null)
    .sort((a, b) => a.level - b.level);
  if (usable.length === 0) return NO_INTERFERENCE;
  const gRef = Math.max(1e-9, ...usable.map((l) => l.coRunnerGBps!));
  const fRef = Math.max(1, ...usable.map((l) => l.coRunnerBytes!));
  let running = 0;
  const points = usable.map((l) => {
    running = Math.max(running, l.coRunnerGBps! / gRef + l.coRunnerBytes! / fRef);
    return { level: l.level, pressure: running, gbps: l.coRunnerGBps!, bytes: l.coRunnerBytes! };
  });
  const xs = [0, ...points.map((p) => p.pressure)];
  const ys = [0, ...points.map((p) => p.level)];
  const top = ys[ys.length - 1]!;
  const levelFor = (gbps: number, footprintBytes: number): number => {
    const pi = gbps / gRef + footprintBytes / fRef;
    if (pi <= 0) return 0;
    for (let i = 1; i < xs.length; i++) {
      if (pi <= xs[i]!) {
        const span = xs[i]! - xs[i - 1]!;
        return span > 0 ? ys[i - 1]! + (ys[i]! - ys[i - 1]!) * (pi - xs[i - 1]!) / span : ys[i]!;
      }
    }
    return top;
  };
  const description = `levels calibrated from ${from}: ` + points.map((p) => `L${p.level} at π=${p.pressure.toFixed(3)} (${p.gbps.toFixed(1)} GB/s, ${(p.bytes / 2 ** 20).toFixed(0)} MiB)`).join(', ')
    + `; π = co-runners' GB/s / ${gRef.toFixed(1)} + their footprint / ${(fRef / 2 ** 20).toFixed(0)} MiB; capped at L${top}`;
  return { levelFor, calibrated: true, points, gRef, fRef, description };
}
