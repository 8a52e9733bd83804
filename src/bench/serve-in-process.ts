/**
 * serve-bench's in-process transport (`--transport http,in-process`): an arm's backend built in this
 * process by the same setup `veltair serve` uses (setupDispatcher for veltair's policies,
 * createOrtBackend for `ort` and `ort-instances`) and called directly, backend.infer on tensors
 * made once, with the same seeded arrivals, judgement and noise record as over HTTP. As LoadGen
 * calls its system under test through an API, this separates scheduling from the HTTP front end.
 * What else differs from HTTP: this process is not under taskset nor the arm's malloc tunables
 * (the dispatcher pins each block to the arm's cores itself), and the load generator shares its
 * event loop with the backend. `ort-pinned` (one process per model) has no in-process form.
 */
import type { DType } from '../onnx/model.js';
import type { HostTensor, TensorData } from '../runtime/host-tensor.js';
import type { Backend } from '../serve/backend.js';
import { resolveModels } from '../serve/config.js';
import { ServeError } from '../serve/errors.js';
import { createMetrics } from '../serve/metrics.js';
import { parsePolicy } from '../schedule/policies.js';
import { seededFloats } from '../random.js';
import type { Sender } from '../load/probe.js';
import { isOrt, writeConfig, type ArmContext } from './serve-arms.js';

export const TRANSPORTS = ['http', 'in-process'] as const;
export type Transport = (typeof TRANSPORTS)[number];

export const hasInProcessForm = (kind: string) => kind !== 'ort-pinned';

const ZEROS: Readonly<Partial<Record<DType, (n: number) => TensorData>>> = {
  int64: (n) => new BigInt64Array(n),
  int32: (n) => new Int32Array(n),
  int16: (n) => new Int16Array(n),
  int8: (n) => new Int8Array(n),
  uint16: (n) => new Uint16Array(n),
  uint8: (n) => new Uint8Array(n),
  bool: (n) => new Uint8Array(n),
};

/** The seeded feeds of one model, as requestFor fills them for HTTP: floats uniform in [-1, 1), integers and booleans zero. */
export function seededFeeds(
  inputs: readonly { name: string; dtype: DType; shape: readonly number[] }[],
  seed: number,
): Record<string, HostTensor> {
  return Object.fromEntries(
    inputs.map((t, j) => {
      const n = t.shape.reduce((a, b) => a * b, 1);
      const floats = seededFloats(n, seed + j, -1, 1);
      const data: TensorData =
        t.dtype === 'float32'
          ? floats
          : t.dtype === 'float64'
            ? Float64Array.from(floats)
            : (ZEROS[t.dtype] ?? ((k: number) => new Float32Array(k)))(n);
      return [t.name, { dtype: t.dtype, shape: [...t.shape], data }];
    }),
  );
}

/** A backend call's outcome as the probe counts it: 200, 503 for a full queue, 0 for any other failure. */
export const statusOf = (e: unknown) => (e instanceof ServeError && e.status === 503 ? 503 : 0);

export interface InProcessArm {
  readonly send: Sender;
  readonly backend: Backend;
  close(): Promise<void>;
}

/** Build the arm's backend here and a Sender that calls it (model i of ctx.names, its seeded feeds). */
export async function startInProcessArm(kind: string, ctx: ArmContext, seed: number): Promise<InProcessArm> {
  const all = ctx.names.map((_, i) => i);
  const cpus = [...ctx.cores];
  let backend: Backend;
  if (isOrt(kind)) {
    const extra = kind === 'ort-instances' ? { replicas: ctx.cores.length } : {};
    const models = resolveModels({ bundles: [], config: writeConfig(ctx, `in-process-${kind}.json`, all, extra) });
    // Imported here: an HTTP-only run never loads ONNX Runtime or the kernels into the load generator's process.
    const { createOrtBackend } = await import('../ort/serve-backend.js');
    const { DEFAULT_BLOCK_NICE } = await import('../serve/setup.js');
    backend = (await createOrtBackend({ models, cpus, qosMultiple: 4, blockNice: DEFAULT_BLOCK_NICE })).backend;
  } else {
    const models = resolveModels({ bundles: [], config: writeConfig(ctx, `in-process-${kind}.json`, all) });
    const { setupDispatcher } = await import('../serve/setup.js');
    backend = (await setupDispatcher({ models, policy: parsePolicy(kind), cpus, metrics: createMetrics(), qosMultiple: 4 })).dispatcher;
  }
  const feeds = ctx.names.map((name, i) => {
    const served = backend.models.find((m) => m.name === name)!;
    return seededFeeds(served.inputs, seed + i * 101);
  });
  const send: Sender = (i) => backend.infer(ctx.names[i]!, feeds[i]!).then(() => 200, statusOf);
  return { send, backend, close: () => backend.close() };
}
