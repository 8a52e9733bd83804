/**
 * A co-runner's "profile": how much memory traffic each noise level moves on its own — what the
 * tenant-aware interference proxy takes as an input and what `veltair profile` records per level.
 */
import { startNoise } from './generator.js';
import type { NoiseSettings } from './levels.js';

/**
 * Each noisy level's co-runner alone for `seconds`: the bytes its own counters report moving per
 * second (stream reads + writes + one 64-byte line per random operation), in GB/s. This is the
 * co-runner's "profile" the tenant-aware model takes as an input.
 */
export async function profileCoRunners(
  levels: readonly number[],
  noiseCores: readonly number[],
  seconds = 1,
  settingsFor?: (level: number) => NoiseSettings | undefined,
): Promise<Map<number, number>> {
  const out = new Map<number, number>([[0, 0]]);
  for (const level of levels.filter((l) => l > 0)) {
    const settings = settingsFor?.(level);
    const h = await startNoise({ level, cores: noiseCores, seconds, ...(settings ? { settings } : {}) });
    const s = await h.finished;
    out.set(level, s.seconds > 0 ? (s.streamBytesRead + s.streamBytesWritten + s.randomOps * 64) / s.seconds / 1e9 : 0);
  }
  return out;
}
