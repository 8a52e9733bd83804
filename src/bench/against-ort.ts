/**
 * A compiled bundle against ONNX Runtime on one seeded input (uniform in [-1, 1), seed 7): the largest
 * absolute difference over the first output and the largest reference magnitude, at each thread
 * count. Used by bench/torchvision/against-ort.mjs and by the coverage run's check (coverage.ts).
 */
import { loadModel } from '../onnx/load.js';
import { seededFloats } from '../random.js';

export interface OrtComparison {
  readonly threads: number;
  readonly maxDiff: number;
  readonly maxRef: number;
  /** max − min of the reference: 0 means a constant output (a zeroed head), which any runtime would match. */
  readonly refSpread: number;
}

export async function compareWithOrt(model: string, bundle: string, threadCounts: readonly number[]): Promise<OrtComparison[]> {
  const ort = await import('onnxruntime-node');
  const { loadBundle } = await import('../runtime/session.js');
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const name = session.inputNames[0]!;
  const inferred = await loadModel(model);
  const shape = [...(inferred.inputs.find((i) => i.name === name)?.shape ?? [1, 3, 224, 224])];
  const input = seededFloats(
    shape.reduce((a, b) => a * b, 1),
    7,
    -1,
    1,
  );
  const reference = (await session.run({ [name]: new ort.Tensor('float32', input, shape) }))[session.outputNames[0]!]!.data as Float32Array;
  const out: OrtComparison[] = [];
  for (const threads of threadCounts) {
    const s = await loadBundle(bundle, { threads });
    try {
      const ours = Object.values(await s.run({ [name]: input }))[0]!.data as Float32Array;
      let maxDiff = 0,
        maxRef = 0,
        lo = Infinity,
        hi = -Infinity;
      for (let i = 0; i < reference.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(ours[i]! - reference[i]!));
        maxRef = Math.max(maxRef, Math.abs(reference[i]!));
        lo = Math.min(lo, reference[i]!);
        hi = Math.max(hi, reference[i]!);
      }
      out.push({ threads, maxDiff, maxRef, refSpread: hi - lo });
    } finally {
      s.close();
    }
  }
  return out;
}
