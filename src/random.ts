/**
 * veltair's one seeded PRNG, mulberry32: tiny, fast, and the same sequence for a seed on every
 * machine — schedules sampled by the tuner, zoo weights, benchmark inputs and test data all come
 * from it, so every one of them is reproducible without being committed. Not for anything secret.
 */

/** A bare uniform [0, 1) stream (what mulberry32 returns). */
export type Uniform = () => number;

/** A uniform [0, 1) generator for `seed`. */
export function mulberry32(seed: number): Uniform {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  /** Standard normal N(0, 1) (Box–Muller). */
  normal(): number;
}

export function seededRng(seed: number): Rng {
  const next = mulberry32(seed);
  // Box-Muller yields normals in pairs; keep the second for the next call.
  let spare: number | undefined;
  const normal = (): number => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    const u1 = 1 - next(); // (0, 1]: log stays finite
    const u2 = next();
    const radius = Math.sqrt(-2 * Math.log(u1));
    spare = radius * Math.sin(2 * Math.PI * u2);
    return radius * Math.cos(2 * Math.PI * u2);
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!,
    normal,
  };
}

/**
 * `count` floats uniform in [lo, hi) for `seed`: the inputs benchmarks feed both veltair and
 * ONNX Runtime's child process (which must generate the very same values).
 */
export function seededFloats(count: number, seed: number, lo = -0.5, hi = 0.5): Float32Array {
  const next = mulberry32(seed);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = lo + (hi - lo) * next();
  return out;
}
