/**
 * The load generator's HTTP client: one POST over node:http with a keep-alive agent. Why not
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
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
