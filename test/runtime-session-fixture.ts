/**
 * Shared by the runtime session, `veltair run`, zoo-correctness and node-test files: seeded inputs,
 * ONNX Runtime as the reference, and the comparison rule every correctness check uses —
 *   |ours − ref| ≤ atol + rtol·|ref|, rtol = 1e-3, atol = 1e-4 · max|ref| over that output
 * (atol scaled to the output's range, so a logit vector in the hundreds and a probability vector
 * are held to the same relative standard). Also tiny .npy writers for CLI tests.
 */
import * as ort from 'onnxruntime-node';
import { seeded } from './runtime-harness.js';
import type { HostTensor, TensorData } from '../src/runtime/host-tensor.js';
import type { TensorInfo } from '../src/runtime/feeds.js';

export const RTOL = 1e-3;
export const ATOL_SCALE = 1e-4;

/** Deterministic values in [lo, hi) (veltair's one seeded PRNG), as float32. */
export const seededFloats = (count: number, seed: number, lo = -1, hi = 1): Float32Array => seeded(count, seed, lo, hi);

export const count = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** A seeded feed for every input: floats in [-1, 1), integers in [0, 8), bools alternating. */
export function seededFeeds(inputs: readonly TensorInfo[], seed = 7): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  inputs.forEach((t, k) => {
    const f = seededFloats(count(t.shape), seed + k);
    let data: TensorData;
    if (t.dtype === 'float32') data = f;
    else if (t.dtype === 'int64') data = BigInt64Array.from(f, (v) => BigInt(Math.floor((v + 1) * 4)));
    else if (t.dtype === 'int32') data = Int32Array.from(f, (v) => Math.floor((v + 1) * 4));
    else if (t.dtype === 'bool') data = Uint8Array.from(f, (v) => (v > 0 ? 1 : 0));
    else throw new Error(`no seeded feed for ${t.dtype}`);
    out[t.name] = { dtype: t.dtype, shape: t.shape, data };
  });
  return out;
}

export async function ortOutputs(
  model: string | Uint8Array,
  feeds: Record<string, HostTensor>,
  threads = 1,
): Promise<Record<string, HostTensor>> {
  const session =
    typeof model === 'string'
      ? await ort.InferenceSession.create(model, { intraOpNumThreads: threads, interOpNumThreads: 1 })
      : await ort.InferenceSession.create(model, { intraOpNumThreads: threads, interOpNumThreads: 1 });
  try {
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const [name, t] of Object.entries(feeds))
      ortFeeds[name] = new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, [...t.shape]);
    const r = await session.run(ortFeeds);
    const out: Record<string, HostTensor> = {};
    for (const [name, t] of Object.entries(r))
      out[name] = { dtype: t.type as HostTensor['dtype'], shape: [...t.dims], data: t.data as TensorData };
    return out;
  } finally {
    await session.release();
  }
}

export interface Comparison {
  readonly name: string;
  readonly elements: number;
  readonly maxAbs: number;
  /** Largest |ours − ref| / |ref| over elements with |ref| > atol (relative error where it means something). */
  readonly maxRel: number;
  readonly atol: number;
  /** Elements outside atol + rtol·|ref| (NaN against non-NaN counts). */
  readonly bad: number;
  readonly firstBad?: string;
}

export function compareTensors(
  name: string,
  ours: TensorData,
  ref: ArrayLike<number | bigint>,
  rtol = RTOL,
  atolScale = ATOL_SCALE,
): Comparison {
  const n = ref.length;
  if (ours.length !== n)
    return { name, elements: n, maxAbs: Infinity, maxRel: Infinity, atol: 0, bad: n, firstBad: `length ${ours.length} vs ${n}` };
  let peak = 0;
  for (let i = 0; i < n; i++) {
    const r = Math.abs(Number(ref[i]!));
    if (r > peak && Number.isFinite(r)) peak = r;
  }
  const atol = atolScale * peak;
  let maxAbs = 0,
    maxRel = 0,
    bad = 0;
  let firstBad: string | undefined;
  for (let i = 0; i < n; i++) {
    const a = Number(ours[i]!),
      e = Number(ref[i]!);
    if (Number.isNaN(a) && Number.isNaN(e)) continue;
    if (a === e) continue;
    const d = Math.abs(a - e);
    if (!(d <= atol + rtol * Math.abs(e))) {
      bad++;
      firstBad ??= `[${i}] ${a} vs ${e}`;
    }
    if (d > maxAbs || Number.isNaN(d)) maxAbs = Number.isNaN(d) ? Infinity : d;
    if (Math.abs(e) > atol) maxRel = Math.max(maxRel, d / Math.abs(e));
  }
  return { name, elements: n, maxAbs, maxRel, atol, bad, ...(firstBad ? { firstBad } : {}) };
}

export const describeComparison = (c: Comparison) =>
  `${c.name}: ${c.elements} elements, max abs ${c.maxAbs.toExponential(2)}, max rel ${c.maxRel.toExponential(2)} ` +
  `(atol ${c.atol.toExponential(2)}), ${c.bad} outside tolerance${c.firstBad ? ` (first ${c.firstBad})` : ''}`;
