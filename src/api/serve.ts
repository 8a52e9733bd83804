/**
 * `serve` for library users: the KServe v2 / Triton HTTP server of `veltair serve` over the
 * veltair scheduler, started in this process. The same steps as the command (src/cli/serve.ts):
 * resolve the models, build the dispatcher (profiles, QoS, trusted keys checked before any kernel
 * loads), listen. Binds 127.0.0.1 unless `host` says otherwise.
 */
import type { KeyObject } from 'node:crypto';
import { trustedKeyFrom } from '../bundle/sign.js';
import { userError } from '../errors.js';
import { parsePolicy } from '../schedule/policies.js';
import { resolveModels } from '../serve/config.js';
import { createMetrics } from '../serve/metrics.js';
import { setupDispatcher } from '../serve/setup.js';
import { startServer, type RunningServer } from '../serve/start.js';
import { availableCores, cgroupCpuLimit } from '../toolchain/cpu.js';

/** Options of {@link serve}; `veltair serve`'s flags, one field each. */
export interface ServeOptions {
  /** Bundle directories to serve (each model is named after its directory, without .bundle). */
  readonly bundles?: readonly string[];
  /** A model repository: every sub-directory holding a bundle (and an optional veltair-serve.json). */
  readonly repo?: string;
  /** Per-model settings file: {"models": {NAME: {bundle, qosMs, priority, maxQueue, replicas, profile}}}. */
  readonly config?: string;
  /** Address to bind (default 127.0.0.1; another address serves the network: put it behind your own access control). */
  readonly host?: string;
  /** TCP port (default 8000; 0: any free port, read it back from the returned `url`). */
  readonly port?: number;
  /** Scheduling policy: veltair (default), veltair-partition, veltair-sched, veltair-compile, fcfs, prema, layerwise or static:K. */
  readonly policy?: string;
  /** CPUs to serve on (default: every available one, capped by the cgroup's CPU limit). */
  readonly cpus?: readonly number[];
  /** QoS of a model with none configured: this many times its fastest quiet latency here (default 4). */
  readonly qosMultiple?: number;
  /** Largest request body accepted, in bytes (default 64 MiB). */
  readonly maxBodyBytes?: number;
  /** Serve only bundles one of these Ed25519 keys signed: KeyObjects or PEM text. */
  readonly trustedKeys?: readonly (KeyObject | string)[];
  /** Drain and stop on SIGTERM/SIGINT (default false: the embedding process decides; call `stop()`). */
  readonly signals?: boolean;
  /** Progress and per-model summaries (QoS, profile, requirements). */
  readonly onNote?: (message: string) => void;
}

const DEFAULT_BODY_LIMIT = 64 * 1024 * 1024;

/** Start serving; resolves once listening. The returned server's `stop()` drains requests in flight, then closes. */
export async function serve(o: ServeOptions): Promise<RunningServer> {
  const port = o.port ?? 8000;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw userError('BAD_ARGUMENT', `port ${JSON.stringify(port)} is not a port from 0 to 65535`, 'e.g. port: 8000 (0: any free port)');
  }
  const qosMultiple = o.qosMultiple ?? 4;
  if (!(qosMultiple >= 1 && qosMultiple <= 1000)) {
    throw userError('BAD_ARGUMENT', `qosMultiple ${JSON.stringify(qosMultiple)} is not a number from 1 to 1000`, 'e.g. qosMultiple: 4');
  }
  const policy = parsePolicy(o.policy ?? 'veltair');
  const trustedKeys = o.trustedKeys?.map((k) => trustedKeyFrom(k));
  const all = availableCores();
  const cpus = o.cpus ? [...o.cpus] : all.slice(0, Math.min(all.length, cgroupCpuLimit() ?? all.length));
  const models = resolveModels({
    bundles: o.bundles ?? [],
    ...(o.repo ? { repo: o.repo } : {}),
    ...(o.config ? { config: o.config } : {}),
  });
  const metrics = createMetrics();
  const say = o.onNote ?? (() => undefined);
  const setup = await setupDispatcher({
    models,
    policy,
    cpus,
    metrics,
    qosMultiple,
    onProgress: say,
    ...(trustedKeys ? { trustedKeys } : {}),
  });
  for (const s of setup.summaries) say(s);
  return startServer({
    backend: setup.dispatcher,
    metrics,
    host: o.host ?? '127.0.0.1',
    port,
    bodyLimit: o.maxBodyBytes ?? DEFAULT_BODY_LIMIT,
    signals: o.signals === true,
  });
}
