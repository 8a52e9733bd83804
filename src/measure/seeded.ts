/**
 * Deterministic benchmark data, free of any ONNX Runtime import so that both the veltair process
 * and ONNX Runtime's child can generate the same inputs.
 */

/** Uniform in [-0.5, 0.5), from a 32-bit counter hash (deterministic per seed). */
export function seededFloats(count: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let s = seed >>> 0;
  for (let i = 0; i < count; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    out[i] = ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  }
  return out;
}
