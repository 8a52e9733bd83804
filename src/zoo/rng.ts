/**
 * Seeded random numbers for zoo weights. The same seed gives the same bytes on every machine, so a
 * zoo file is reproducible without being committed. mulberry32 is tiny and fast; its quality is
 * ample for initialising weights (we need plausible magnitudes, not cryptographic randomness).
 */
export interface Rng {
  /** Uniform in [0, 1). */
  uniform(): number;
  /** Standard normal N(0, 1). */
  normal(): number;
}

export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  const uniform = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  // Box-Muller yields normals in pairs; keep the second for the next call.
  let spare: number | undefined;
  const normal = (): number => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    const u1 = 1 - uniform(); // (0, 1]: log stays finite
    const u2 = uniform();
    const radius = Math.sqrt(-2 * Math.log(u1));
    spare = radius * Math.sin(2 * Math.PI * u2);
    return radius * Math.cos(2 * Math.PI * u2);
  };
  return { uniform, normal };
}

/** `count` samples of N(mean, std²). */
export function normalArray(rng: Rng, count: number, std: number, mean = 0): Float32Array {
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = mean + std * rng.normal();
  return out;
}

/** `count` samples uniform in [lo, hi). */
export function uniformArray(rng: Rng, count: number, lo: number, hi: number): Float32Array {
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = lo + (hi - lo) * rng.uniform();
  return out;
}

/** He (Kaiming) normal: std = √(2 / fan_in), which keeps activation variance steady through ReLUs. */
export function heNormal(rng: Rng, count: number, fanIn: number): Float32Array {
  return normalArray(rng, count, Math.sqrt(2 / fanIn));
}
