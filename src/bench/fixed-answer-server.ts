/**
 * A v2-shaped HTTP server for measuring clients: it reads each request body whole and answers a fixed,
 * well-formed binary answer of 1,000 FP32 values. Run as a child process (load-client-cost.ts), so its CPU
 * is not the client's; it tells its parent its port over IPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const head = Buffer.from(
  JSON.stringify({
    model_name: 'm',
    outputs: [{ name: 'logits', datatype: 'FP32', shape: [1, 1000], parameters: { binary_data_size: 4000 } }],
  }),
);
const answer = Buffer.concat([head, Buffer.alloc(4000)]);
const headers = {
  'Content-Type': 'application/octet-stream',
  'Inference-Header-Content-Length': String(head.byteLength),
  'Content-Length': String(answer.byteLength),
};

const server = http.createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => res.writeHead(200, headers).end(answer));
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
