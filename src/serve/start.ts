/**
 * A server's life: listen (127.0.0.1 unless told otherwise), and on SIGTERM or SIGINT stop
 * admitting (readiness 503, new requests 503), answer every request in flight, release the
 * backend, resolve. The backend is given — veltair's dispatcher, or a baseline's — so every
 * backend is reached through the same front end.
 */
import type { Backend } from './backend.js';
import { buildServer } from './http.js';
import type { ServerMetrics } from './metrics.js';

export interface StartOptions {
  readonly backend: Backend;
  readonly metrics: ServerMetrics;
  readonly host: string;
  readonly port: number;
  readonly bodyLimit: number;
  /** Handle SIGTERM/SIGINT (the CLI does; an embedding process may not want it). */
  readonly signals?: boolean;
}

export interface RunningServer {
  /** http://host:port of the bound socket (the real port when 0 was asked for). */
  readonly url: string;
  /** Resolves when the server has drained and closed (after a signal or stop()). */
  readonly closed: Promise<void>;
  stop(): Promise<void>;
}

export async function startServer(o: StartOptions): Promise<RunningServer> {
  const { app, drain } = buildServer({ backend: o.backend, metrics: o.metrics, bodyLimit: o.bodyLimit });
  await app.listen({ host: o.host, port: o.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : o.port;
  let stopping: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => { resolveClosed = r; });
  const stop = () => {
    stopping ??= drain().finally(() => {
      process.removeListener('SIGTERM', onSignal);
      process.removeListener('SIGINT', onSignal);
      resolveClosed();
    });
    return stopping;
  };
  const onSignal = () => { void stop(); };
  if (o.signals) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return { url: `http://${host}:${port}`, closed, stop };
}
