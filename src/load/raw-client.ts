/**
 * The load generator's cheap HTTP/1.1 client: keep-alive TCP sockets, each request's bytes (request line,
 * headers and body) encoded once and written with one call, and the answer counted as it streams in: status
 * line and headers parsed, the body's bytes counted against its Content-Length (or its chunks) and dropped,
 * kept only with `verify`. On a 2-core machine the client shares the cores it measures, so its CPU lands in
 * every latency: node:http's client builds a request object, header objects and stream events per request.
 *
 * One request at a time per socket, no pipelining; a socket idle longer than IDLE_REUSE_MS is closed rather
 * than reused, so a server's keep-alive timeout cannot close it under a request. Any protocol surprise (a
 * malformed head, bytes after the answer, a socket closed mid-answer) resolves 0 and closes the socket.
 */
import net from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { answerOk, type AnswerCheck } from './post.js';

/** A request's bytes, encoded once and sent as they are. */
export interface EncodedRequest {
  readonly host: string;
  readonly port: number;
  readonly bytes: Buffer;
}

/** Idle sockets older than this are not reused: well under any server's keep-alive timeout (Node's default is 5 s). */
const IDLE_REUSE_MS = 2_000;
/** A head longer than this is not an answer this client understands. */
const MAX_HEAD_BYTES = 64 * 1024;

const HEADER_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The bytes of a POST of `body` to `url` with `headers`; names and values are checked so none can split the request. */
export function encodeRequest(url: URL, headers: Readonly<Record<string, string>>, body: string | Uint8Array): EncodedRequest {
  if (url.protocol !== 'http:') throw new TypeError(`raw client speaks http only, not ${url.protocol}`);
  const payload = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const lines = [`POST ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, 'Connection: keep-alive'];
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === 'content-length' || lower === 'host' || lower === 'connection') continue;
    if (!HEADER_TOKEN.test(name) || /[\r\n\0]/.test(value)) throw new TypeError(`header ${JSON.stringify(name)} cannot be sent as it is`);
    lines.push(`${name}: ${value}`);
  }
  lines.push(`Content-Length: ${payload.byteLength}`, '', '');
  const port = url.port === '' ? 80 : Number(url.port);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, port, bytes: Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), payload]) };
}

/** An answer's status (as send() judges it), headers and, when kept, body. */
export interface KeptAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | null;
}

/** What the parser has read of one answer. */
interface Reading {
  head: Buffer | null;
  status: number;
  headers: IncomingHttpHeaders;
  /** Body bytes still due (Content-Length), -1 for chunked, -2 for "until the socket closes". */
  remaining: number;
  bodyBytes: number;
  chunks: Buffer[] | null;
  chunked: ChunkState | null;
  closeAfter: boolean;
}

interface ChunkState {
  /** Bytes left in the current chunk's data plus its trailing CRLF; 0 means a size line is due. */
  left: number;
  line: string;
  done: boolean;
  /** After the last (zero-size) chunk: the bytes of the trailer section read so far, until an empty line. */
  trailer: string | null;
}

interface Idle {
  readonly socket: net.Socket;
  readonly since: number;
}

/**
 * A pool of keep-alive sockets per host:port. send() writes one encoded request and resolves with its status:
 * 200 only for a well-formed answer (answerOk), the status as is for anything else, 0 for a connection or
 * protocol error.
 */
export class RawClient {
  private readonly idle = new Map<string, Idle[]>();
  private readonly open = new Set<net.Socket>();

  send(request: EncodedRequest, check: AnswerCheck): Promise<number> {
    return this.exchange(request, check, false).then((a) => a.status);
  }

  /** send(), keeping the answer's body too (to read its JSON header: the server's own timing of the request). */
  sendKeepingBody(request: EncodedRequest, check: AnswerCheck): Promise<KeptAnswer> {
    return this.exchange(request, check, true);
  }

  private exchange(request: EncodedRequest, check: AnswerCheck, keepBody: boolean): Promise<KeptAnswer> {
    return new Promise((resolve) => {
      const key = `${request.host}:${request.port}`;
      const socket = this.take(key) ?? this.connect(request);
      const r: Reading = {
        head: null,
        status: 0,
        headers: {},
        remaining: 0,
        bodyBytes: 0,
        chunks: check.verify || keepBody ? [] : null,
        chunked: null,
        closeAfter: false,
      };
      let finished = false;
      const finish = (status: number, reuse: boolean): void => {
        if (finished) return;
        finished = true;
        socket.removeListener('data', onData);
        socket.removeListener('close', onClose);
        socket.removeListener('error', onError);
        if (reuse) this.release(key, socket);
        else this.discard(socket);
        resolve({ status, headers: r.headers, body: keepBody && r.chunks ? Buffer.concat(r.chunks) : null });
      };
      const complete = (extra: number): void => {
        if (extra > 0) return finish(0, false); // bytes nobody asked for: the stream is out of step
        const ok = r.status !== 200 || answerOk(r.headers, r.bodyBytes, check, r.chunks ? Buffer.concat(r.chunks) : undefined);
        finish(ok ? r.status : 0, !r.closeAfter);
      };
      const onData = (data: Buffer): void => {
        let body = data;
        if (r.head === null || r.status === 0) {
          const head = r.head === null ? data : Buffer.concat([r.head, data]);
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) {
            if (head.byteLength > MAX_HEAD_BYTES) return finish(0, false);
            r.head = head;
            return;
          }
          if (!parseHead(head.subarray(0, end).toString('latin1'), r)) return finish(0, false);
          r.head = head;
          body = head.subarray(end + 4);
          if (r.remaining === 0) return complete(body.byteLength);
        }
        if (r.remaining === -1) {
          const used = readChunks(r.chunked!, body, r);
          if (used < 0) return finish(0, false);
          if (r.chunked!.done) return complete(body.byteLength - used);
          return;
        }
        countBody(r, body, body.byteLength);
        if (r.remaining > 0) {
          r.remaining -= body.byteLength;
          if (r.remaining <= 0) complete(-r.remaining);
        }
      };
      const onClose = (): void => {
        if (r.remaining === -2 && r.status !== 0) complete(0);
        else finish(0, false);
      };
      const onError = (): void => finish(0, false);
      socket.on('data', onData);
      socket.on('close', onClose);
      socket.on('error', onError);
      socket.write(request.bytes);
    });
  }

  /** Close every socket; requests in flight resolve 0. */
  close(): void {
    for (const s of this.open) s.destroy();
    this.open.clear();
    this.idle.clear();
  }

  private take(key: string): net.Socket | undefined {
    const list = this.idle.get(key);
    const now = performance.now();
    while (list && list.length > 0) {
      const { socket, since } = list.pop()!;
      if (now - since <= IDLE_REUSE_MS && !socket.destroyed && socket.readyState === 'open') return socket.ref();
      this.discard(socket);
    }
    return undefined;
  }

  private connect(request: EncodedRequest): net.Socket {
    const socket = net.connect({ host: request.host, port: request.port, noDelay: true });
    this.open.add(socket);
    // An idle socket the server closes must not crash the process or linger in the pool.
    socket.on('error', () => undefined);
    socket.on('close', () => this.open.delete(socket));
    return socket;
  }

  private release(key: string, socket: net.Socket): void {
    let list = this.idle.get(key);
    if (!list) this.idle.set(key, (list = []));
    // An idle socket must not keep the process alive, as node:http's keep-alive agent does not.
    list.push({ socket: socket.unref(), since: performance.now() });
  }

  private discard(socket: net.Socket): void {
    this.open.delete(socket);
    socket.destroy();
  }
}

/** Parse a status line and headers into `r`; false for anything this client does not understand. */
function parseHead(text: string, r: Reading): boolean {
  const lines = text.split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0] ?? '');
  if (!status) return false;
  r.status = Number(status[1]);
  if (r.status < 100) return false;
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return false;
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  r.headers = headers;
  r.closeAfter = (headers['connection'] ?? '').toLowerCase() === 'close' || lines[0]!.startsWith('HTTP/1.0');
  if ((headers['transfer-encoding'] ?? '').toLowerCase() === 'chunked') {
    r.remaining = -1;
    r.chunked = { left: 0, line: '', done: false, trailer: null };
  } else if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (!Number.isSafeInteger(n) || n < 0) return false;
    r.remaining = n;
  } else {
    r.remaining = -2;
    r.closeAfter = true;
  }
  return true;
}

function countBody(r: Reading, data: Buffer, bytes: number): void {
  const take = r.remaining > 0 ? Math.min(bytes, r.remaining) : bytes;
  r.bodyBytes += take;
  if (r.chunks && take > 0) r.chunks.push(Buffer.from(data.subarray(0, take)));
}

/** Consume chunked body bytes from `data`; returns the bytes used, or -1 for a malformed chunk. */
function readChunks(c: ChunkState, data: Buffer, r: Reading): number {
  let i = 0;
  while (i < data.byteLength && !c.done) {
    if (c.trailer !== null) {
      const nl = data.indexOf(0x0a, i);
      const end = nl < 0 ? data.byteLength : nl + 1;
      c.trailer += data.subarray(i, end).toString('latin1');
      i = end;
      if (c.trailer.endsWith('\r\n')) {
        if (c.trailer === '\r\n') c.done = true;
        else c.trailer = '';
      }
      continue;
    }
    if (c.left > 0) {
      const take = Math.min(c.left, data.byteLength - i);
      const dataBytes = Math.max(0, Math.min(take, c.left - 2));
      r.bodyBytes += dataBytes;
      if (r.chunks && dataBytes > 0) r.chunks.push(Buffer.from(data.subarray(i, i + dataBytes)));
      c.left -= take;
      i += take;
      continue;
    }
    const nl = data.indexOf(0x0a, i);
    const end = nl < 0 ? data.byteLength : nl + 1;
    c.line += data.subarray(i, end).toString('latin1');
    i = end;
    if (c.line.length > 1024) return -1;
    if (!c.line.endsWith('\r\n')) continue;
    const size = Number.parseInt(c.line.split(';')[0]!.trim(), 16);
    c.line = '';
    if (!Number.isSafeInteger(size) || size < 0) return -1;
    if (size === 0) c.trailer = '';
    else c.left = size + 2;
  }
  return i;
}
