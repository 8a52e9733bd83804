/**
 * A raw HTTP/1.1 client for the serve robustness tests: one request per connection, written the way
 * the test needs (all at once, or the whole request written before a byte of the answer is read,
 * as Python's http.client does), and an outcome that never throws: the status and headers if an
 * answer arrived, else the socket error (ECONNRESET, EPIPE…) or 'closed' with nothing.
 */
import { connect, type Socket } from 'node:net';

export interface RawOutcome {
  readonly status?: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Why no answer came: a socket error code, or 'closed'. */
  readonly error?: string;
}

export interface RawOptions {
  /** Read nothing until the whole request has been handed to the kernel (a client that writes first, reads second). */
  readonly writeAllFirst?: boolean;
  /** Called once, when the first byte of an answer arrives. */
  readonly onFirstByte?: () => void;
  /** Called with the socket once it connects (to hold it, or to write more). */
  readonly onSocket?: (s: Socket) => void;
}

function parse(got: Buffer): { status: number; headers: Record<string, string>; body: string } | undefined {
  const end = got.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = got.subarray(0, end).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  const length = Number(headers['content-length'] ?? NaN);
  if (!(got.length >= end + 4 + length)) return undefined;
  return { status: Number(statusLine!.split(' ')[1]), headers, body: got.subarray(end + 4, end + 4 + length).toString('utf8') };
}

/** Send `request` (bytes, or written by onSocket) on a new connection to 127.0.0.1:port; resolve with what came back. */
export function rawRequest(port: number, request: Buffer | undefined, o: RawOptions = {}): Promise<RawOutcome> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    let first = true;
    let error: string | undefined;
    let done = false;
    const finish = (answer: ReturnType<typeof parse>) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(answer ? { ...answer } : { headers: {}, body: '', error: error ?? 'closed' });
    };
    const socket = connect(port, '127.0.0.1', () => {
      o.onSocket?.(socket);
      if (request === undefined) return;
      if (o.writeAllFirst) socket.write(request, () => socket.resume());
      else socket.write(request);
    });
    if (o.writeAllFirst) socket.pause();
    socket.on('data', (d: Buffer) => {
      if (first) {
        first = false;
        o.onFirstByte?.();
      }
      got = Buffer.concat([got, d]);
      const answer = parse(got);
      if (answer) finish(answer);
    });
    socket.on('error', (e: Error & { code?: string }) => {
      error ??= e.code ?? e.message;
    });
    socket.on('close', () => finish(error === undefined ? parse(got) : undefined));
  });
}

/** The bytes of one POST with a Content-Length, closing the connection after its answer. */
export function postBytes(path: string, body: Buffer, headers: Record<string, string>): Buffer {
  const head = [
    `POST ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Content-Length: ${body.byteLength}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ].join('\r\n');
  return Buffer.concat([Buffer.from(`${head}\r\n\r\n`), body]);
}

/** `veltair_NAME{LABELS} VALUE` from a Prometheus text page (0 when absent). */
export function metricValue(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}
