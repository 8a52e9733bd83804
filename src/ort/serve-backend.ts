/**
 * The baseline a user would otherwise deploy, behind veltair's own HTTP front end: one ONNX
 * Runtime InferenceSession per model (all graph optimisations, intra-op threads = the server's
 * cores, no spin-waiting), requests answered first come first served, one at a time on the whole core set.
 * A model whose config sets `replicas: N` is served instead by N instances sharing its queue, each
 * with cores/N intra-op threads (at least 1) in its own worker thread, as Triton's `count: N`
 * (ort-instances.ts); such models do not wait behind other models. Pinning
 * and glibc's malloc tunables are the launcher's business (src/bench/serve-bench.ts starts the
 * server under taskset with them), as for every ONNX Runtime baseline here.
 */
import { readFileSync, existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { readBundle } from '../bundle/read.js';
import { quoteForMessage, userError } from '../errors.js';
import type { HostTensor } from '../runtime/host-tensor.js';
import type { Backend, InferOutcome, ServedModel } from '../serve/backend.js';
import type { ModelConfig } from '../serve/config.js';
import { unavailable } from '../serve/errors.js';
import { startInstancePool, type InstancePool } from './instances.js';

interface OrtModel {
  readonly served: ServedModel;
  readonly session: ort.InferenceSession | null;
  /** Set when the model is served by instances (config `replicas`). */
  readonly pool: InstancePool | null;
  readonly maxQueue: number;
  queued: number;
}

async function modelFile(m: ModelConfig): Promise<string> {
  const bundle = await readBundle(m.bundle);
  const path = m.model ?? join(dirname(bundle.paths.dir), bundle.manifest.model.path);
  if (!existsSync(path)) {
    throw userError(
      'BAD_ARGUMENT',
      `model ${quoteForMessage(m.name)}: ${quoteForMessage(path)} (the .onnx file for ONNX Runtime) does not exist`,
      'put the model the bundle was compiled from beside the bundle, or set "model" in the serve config',
    );
  }
  if (createHash('sha256').update(readFileSync(path)).digest('hex') !== bundle.manifest.model.sha256) {
    throw userError(
      'BAD_ARGUMENT',
      `${path} is not the model ${m.bundle} was compiled from (its sha256 differs)`,
      'serve the same model on both backends',
    );
  }
  return path;
}

const toOrt = (feeds: Readonly<Record<string, HostTensor>>) =>
  Object.fromEntries(
    Object.entries(feeds).map(([k, t]) => [k, new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, [...t.shape])]),
  );

const toHost = (t: ort.Tensor): HostTensor => ({
  dtype: t.type as HostTensor['dtype'],
  shape: [...t.dims],
  data: t.data as HostTensor['data'],
});

export async function createOrtBackend(o: {
  models: readonly ModelConfig[];
  cpus: readonly number[];
  qosMultiple: number;
  blockNice: number;
}): Promise<{ backend: Backend; summaries: string[] }> {
  const models: OrtModel[] = [];
  const summaries: string[] = [];
  for (const m of o.models) {
    const bundle = await readBundle(m.bundle);
    const path = await modelFile(m);
    const pool =
      m.replicas === undefined
        ? null
        : await startInstancePool(path, m.replicas, Math.max(1, Math.floor(o.cpus.length / m.replicas)), o.blockNice);
    // No spinning: the intra-op threads share their cores with the server's own front end (and, on
    // a shared machine, with everyone else), and ORT's spin-waiting between runs takes those cores.
    const session = pool
      ? null
      : await ort.InferenceSession.create(path, {
          intraOpNumThreads: o.cpus.length,
          interOpNumThreads: 1,
          graphOptimizationLevel: 'all',
          executionMode: 'sequential',
          extra: { session: { intra_op: { allow_spinning: '0' } } },
        });
    const inputs = bundle.manifest.model.inputs,
      outputs = bundle.manifest.model.outputs;
    const runOnce = async (feeds: Record<string, HostTensor>) => (pool ? pool.run(feeds) : session!.run(toOrt(feeds)));
    let qosMs = m.qosMs;
    if (qosMs === undefined) {
      const feeds = Object.fromEntries(
        inputs.map((t) => [
          t.name,
          { dtype: t.dtype, shape: [...t.shape], data: new Float32Array(t.shape.reduce((a, b) => a * b, 1)) } as HostTensor,
        ]),
      );
      await runOnce(feeds);
      const t0 = performance.now();
      for (let i = 0; i < 3; i++) await runOnce(feeds);
      qosMs = (o.qosMultiple * (performance.now() - t0)) / 3;
    }
    models.push({
      served: { name: m.name, inputs, outputs, qosMs, platform: 'onnxruntime' },
      session,
      pool,
      maxQueue: m.maxQueue,
      queued: 0,
    });
    const why = m.qosMs === undefined ? ` (${o.qosMultiple} × its quiet latency)` : '';
    const how = pool ? `, ${pool.count} instances of ${pool.threads} thread(s)` : '';
    summaries.push(`${m.name}: ONNX Runtime ${ort.env.versions.node ?? ''}${how}, QoS ${qosMs.toFixed(2)} ms${why}`);
  }
  const byName = new Map(models.map((m) => [m.served.name, m]));
  let tail: Promise<unknown> = Promise.resolve();
  let inFlight = 0;
  const backend: Backend = {
    name: 'onnxruntime',
    models: models.map((m) => m.served),
    infer(name, feeds): Promise<InferOutcome> {
      const m = byName.get(name)!;
      if (m.queued >= m.maxQueue)
        return Promise.reject(unavailable(`model ${JSON.stringify(name)} has ${m.queued} requests in flight, its limit`, 1));
      m.queued++;
      inFlight++;
      const arrival = performance.now();
      if (m.pool) {
        return m.pool
          .run(feeds)
          .then((outputs) => ({ outputs, parameters: { backend: 'onnxruntime', instances: m.pool!.count } }))
          .finally(() => {
            m.queued--;
            inFlight--;
          });
      }
      const run = tail.then(async () => {
        const started = performance.now();
        const out = await m.session!.run(toOrt(feeds));
        return {
          outputs: Object.fromEntries(Object.entries(out).map(([k, t]) => [k, toHost(t)])),
          parameters: { backend: 'onnxruntime', queue_ms: Number((started - arrival).toFixed(3)) },
        };
      });
      tail = run.catch(() => undefined);
      return run.finally(() => {
        m.queued--;
        inFlight--;
      });
    },
    inFlight: () => inFlight,
    async close() {
      await tail;
      for (const m of models) await (m.pool ? m.pool.close() : m.session!.release());
    },
  };
  return { backend, summaries };
}
