/**
 * `ort-instances`: N ONNX Runtime instances of one model sharing that model's queue, as Triton's
 * instance group `count: N` deploys it on CPU — each instance a session with `threads` intra-op
 * threads in its own worker thread (instance-worker.ts says why a thread each), a request taken
 * by the first free instance, first come first served within the model. Different models' pools
 * never wait for each other.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { HostTensor } from '../runtime/host-tensor.js';

interface Pending {
  readonly feeds: Readonly<Record<string, HostTensor>>;
  readonly resolve: (o: Record<string, HostTensor>) => void;
  readonly reject: (e: unknown) => void;
}
interface Reply {
  id?: number;
  ready?: boolean;
  outputs?: Record<string, HostTensor>;
  error?: string;
}

export interface InstancePool {
  readonly count: number;
  readonly threads: number;
  run(feeds: Readonly<Record<string, HostTensor>>): Promise<Record<string, HostTensor>>;
  close(): Promise<void>;
}

const WORKER = fileURLToPath(new URL('./instance-worker.js', import.meta.url));

/** Start `count` instances of the model at `modelPath`; resolves once every one has its session. */
export async function startInstancePool(modelPath: string, count: number, threads: number, nice: number): Promise<InstancePool> {
  const workers = Array.from({ length: count }, () => new Worker(WORKER, { workerData: { modelPath, threads, nice } }));
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((res, rej) => {
          w.once('error', rej);
          w.once('message', (m: Reply) => {
            if (m.ready) res();
            else rej(new Error('an ONNX Runtime instance did not start'));
          });
        }),
    ),
  );
  const free = [...workers];
  const waiting: Pending[] = [];
  const inFlight = new Map<number, Pending>();
  let next = 0;
  const dispatch = () => {
    while (free.length > 0 && waiting.length > 0) {
      const w = free.pop()!;
      const p = waiting.shift()!;
      const id = next++;
      inFlight.set(id, p);
      // Copies: the request's tensors may be views into the HTTP body, which must stay whole.
      const feeds = Object.fromEntries(
        Object.entries(p.feeds).map(([k, t]) => [k, { dtype: t.dtype, shape: [...t.shape], data: t.data.slice() }]),
      );
      w.postMessage({ id, feeds });
    }
  };
  for (const w of workers) {
    w.on('message', (m: Reply) => {
      const p = m.id === undefined ? undefined : inFlight.get(m.id);
      if (!p) return;
      inFlight.delete(m.id!);
      free.push(w);
      if (m.error !== undefined) p.reject(new Error(`ONNX Runtime: ${m.error}`));
      else p.resolve(m.outputs!);
      dispatch();
    });
    w.on('error', (e) => {
      for (const p of inFlight.values()) p.reject(e);
      inFlight.clear();
    });
  }
  return {
    count,
    threads,
    run(feeds) {
      return new Promise((resolve, reject) => {
        waiting.push({ feeds, resolve, reject });
        dispatch();
      });
    },
    async close() {
      await Promise.all(
        workers.map(
          (w) =>
            new Promise<void>((res) => {
              w.once('exit', () => res());
              w.postMessage('close');
            }),
        ),
      );
    },
  };
}
