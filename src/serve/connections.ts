/**
 * Every connection the server holds, each bounded (limits.ts), and closed so that the client gets
 * its answer:
 *
 *  - headers must be complete within headerTimeoutMs of their first byte: Node's own check
 *    (headersTimeout), answered here 408 with Connection: close;
 *  - a body must keep arriving: no new byte for bodyTimeoutMs is answered 408 and the socket closed
 *    (Node's requestTimeout bounds the whole request instead, which cuts off a slow honest upload);
 *  - an answer must keep leaving: a client that takes nothing of it for sendTimeoutMs (the kernel's
 *    unacknowledged bytes, libuv's write queue and Node's buffer all unmoved, send-queue.ts) is cut
 *    off and counted;
 *  - at most maxConnections at once: a connection past them is answered 503 with Retry-After as it
 *    is accepted, what it sends read and discarded until it closes (or pauses, or sends too much),
 *    and counted. Node's own server.maxConnections closes such sockets without a word;
 *  - a lingering close: when an answer that closes the connection is out before the client has sent
 *    its whole body (a 413 from the Content-Length, a 503 or 404 while draining…), the socket is
 *    half-closed and the rest of the body read and discarded — up to discardLimitBytes, and as long
 *    as it keeps arriving — before it is closed. Closing a socket with unread bytes makes the
 *    kernel send a reset, and a client that writes its whole body before reading (Python's
 *    http.client) then loses the answer to EPIPE/ECONNRESET. Apache's lingering_close is the same idea.
 *
 * The open-connection gauge and the timeout / dropped counters are the server's metrics.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { pendingAccepts } from './accept-queue.js';
import type { ServeLimits } from './limits.js';
import type { ServerMetrics } from './metrics.js';
import { sendMoved, unackedBytes, uvQueuedBytes, type SendQueue } from './send-queue.js';

interface ConnState {
  /** The latest request on this connection (its body may still be arriving) and its response. */
  request?: IncomingMessage;
  response?: ServerResponse;
  /** socket.bytesRead at the last check, and when it last grew. */
  lastBytes: number;
  lastProgressMs: number;
  /** Answered 408 by the body watch: close at once, nothing more to read. */
  abandoned: boolean;
  /** Discarding the rest of a body after its answer. */
  lingering: boolean;
  /** Node called destroySoon: the connection is closing after its answer, and must not be cut before that answer is out. */
  closing: boolean;
  /** socket.bytesRead when the latest response finished (keep-alive idle since, if nothing was read after). */
  idleFromBytes?: number;
  /** While an answer waits in Node's buffer: that buffer's size and the kernel's unacknowledged bytes at the last look, and when either last fell or moved. */
  sendQueue?: SendQueue;
  lastSendProgressMs: number;
}

const KEEP_ALIVE_MS = 72_000; // fastify's default, longer than common load balancers' 60 s idle timeout

/** How often bodies' and answers' progress (and Node's header deadline) is checked: a quarter of the shortest timeout, within 25 ms..1 s. */
export const checkIntervalMs = (l: Pick<ServeLimits, 'headerTimeoutMs' | 'bodyTimeoutMs' | 'sendTimeoutMs'>) =>
  Math.min(1000, Math.max(25, Math.floor(Math.min(l.headerTimeoutMs, l.bodyTimeoutMs, l.sendTimeoutMs) / 4)));

/** A raw HTTP/1.1 answer for a socket that has no response object (a client error before any request, a connection past the cap). */
export function rawAnswer(status: 400 | 408 | 431 | 503, message: string, retryAfterSeconds?: number): string {
  const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large', 503: 'Service Unavailable' }[status];
  const body = JSON.stringify({ error: message });
  const retry = retryAfterSeconds === undefined ? '' : `Retry-After: ${retryAfterSeconds}\r\n`;
  return (
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\n${retry}` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Seconds a client refused at the connection cap should wait: connections turn over within requests' time. */
const FULL_RETRY_AFTER_S = 1;

const TIMEOUT_BODY = JSON.stringify({ error: 'the request body stopped arriving; send it without pauses' });

export class Connections {
  private readonly open = new Map<Socket, ConnState>();
  /** Connections past the cap, answered 503 and lingering until they close (not among the open ones). */
  private readonly refused = new Set<Socket>();
  private readonly watch: NodeJS.Timeout;
  private server?: Server;
  /** The listening port, kept after the listener closes (a drain still watches answers going out). */
  private listenPort?: number;
  private lastCheckMs = performance.now();

  constructor(
    private readonly limits: ServeLimits,
    private readonly metrics: ServerMetrics,
  ) {
    this.watch = setInterval(() => this.check(), checkIntervalMs(limits)).unref();
  }

  /** fastify's serverFactory: the HTTP server with these bounds, every connection tracked. */
  readonly createServer = (handler: RequestListener): Server => {
    const server = createServer(
      {
        headersTimeout: this.limits.headerTimeoutMs,
        requestTimeout: 0,
        keepAliveTimeout: KEEP_ALIVE_MS,
        connectionsCheckingInterval: checkIntervalMs(this.limits),
      },
      handler,
    );
    // Node's HTTP handling of a connection is its 'connection' listener: run it only for connections under the cap.
    const http = server.listeners('connection') as ((socket: Socket) => void)[];
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => {
      if (this.open.size >= this.limits.maxConnections) return this.refuse(socket);
      for (const listener of http) listener.call(server, socket);
      this.track(socket);
    });
    // Before fastify's listener: note the request whose body is about to arrive.
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      const st = this.open.get(req.socket);
      if (!st) return;
      st.request = req;
      st.response = res;
      st.lastBytes = req.socket.bytesRead;
      st.lastProgressMs = performance.now();
      st.idleFromBytes = undefined;
      res.once('finish', () => {
        if (st.response === res) st.idleFromBytes = req.socket.bytesRead;
      });
    });
    server.on('listening', () => {
      const a = server.address();
      if (a && typeof a === 'object') this.listenPort = a.port;
    });
    this.server = server;
    return server;
  };

  /** fastify's clientErrorHandler: a header timeout (the only request timeout Node runs here) is a 408, counted. */
  readonly clientError = (err: Error & { code?: string }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const st = this.open.get(socket);
    if (st) st.abandoned = true; // the parser failed: whatever follows has no framing to discard by
    const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    if (timeout) this.metrics.timeouts.inc({ kind: 'header' });
    const answer = timeout
      ? rawAnswer(408, 'the request headers did not arrive in time')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? rawAnswer(431, 'the request headers are too large')
        : rawAnswer(400, 'malformed HTTP request');
    // No request of this connection is being answered (a keep-alive one may have been, before): answer, then close;
    // there is no body framing to discard by.
    const answering = st?.response !== undefined && !st.response.writableEnded;
    if (socket.writable && !answering) socket.end(answer);
    socket.destroySoon();
  };

  count(): number {
    return this.open.size;
  }

  /**
   * Destroy the keep-alive connections idle since their last answer (nothing read since): what a drain does once it
   * stops listening. Not Node's closeIdleConnections: that also destroys a connection whose answer is written and
   * which is closing (seen: its client got a reset instead of the answer). A connection that never sent a byte is
   * left to the header timeout: its request may be on the way.
   */
  closeIdle(): void {
    for (const [socket, st] of this.open) {
      if (!st.closing && st.request?.complete && st.idleFromBytes !== undefined && socket.bytesRead === st.idleFromBytes) socket.destroy();
    }
  }

  /** Destroy every connection (the drain deadline); returns how many there were, not counting refused ones (already answered). */
  destroyAll(): number {
    const n = this.open.size;
    for (const socket of this.open.keys()) socket.destroy();
    for (const socket of this.refused) socket.destroy();
    return n;
  }

  /** Connections to the listening port the kernel holds, not accepted yet (accept-queue.ts). */
  pendingAccepts(): number | undefined {
    const address = this.server?.address();
    return address && typeof address === 'object' ? pendingAccepts(address.port) : undefined;
  }

  /**
   * Stop accepting, resolving once every connection has closed. net.Server's close, not http's:
   * http.Server#close also stops Node's header-deadline checks, and the drain still needs them for
   * the connections it waits on.
   */
  stopListening(): Promise<void> {
    const server = this.server;
    if (!server?.listening) return this.open.size === 0 ? Promise.resolve() : new Promise((r) => server!.once('close', () => r()));
    return new Promise((resolve) => {
      NetServer.prototype.close.call(server, () => resolve());
    });
  }

  /** Stop the body watch (after the server closed). */
  dispose(): void {
    clearInterval(this.watch);
    // http's close clears Node's connection-checking timer; the listener itself is already closed.
    if (this.server) (this.server as { close(): unknown }).close();
  }

  /**
   * A connection past the cap: a 503 with Retry-After at once, then a lingering close — what the client sends is read and
   * discarded until it closes, pauses for the header timeout or sends more than discardLimitBytes — so that a client that
   * writes its request before reading gets the answer, not a reset.
   */
  private refuse(socket: Socket): void {
    this.metrics.connectionsDropped.inc({ reason: 'max_connections' });
    this.refused.add(socket);
    socket.once('close', () => this.refused.delete(socket));
    socket.on('error', () => undefined);
    let discarded = 0;
    socket.on('data', (chunk: Buffer) => {
      discarded += chunk.byteLength;
      if (discarded > this.limits.discardLimitBytes) socket.destroy();
    });
    socket.once('end', () => socket.destroy()); // the server's sockets allow half-open: the client is done, so are we
    socket.setTimeout(this.limits.headerTimeoutMs, () => socket.destroy());
    socket.end(
      rawAnswer(503, `the server holds its limit of ${this.limits.maxConnections} connections; retry shortly`, FULL_RETRY_AFTER_S),
    );
  }

  private track(socket: Socket): void {
    const st: ConnState = {
      lastBytes: 0,
      lastProgressMs: performance.now(),
      abandoned: false,
      lingering: false,
      closing: false,
      lastSendProgressMs: performance.now(),
    };
    this.open.set(socket, st);
    this.metrics.connectionsOpen.set(this.open.size);
    socket.once('close', () => {
      this.open.delete(socket);
      this.metrics.connectionsOpen.set(this.open.size);
    });
    // Node calls destroySoon once a response that closes the connection is written: linger there.
    const close = socket.destroySoon.bind(socket);
    socket.destroySoon = () => this.closeAfterBody(socket, st, close);
  }

  private closeAfterBody(socket: Socket, st: ConnState, close: () => void): void {
    st.closing = true;
    const req = st.request;
    if (!req || req.complete || st.abandoned || st.lingering || socket.destroyed) return close();
    const declared = Number(req.headers['content-length']);
    if (declared > this.limits.discardLimitBytes) {
      this.metrics.connectionsDropped.inc({ reason: 'discard_limit' });
      return close();
    }
    st.lingering = true;
    st.lastBytes = socket.bytesRead;
    st.lastProgressMs = performance.now();
    let discarded = 0;
    socket.end(); // half-close: the answer is complete; keep reading what the client still sends
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.byteLength;
      if (discarded > this.limits.discardLimitBytes) {
        this.metrics.connectionsDropped.inc({ reason: 'discard_limit' });
        socket.destroy();
      }
    });
    req.once('end', close);
    req.resume();
  }

  /** Every connection reading a body or sending an answer: progress since the last look, else past its timeout cut off. */
  private check(): void {
    const now = performance.now();
    // Time this process did not run (a blocked event loop, a loaded machine) is not the client's pause: don't count it.
    const stalledMs = Math.max(0, now - this.lastCheckMs - 2 * checkIntervalMs(this.limits));
    this.lastCheckMs = now;
    for (const st of this.open.values()) {
      st.lastProgressMs += stalledMs;
      st.lastSendProgressMs += stalledMs;
    }
    this.checkSends(now);
    this.checkBodies(now);
  }

  /**
   * Every connection with an answer in Node's buffer (the kernel's is full): progress is that buffer or libuv's queue shrinking,
   * or the kernel's unacknowledged bytes moving; none for sendTimeoutMs and the connection is destroyed.
   */
  private checkSends(now: number): void {
    let unacked: ReturnType<typeof unackedBytes> | null = null; // read once per look, and only when some answer waits
    for (const [socket, st] of this.open) {
      const buffered = socket.writableLength;
      if (buffered === 0 || socket.destroyed) {
        st.sendQueue = undefined;
        continue;
      }
      if (unacked === null) unacked = this.listenPort === undefined ? undefined : unackedBytes(this.listenPort);
      const look: SendQueue = { buffered, uvQueued: uvQueuedBytes(socket), unacked: unacked?.get(socket.remotePort ?? -1) };
      if (sendMoved(st.sendQueue, look)) st.lastSendProgressMs = now;
      st.sendQueue = look;
      if (now - st.lastSendProgressMs < this.limits.sendTimeoutMs) continue;
      this.metrics.timeouts.inc({ kind: 'send' });
      socket.destroy();
    }
  }

  /** Every connection reading a body: progress since the last look, else past bodyTimeoutMs a 408 and close. */
  private checkBodies(now: number): void {
    for (const [socket, st] of this.open) {
      const req = st.request;
      if (!req || req.complete || st.abandoned || socket.destroyed) continue;
      const bytes = socket.bytesRead;
      if (bytes !== st.lastBytes) {
        st.lastBytes = bytes;
        st.lastProgressMs = now;
        continue;
      }
      if (now - st.lastProgressMs < this.limits.bodyTimeoutMs) continue;
      st.abandoned = true;
      this.metrics.timeouts.inc({ kind: 'body' });
      const res = st.response;
      if (res && !res.headersSent && !res.writableEnded) {
        res.writeHead(408, { Connection: 'close', 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(TIMEOUT_BODY) });
        res.end(TIMEOUT_BODY); // Node then closes it through destroySoon, which sees `abandoned`
      } else {
        socket.destroy();
      }
    }
  }
}
