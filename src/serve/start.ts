/**
 * A server's life: listen (127.0.0.1 unless told otherwise), and on SIGTERM or SIGINT drain
 * (drain.ts: readiness and new requests 503 for the grace period, every request sent so far read
 * and answered, then close, all within the drain deadline), release the backend, resolve with the
 * drain's report. A second SIGTERM or SIGINT during the drain brings its deadline forward to that
 * moment: whatever is still open is cut off at once. The backend is given — veltair's dispatcher, or a baseline's — so every backend
 * is reached through the same front end.
 */
import type { Backend } from './backend.js';
import type { DrainReport } from './drain.js';
import { buildServer } from './http.js';
import { DEFAULT_LIMITS, type ServeLimits } from './limits.js';
import type { ServerMetrics } from './metrics.js';

export interface StartOptions {
  readonly backend: Backend;
  readonly metrics: ServerMetrics;
  readonly host: string;
  readonly port: number;
  readonly bodyLimit: number;
  /** Connection and drain bounds (limits.ts); any left out take their defaults. */
  readonly limits?: Partial<ServeLimits>;
  /** Handle SIGTERM/SIGINT (the CLI does; an embedding process may not want it). */
  readonly signals?: boolean;
}

export interface RunningServer {
  /** http://host:port of the bound socket (the real port when 0 was asked for). */
  readonly url: string;
  /** Resolves when the server has drained and closed (after a signal or stop()), saying whether the deadline cut anything short. */
  readonly closed: Promise<DrainReport>;
  stop(): Promise<DrainReport>;
}

export async function startServer(o: StartOptions): Promise<RunningServer> {
  const limits: ServeLimits = { ...DEFAULT_LIMITS, ...o.limits };
  const { app, drain } = buildServer({ backend: o.backend, metrics: o.metrics, bodyLimit: o.bodyLimit, limits });
  await app.ready();
  // Listened on here, not through fastify's listen: the drain owns the listening socket's close (drain.ts).
  await new Promise<void>((resolve, reject) => {
    app.server.once('error', reject);
    app.server.listen({ host: o.host, port: o.port }, () => {
      app.server.off('error', reject);
      resolve();
    });
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : o.port;
  let stopping: Promise<DrainReport> | undefined;
  let settle!: { resolve: (r: DrainReport) => void; reject: (e: unknown) => void };
  let hurry!: () => void;
  const hurried = new Promise<void>((r) => {
    hurry = r;
  });
  const closed = new Promise<DrainReport>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const stop = () => {
    stopping ??= drain(hurried).finally(() => {
      process.removeListener('SIGTERM', onSignal);
      process.removeListener('SIGINT', onSignal);
    });
    stopping.then(settle.resolve, settle.reject);
    return stopping;
  };
  // The first signal drains; a later one means the operator will not wait for the drain's deadline.
  const onSignal = () => {
    if (stopping) hurry();
    else void stop();
  };
  if (o.signals) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return { url: `http://${host}:${port}`, closed, stop };
}
