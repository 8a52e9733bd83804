/**
 * Everything `veltair profile` needs from the interference room and the toolchain, in one file:
 * which cores exist, which co-runner each level is, what it moves on its own, the L3 it is sized
 * from, and a bank of stopped co-runners switched around each measurement.
 */
import { detectCaches } from '../toolchain/caches.js';

export { availableCores } from '../toolchain/cpu.js';
export { levelSpec } from '../interference/levels.js';
export { openLevelBank, planCores, type LevelBank } from '../interference/bank.js';
export { profileCoRunners } from '../interference/co-runner-traffic.js';

/** The L3 size the co-runners are sized from, and where it came from. */
export async function readL3Bytes(): Promise<{ bytes: number; source: string }> {
  const c = await detectCaches();
  return { bytes: c.sizes.l3, source: c.sources.l3 };
}
