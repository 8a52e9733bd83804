/**
 * The KServe v2 / Triton HTTP front end (fastify): health, server and model metadata, model
 * readiness, inference (JSON tensors and the binary tensor data extension) and Prometheus
 * /metrics. Every failure is an answer — 400 for a bad request (saying what was expected), 404 for
 * an unknown model or route, 413 for a body over the limit, 503 with Retry-After when a queue is
 * full or the server drains — and never takes the server down. Nothing a request sends is used as
 * a path; model names are looked up in the served set. Connections are bounded and closed so the
 * client gets its answer (connections.ts); SIGTERM drains without losing a request (drain.ts).
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { isVeltairError } from '../errors.js';
import type { HostTensor } from '../runtime/host-tensor.js';
import { VERSION } from '../version.js';
import type { Backend, ServedModel } from './backend.js';
import { Connections } from './connections.js';
import { runDrain, type DrainReport } from './drain.js';
import { badRequest, notFound, ServeError, unavailable } from './errors.js';
import type { ServeLimits } from './limits.js';
import type { ServerMetrics } from './metrics.js';
import { parseInferRequest } from './protocol.js';
import { decodeInput, encodeOutput, v2Datatype, type WireOutput } from './tensors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** process.hrtime.bigint() when the request's headers were parsed (0n before). */
    receivedNs: bigint;
  }
}
export interface HttpOptions {
  readonly backend: Backend;
  readonly metrics: ServerMetrics;
  /** Largest request body accepted (bytes). */
  readonly bodyLimit: number;
  readonly limits: ServeLimits;
}

export interface ServerHandle {
  readonly app: FastifyInstance;
  /** Stop admitting requests (503), answer every request sent so far, then close (drain.ts); `hurry` settling cuts it short. */
  drain(hurry?: Promise<unknown>): Promise<DrainReport>;
}

/** Seconds a client told 503 by a draining server should wait: long enough for a load balancer to have moved on. */
const DRAIN_RETRY_AFTER_S = 5;

const tensorMeta = (t: { name: string; dtype: Parameters<typeof v2Datatype>[0]; shape: readonly number[] }) => ({
  name: t.name,
  datatype: v2Datatype(t.dtype),
  shape: [...t.shape],
});

function modelMetadata(m: ServedModel) {
  return {
    name: m.name,
    versions: ['1'],
    platform: m.platform,
    inputs: m.inputs.map(tensorMeta),
    outputs: m.outputs.map(tensorMeta),
    // Not part of the v2 metadata object; clients ignore it, `veltair load` reads the model's QoS from it.
    parameters: { qos_ms: Number(m.qosMs.toFixed(3)) },
  };
}

const listOf = (ts: readonly { name: string }[]) => ts.map((t) => JSON.stringify(t.name)).join(', ');

function feedsFor(model: ServedModel, body: Uint8Array, headerLength: string | undefined) {
  const parsed = parseInferRequest(body, headerLength);
  const byName = new Map(model.inputs.map((t) => [t.name, t]));
  const feeds: Record<string, HostTensor> = {};
  parsed.request.inputs.forEach((input, i) => {
    const expected = byName.get(input.name);
    if (!expected)
      throw badRequest(
        `model ${JSON.stringify(model.name)} has no input ${JSON.stringify(input.name)}; its inputs are ${listOf(model.inputs)}`,
      );
    feeds[input.name] = decodeInput(input, expected, parsed.binaries[i]);
  });
  const missing = model.inputs.filter((t) => !(t.name in feeds));
  if (missing.length > 0)
    throw badRequest(`input ${listOf(missing)} is missing; model ${JSON.stringify(model.name)} takes ${listOf(model.inputs)}`);
  const known = new Set(model.outputs.map((o) => o.name));
  const requested = parsed.request.outputs?.map((o) => o.name) ?? model.outputs.map((o) => o.name);
  const unknown = requested.find((n) => !known.has(n));
  if (unknown !== undefined) {
    throw badRequest(
      `model ${JSON.stringify(model.name)} has no output ${JSON.stringify(unknown)}; its outputs are ${listOf(model.outputs)}`,
    );
  }
  return { feeds, requested, id: parsed.request.id, binaryOutput: parsed.binaryOutput };
}

function sendError(reply: FastifyReply, e: ServeError): FastifyReply {
  if (e.retryAfterSeconds !== undefined) void reply.header('Retry-After', String(Math.max(1, Math.ceil(e.retryAfterSeconds))));
  return reply.code(e.status).send({ error: e.message });
}

/** Any failure as a ServeError: ours as they are, the runtime's verdict on input values as 400, anything else 500 (logged). */
function asServeError(e: unknown): ServeError | undefined {
  if (e instanceof ServeError) return e;
  if (isVeltairError(e) && e.code === 'BAD_INPUT') return badRequest(`${e.message} (${e.hint})`);
  return undefined;
}

export function buildServer(o: HttpOptions): ServerHandle {
  const connections = new Connections(o.limits, o.metrics);
  // The server is ours (connections.ts) and so is its shutdown: fastify's close would answer 503 before reading a body.
  const app = Fastify({
    logger: false,
    bodyLimit: o.bodyLimit,
    serverFactory: connections.createServer,
    clientErrorHandler: connections.clientError,
    forceCloseConnections: false,
    return503OnClosing: false,
  });
  const models = new Map(o.backend.models.map((m) => [m.name, m]));
  let draining = false;

  // Inference bodies are parsed by protocol.ts (JSON header + binary tail), never by fastify.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ['application/json', 'application/octet-stream'],
    { parseAs: 'buffer', bodyLimit: o.bodyLimit },
    (_req, body, done) => done(null, body),
  );
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ error: `no route ${req.method} ${req.url.slice(0, 200)}` });
  });
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, _req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) return reply.code(413).send({ error: `the request body is larger than ${o.bodyLimit} bytes` });
    if (status === 415)
      return reply.code(415).send({ error: 'send Content-Type application/json (or application/octet-stream with binary tensors)' });
    if (status >= 400 && status < 500) return reply.code(status).send({ error: err.message.slice(0, 300) });
    return reply.code(500).send({ error: 'internal error' });
  });

  const model = (name: string) => {
    const m = models.get(name);
    if (!m) throw notFound(`model ${JSON.stringify(name.slice(0, 128))} is not served here; models: ${listOf([...models.values()])}`);
    return m;
  };
  const route =
    <P>(handler: (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => Promise<unknown> | unknown) =>
    async (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      try {
        return await handler(req, reply);
      } catch (e) {
        const se = asServeError(e);
        if (se) return sendError(reply, se);
        app.log.error(e);
        return reply.code(500).send({ error: 'internal error' });
      }
    };

  // An inference's server time starts when its headers are in, so reading the body (600 KB for an ImageNet tensor) counts
  // as the server's front end, not as time outside the server.
  app.decorateRequest('receivedNs', 0n);
  app.addHook('onRequest', async (req) => {
    req.receivedNs = process.hrtime.bigint();
  });

  // While draining, every answer closes its connection: a keep-alive socket busy when the drain
  // began would otherwise hold the server open until its idle timeout.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (draining) void reply.header('Connection', 'close');
    return payload;
  });

  // Every answer to an inference of a served model is counted, 400s and 503s included.
  app.addHook('onResponse', async (req, reply) => {
    const name = (req.params as { name?: string } | undefined)?.name;
    if (req.method === 'POST' && name !== undefined && models.has(name) && req.url.endsWith('/infer')) {
      o.metrics.requests.inc({ model: name, code: String(reply.statusCode) });
    }
  });

  app.get('/v2/health/live', async () => ({ live: true }));
  app.get('/v2/health/ready', async (_req, reply) => (draining ? reply.code(503).send({ ready: false }) : { ready: true }));
  app.get('/v2', async () => ({ name: 'veltair', version: VERSION, extensions: ['binary_tensor_data'] }));
  type ModelParams = { name: string; version?: string };
  const versionOk = (p: ModelParams) => {
    if (p.version !== undefined && p.version !== '1') throw notFound(`model ${JSON.stringify(p.name)} has version "1" only`);
  };
  for (const prefix of ['/v2/models/:name', '/v2/models/:name/versions/:version']) {
    app.get(
      prefix,
      route<ModelParams>((req) => {
        versionOk(req.params);
        return modelMetadata(model(req.params.name));
      }),
    );
    app.get(
      `${prefix}/ready`,
      route<ModelParams>((req, reply) => {
        versionOk(req.params);
        const m = model(req.params.name);
        return draining ? reply.code(503).send({ name: m.name, ready: false }) : { name: m.name, ready: true };
      }),
    );
    app.post(
      `${prefix}/infer`,
      route<ModelParams>(async (req, reply) => {
        versionOk(req.params);
        const m = model(req.params.name);
        // Reached only once the body is read in full: a 503 here leaves nothing unread to reset the connection.
        if (draining) throw unavailable('the server is shutting down', DRAIN_RETRY_AFTER_S);
        if (!Buffer.isBuffer(req.body)) throw badRequest('the request has no body; send a KServe v2 inference request');
        const start = req.receivedNs || process.hrtime.bigint();
        const header = req.headers['inference-header-content-length'];
        const parsed = feedsFor(m, req.body, Array.isArray(header) ? header[0] : header);
        const outcome = await o.backend.infer(m.name, parsed.feeds);
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        o.metrics.latency.observe({ model: m.name }, seconds);
        if (seconds * 1000 > m.qosMs) o.metrics.qosViolations.inc({ model: m.name });
        const outs: WireOutput[] = parsed.requested.map((n) => encodeOutput(n, outcome.outputs[n]!, parsed.binaryOutput(n)));
        const head = {
          model_name: m.name,
          model_version: '1',
          ...(parsed.id !== undefined ? { id: parsed.id } : {}),
          parameters: { ...outcome.parameters, server_ms: Number((seconds * 1000).toFixed(3)) },
          outputs: outs.map((x) => x.json),
        };
        const binaries = outs.filter((x) => x.binary !== undefined).map((x) => x.binary!);
        if (binaries.length === 0) return head;
        const json = Buffer.from(JSON.stringify(head));
        return reply
          .header('Content-Type', 'application/octet-stream')
          .header('Inference-Header-Content-Length', String(json.byteLength))
          .send(Buffer.concat([json, ...binaries]));
      }),
    );
  }
  app.get('/metrics', async (_req, reply) =>
    reply.header('Content-Type', o.metrics.registry.contentType).send(await o.metrics.registry.metrics()),
  );

  return {
    app,
    async drain(hurry?: Promise<unknown>) {
      const report = await runDrain(
        {
          beginDraining: () => {
            draining = true;
          },
          pendingAccepts: () => connections.pendingAccepts(),
          stopListening: () => connections.stopListening(),
          closeIdle: () => connections.closeIdle(),
          destroyAll: () => connections.destroyAll(),
          closeBackend: () => o.backend.close(),
        },
        { graceMs: o.limits.drainGraceMs, timeoutMs: o.limits.drainTimeoutMs, ...(hurry ? { hurry } : {}) },
      );
      if (report.connectionsCut > 0) o.metrics.timeouts.inc({ kind: 'drain' }, report.connectionsCut);
      connections.dispose();
      await app.close();
      return report;
    },
  };
}
