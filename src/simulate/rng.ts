/**
 * Seeded randomness for the simulator: mulberry32 streams (32-bit state, fast, good enough for
 * arrival processes) and exponential inter-arrival times. One stream per model, seeded from the
 * run's seed and the model's position, so every policy in a run sees the same arrivals.
 */
export type Rng = () => number;

export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A stream for (seed, index): the pair mixed so neighbouring seeds give unrelated streams. */
export function streamFor(seed: number, index: number): Rng {
  let h = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  return mulberry32(h);
}

/** Exponential with the given rate (events per ms): the gap of a Poisson process. */
export function exponential(rng: Rng, ratePerMs: number): number {
  return -Math.log(1 - rng()) / ratePerMs;
}
