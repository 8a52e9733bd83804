/**
 * Seeded randomness for the simulator: one mulberry32 stream (the shared generator of
 * src/random.ts) per model, seeded from the run's seed and the model's position, so every policy
 * in a run sees the same arrivals; and exponential inter-arrival times.
 */
import { mulberry32, type Uniform } from '../random.js';

/** A stream for (seed, index): the pair mixed so neighbouring seeds give unrelated streams. */
export function streamFor(seed: number, index: number): Uniform {
  let h = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  return mulberry32(h);
}

/** Exponential with the given rate (events per ms): the gap of a Poisson process. */
export function exponential(rng: Uniform, ratePerMs: number): number {
  return -Math.log(1 - rng()) / ratePerMs;
}
