/**
 * The baseline a user would otherwise deploy, behind veltair's own HTTP front end: one ONNX
 * Runtime InferenceSession per model (all graph optimisations, intra-op threads = the server's
 * cores), requests answered first come first served, one at a time on the whole core set. Pinning
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

interface OrtModel {
  readonly served: ServedModel;
  readonly session: ort.InferenceSession;
  readonly maxQueue: number;
  queued: number;
}

async function modelFile(m: ModelConfig): Promise<string> {
  const bundle = await readBundle(m.bundle);
  const path = m.model ?? join(dirname(bundle.paths.dir), bundle.manifest.model.path);
  if (!existsSync(path)) {
    throw userError('BAD_ARGUMENT', `model ${quoteForMessage(m.name)}: ${quoteForMessage(path)} (the .onnx file for ONNX Runtime) does not exist`,
      'put the model the bundle was compiled from beside the bundle, or set "model" in the serve config');
  }
  if (createHash('sha256').update(readFileSync(path)).digest('hex') !== bundle.manifest.model.sha256) {
    throw userError('BAD_ARGUMENT', `${path} is not the model ${m.bundle} was compiled from (its sha256 differs)`, 'serve the same model on both backends');
  }
  return path;
}

const toHost = (t: ort.Tensor): HostTensor => ({ dtype: t.type as HostTensor['dtype'], shape: [...t.dims], data: t.data as HostTensor['data'] });

export async function createOrtBackend(o: { models: readonly ModelConfig[]; cpus: readonly number[]; qosMultiple: number }):
  Promise<{ backend: Backend; summaries: string[] }> {
  const models: OrtModel[] = [];
  const summaries: string[] = [];
  for (const m of o.models) {
    const bundle = await readBundle(m.bundle);
    const session = await ort.InferenceSession.create(await modelFile(m), {
      intraOpNumThreads: o.cpus.length, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
    });
    const inputs = bundle.manifest.model.inputs, outputs = bundle.manifest.model.outputs;
    let qosMs = m.qosMs;
    if (qosMs === undefined) {
      const feeds = Object.fromEntries(inputs.map((t) => [t.name, new ort.Tensor(t.dtype as 'float32',
        new Float32Array(t.shape.reduce((a, b) => a * b, 1)), [...t.shape])]));
      await session.run(feeds);
      const t0 = performance.now();
      for (let i = 0; i < 3; i++) await session.run(feeds);
      qosMs = o.qosMultiple * (performance.now() - t0) / 3;
    }
    models.push({ served: { name: m.name, inputs, outputs, qosMs, platform: 'onnxruntime' }, session, maxQueue: m.maxQueue, queued: 0 });
    const why = m.qosMs === undefined ? ` (${o.qosMultiple} × its quiet latency)` : '';
    summaries.push(`${m.name}: ONNX Runtime ${ort.env.versions.node ?? ''}, QoS ${qosMs.toFixed(2)} ms${why}`);
  }
  const byName = new Map(models.map((m) => [m.served.name, m]));
  let tail: Promise<unknown> = Promise.resolve();
  let inFlight = 0;
  const backend: Backend = {
    name: 'onnxruntime',
    models: models.map((m) => m.served),
    infer(name, feeds): Promise<InferOutcome> {
      const m = byName.get(name)!;
      if (m.queued >= m.maxQueue) return Promise.reject(unavailable(`model ${JSON.stringify(name)} has ${m.queued} requests in flight, its limit`, 1));
      m.queued++;
      inFlight++;
      const arrival = performance.now();
      const run = tail.then(async () => {
        const started = performance.now();
        const ortFeeds = Object.fromEntries(Object.entries(feeds)
          .map(([k, t]) => [k, new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, [...t.shape])]));
        const out = await m.session.run(ortFeeds);
        return {
          outputs: Object.fromEntries(Object.entries(out).map(([k, t]) => [k, toHost(t)])),
          parameters: { backend: 'onnxruntime', queue_ms: Number((started - arrival).toFixed(3)) },
        };
      });
      tail = run.catch(() => undefined);
      return run.finally(() => { m.queued--; inFlight--; });
    },
    inFlight: () => inFlight,
    async close() {
      await tail;
      for (const m of models) await m.session.release();
    },
  };
  return { backend, summaries };
}
