/**
 * One in-process ONNX Runtime session over a model's bytes: feed host tensors, get host tensors
 * back. `veltair quantize` calibrates through it (the model with its activations exposed as extra
 * outputs), and the tests run quantized models through it as the INT8 reference.
 */
import * as ort from 'onnxruntime-node';
import type { DType } from '../onnx/model.js';
import type { HostTensor } from '../runtime/host-tensor.js';

export interface OrtRunner {
  run(feeds: Readonly<Record<string, HostTensor>>, outputs?: readonly string[]): Promise<Record<string, HostTensor>>;
  readonly outputNames: readonly string[];
  close(): Promise<void>;
}

/** Single-threaded, all graph optimisations: the same session options as the layer baselines. */
export async function openOrtSession(bytes: Uint8Array, threads = 1): Promise<OrtRunner> {
  const session = await ort.InferenceSession.create(bytes, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  return {
    outputNames: session.outputNames,
    run: async (feeds, outputs) => {
      const ortFeeds = Object.fromEntries(
        Object.entries(feeds).map(([k, t]) => [k, new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, [...t.shape])]),
      );
      const res = outputs === undefined ? await session.run(ortFeeds) : await session.run(ortFeeds, [...outputs]);
      return Object.fromEntries(
        Object.entries(res).map(([k, t]) => [k, { dtype: t.type as DType, shape: [...t.dims], data: t.data as HostTensor['data'] }]),
      );
    },
    close: () => session.release(),
  };
}
