/**
 * One ONNX Runtime instance of `ort-instances` (ort-instances.ts), in its own worker thread:
 * onnxruntime-node runs a session synchronously on the calling thread (its `run` is a
 * setImmediate around a blocking call), so sessions in one thread never overlap; a worker each
 * lets N instances of a model run at once, as Triton's `count: N` instances do. The session has
 * the baseline's options (all graph optimisations, no spin-waiting) and `threads` intra-op threads.
 *
 * Messages in: `{ id, feeds: { name: { dtype, shape, data } } }`; out: `{ id, outputs }` or `{ id, error }`.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { loadRuntimeAddon } from '../runtime/native-bridge.js';

interface WireTensor {
  dtype: string;
  shape: number[];
  data: ArrayBufferView;
}
interface Job {
  id: number;
  feeds: Record<string, WireTensor>;
}

const { modelPath, threads, nice } = workerData as { modelPath: string; threads: number; nice: number };
// As veltair's block threads (serve/setup.ts DEFAULT_BLOCK_NICE): nicer than the server's event loop and batch, so
// that the front end is never queued behind an inference on shared cores, nor behind this instance when it is woken
// for a request. Both apply to this thread alone, and the session's intra-op threads, started below, inherit them.
if (nice > 0 && !(await backgroundThread(nice))) setPriority(0, nice);

/** This thread as veltair's block threads are (runtime addon); false where the addon cannot be built here. */
async function backgroundThread(n: number): Promise<boolean> {
  try {
    return (await loadRuntimeAddon()).setBackgroundThread(n);
  } catch {
    return false;
  }
}
const session = await ort.InferenceSession.create(modelPath, {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  extra: { session: { intra_op: { allow_spinning: '0' } } },
});
parentPort!.postMessage({ ready: true });
parentPort!.on('message', (job: Job | 'close') => {
  if (job === 'close') {
    void session.release().then(() => process.exit(0));
    return;
  }
  const feeds = Object.fromEntries(
    Object.entries(job.feeds).map(([k, t]) => [k, new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.shape)]),
  );
  session.run(feeds).then(
    (out) => {
      const outputs = Object.fromEntries(Object.entries(out).map(([k, t]) => [k, { dtype: t.type, shape: [...t.dims], data: t.data }]));
      const buffers = Object.values(outputs).map((t) => (t.data as ArrayBufferView).buffer as ArrayBuffer);
      parentPort!.postMessage({ id: job.id, outputs }, [...new Set(buffers)]);
    },
    (e: unknown) => parentPort!.postMessage({ id: job.id, error: e instanceof Error ? e.message : String(e) }),
  );
});
