/**
 * What the HTTP front end serves from: a set of models and an `infer` that runs one request. The
 * veltair backend (dispatcher.ts) drives the scheduler over sessions; the ONNX Runtime baseline
 * (src/ort/serve-backend.ts) answers first come first served from InferenceSessions — the same
 * front end, so a comparison measures the backends and nothing else.
 */
import type { TensorInfo } from '../runtime/feeds.js';
import type { HostTensor } from '../runtime/host-tensor.js';

export interface ServedModel {
  readonly name: string;
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  /** Latency target per request (ms). */
  readonly qosMs: number;
  /** v2 metadata `platform`. */
  readonly platform: string;
}

export interface InferOutcome {
  readonly outputs: Readonly<Record<string, HostTensor>>;
  /** Response parameters: how the request was run (versions, level, blocks, queue time…). */
  readonly parameters: Readonly<Record<string, string | number | boolean>>;
}

export interface Backend {
  /** 'veltair' or the baseline's name, for the server metadata. */
  readonly name: string;
  readonly models: readonly ServedModel[];
  /** Run one request. Rejects with a ServeError (503 + Retry-After) when the model's queue is full. */
  infer(model: string, feeds: Readonly<Record<string, HostTensor>>): Promise<InferOutcome>;
  /** Requests admitted and not answered yet. */
  inFlight(): number;
  /** After every in-flight request was answered: release sessions and cores. */
  close(): Promise<void>;
}
