/**
 * Inputs for timing a whole model: seeded, deterministic values of each model input's dtype and
 * shape, generated the same way in the veltair process and in ONNX Runtime's child, so both run the
 * same data. Integer inputs are zeros: valid indices for any gather and harmless as masks.
 */
import type { ManifestTensorInfo } from '../bundle/manifest.js';
import { userError, quoteForMessage } from '../errors.js';
import { allocateTensor, type TensorData } from '../runtime/native-bridge.js';
import { seededFloats } from '../random.js';

const DTYPE_BYTES: Readonly<Record<string, number>> = {
  float32: 4,
  float64: 8,
  int32: 4,
  int64: 8,
  int8: 1,
  uint8: 1,
  bool: 1,
  int16: 2,
  uint16: 2,
};

export function modelFeeds(inputs: readonly ManifestTensorInfo[]): TensorData[] {
  return inputs.map((t, i) => {
    const count = t.shape.reduce((a, b) => a * b, 1);
    const bytes = DTYPE_BYTES[t.dtype];
    if (bytes === undefined) {
      throw userError(
        'BAD_BUNDLE',
        `model input ${quoteForMessage(t.name)} has dtype ${t.dtype}, which the benchmark cannot feed`,
        'benchmark a model whose inputs are float or integer tensors',
      );
    }
    if (t.dtype === 'float32') return seededFloats(count, 100 + i);
    if (t.dtype === 'float64') return Float64Array.from(seededFloats(count, 100 + i));
    return allocateTensor(t.dtype, count * bytes);
  });
}
