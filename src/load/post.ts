/**
 * One-off POSTs over node:http with a keep-alive agent (post), and the check every load-run answer must pass
 * (answerOk). postChecked is the node:http load client that the raw socket client (raw-client.ts) replaced:
 * kept as the reference its answers are tested against and its cost measured against
 * (src/bench/load-client-cost.ts). Why node:http and not
 * fetch: on a 2-core machine the client shares the cores it measures, and undici's fetch (web
 * streams, a promise chain per chunk) cost a 600 KB mobilenet_v2 request 7.6–14.7 ms median and
 * 19–26 ms p90 through a veltair server, against 6.1–6.5 ms median and 7.4–13.8 ms p90 for this
 * path in the same run. That client time lands in every measured latency, of every arm.
 */
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** POST `body` to `url` (http only); resolves with the whole answer, rejects on a connection error. */
export function post(url: URL, headers: Readonly<Record<string, string>>, body: string | Uint8Array): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** What a load-run answer must look like to count: the binary tensor bytes after its JSON header, when known. */
export interface AnswerCheck {
  /** Bytes of binary output data expected after the JSON header (undefined: a JSON answer, or shapes not fixed). */
  readonly binaryBytes?: number;
  /** Decode the answer's JSON header and check its outputs against the binary bytes (`--verify`); else only status, headers and size. */
  readonly verify?: boolean;
}

/**
 * Whether a 200 answer is well formed, from its headers and size: the body is as long as its
 * Content-Length, a binary answer says where its JSON header ends and carries exactly the expected
 * tensor bytes after it. With `verify`, the header is decoded too: every output's
 * binary_data_size, summed, must be the bytes after the header.
 */
export function answerOk(headers: http.IncomingHttpHeaders, bytes: number, check: AnswerCheck, body?: Buffer): boolean {
  const length = headers['content-length'];
  if (length !== undefined && Number(length) !== bytes) return false;
  const head = headers['inference-header-content-length'];
  if (head === undefined) return check.binaryBytes === undefined && (headers['content-type'] ?? '').includes('json');
  const headBytes = Number(head);
  if (!(headBytes > 0 && headBytes <= bytes)) return false;
  if (check.binaryBytes !== undefined && bytes - headBytes !== check.binaryBytes) return false;
  if (!check.verify || !body) return true;
  try {
    const parsed = JSON.parse(body.subarray(0, headBytes).toString('utf8')) as {
      outputs?: { parameters?: { binary_data_size?: unknown } }[];
    };
    const sizes = (parsed.outputs ?? []).map((o) => Number(o.parameters?.binary_data_size ?? 0));
    return sizes.length > 0 && sizes.reduce((a, b) => a + b, 0) === bytes - headBytes;
  } catch {
    return false;
  }
}

/**
 * POST for the load generator: resolves with the status, or 0 for a connection error or a 200
 * whose answer is not well formed (answerOk). The body is counted, not kept, unless `verify`.
 */
export function postChecked(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: string | Uint8Array,
  check: AnswerCheck,
): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } },
      (res) => {
        let bytes = 0;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          bytes += c.byteLength;
          if (check.verify) chunks.push(c);
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          resolve(status !== 200 || answerOk(res.headers, bytes, check, check.verify ? Buffer.concat(chunks) : undefined) ? status : 0);
        });
        res.on('error', () => resolve(0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}
