/**
 * Weight initialisers for the zoo over veltair's seeded PRNG (src/random.ts): the same seed gives
 * the same bytes on every machine, so a zoo file is reproducible without being committed; its
 * quality is ample for initialising weights (plausible magnitudes, not cryptographic randomness).
 */
import type { Rng } from '../random.js';

/** `count` samples of N(mean, std²). */
export function normalArray(rng: Rng, count: number, std: number, mean = 0): Float32Array {
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = mean + std * rng.normal();
  return out;
}

/** `count` samples uniform in [lo, hi). */
export function uniformArray(rng: Rng, count: number, lo: number, hi: number): Float32Array {
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = lo + (hi - lo) * rng.next();
  return out;
}

/** He (Kaiming) normal: std = √(2 / fan_in), which keeps activation variance steady through ReLUs. */
export function heNormal(rng: Rng, count: number, fanIn: number): Float32Array {
  return normalArray(rng, count, Math.sqrt(2 / fanIn));
}
