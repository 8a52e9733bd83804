/**
 * What the load generator costs per request, on the cores it shares with the server it measures: the CPU of
 * this process (process.cpuUsage) over a probe of ImageNet-sized binary requests (1×3×224×224 FP32, as
 * serve-bench sends), for each client, interleaved round by round. The server is a child process that reads
 * each body whole and answers a fixed, well-formed 1,000-float binary answer, so its CPU is not counted and
 * every client gets the same answers.
 *
 *   node dist/src/bench/load-client-cost.js [--rounds 5] [--qps 50] [--seconds 6] [--json-out F]
 *
 * Clients: `raw` (the product's: src/load/raw-client.ts through httpSender), `node-http` (postChecked over
 * node:http's keep-alive agent, the client before it). Each runs the whole probe loop (runProbe: timers,
 * the early-stopping judgement, the noise snapshot), as a find-max probe does. Two floors run beside them:
 * `no-transport`, the same probe loop with a sender that answers at once (what the loop costs without any
 * request), and `wake-only`, a loop that only sleeps until each of the same arrivals (what waking the process
 * from idle costs on this machine, per request: an open-loop generator wakes at least once per arrival).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeFileAtomic } from '../atomic-file.js';
import { arrivals, requestFor, type LoadModel, type Metadata } from '../load/generator.js';
import { postChecked } from '../load/post.js';
import { httpSender, runProbe, type Sender } from '../load/probe.js';
import { median } from '../stats.js';

const META: Metadata = {
  inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224] }],
  outputs: [{ name: 'logits', datatype: 'FP32', shape: [1, 1000] }],
};

const CLIENTS = ['raw', 'node-http', 'no-transport', 'wake-only'] as const;
type Client = (typeof CLIENTS)[number];

interface Row {
  readonly round: number;
  readonly client: Client;
  readonly sent: number;
  readonly ok: number;
  readonly clientCpuMsPerRequest: number | null;
  readonly outsideShare: number | null;
}

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

function startServer(): Promise<{ url: URL; stop: () => void }> {
  const child = fork(fileURLToPath(new URL('./fixed-answer-server.js', import.meta.url)), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve({ url: new URL(`http://127.0.0.1:${m.port}`), stop: () => child.kill() }));
    child.once('exit', (code) => reject(new Error(`the answer server exited (${code})`)));
  });
}

function nodeHttpSender(base: URL, model: LoadModel): Sender {
  const url = new URL(`/v2/models/${model.name}/infer`, base);
  return () => postChecked(url, model.headers, model.body, { binaryBytes: model.answerBytes! });
}

/** CPU per arrival of a loop that does nothing but sleep until each of the probe's arrivals. */
async function wakeOnlyMs(model: LoadModel, qps: number, seconds: number, seed: number): Promise<number | null> {
  const plan = arrivals([model], qps, seconds, seed);
  if (plan.length === 0) return null;
  const before = process.cpuUsage();
  const start = performance.now();
  for (const a of plan) {
    const wait = a.t - (performance.now() - start);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  }
  const used = process.cpuUsage(before);
  return Number(((used.user + used.system) / 1000 / plan.length).toFixed(4));
}

function senderFor(client: Exclude<Client, 'wake-only'>, base: URL, model: LoadModel): Sender {
  if (client === 'raw') return httpSender(base, [model]);
  if (client === 'node-http') return nodeHttpSender(base, model);
  return () => Promise.resolve(200);
}

async function main(): Promise<void> {
  const rounds = flag('--rounds', 5),
    qps = flag('--qps', 50),
    seconds = flag('--seconds', 6);
  const outIndex = process.argv.indexOf('--json-out');
  const server = await startServer();
  const request = requestFor(META, 1, false);
  const model: LoadModel = {
    name: 'm',
    weight: 1,
    qosMs: 1_000,
    body: request.body,
    headers: request.headers,
    answerBytes: request.answerBytes!,
  };
  const rows: Row[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      // Alternate the order so neither client always runs first in a round.
      const order = round % 2 === 0 ? CLIENTS : [...CLIENTS].reverse();
      for (const client of order) {
        if (client === 'wake-only') {
          const ms = await wakeOnlyMs(model, qps, seconds, round + 1);
          rows.push({ round, client, sent: 0, ok: 0, clientCpuMsPerRequest: ms, outsideShare: null });
          process.stderr.write(`round ${round + 1} ${client}: ${ms} ms CPU/arrival\n`);
          continue;
        }
        // Minimum time = time bound: a probe cannot pass early, so each client sends the same arrivals.
        const r = await runProbe(senderFor(client, server.url, model), [model], qps, {
          minDurationS: seconds,
          maxDurationS: seconds,
          seed: round + 1,
        });
        rows.push({
          round,
          client,
          sent: r.models[0]!.sent,
          ok: r.models[0]!.ok,
          clientCpuMsPerRequest: r.noise.clientCpuMsPerRequest,
          outsideShare: r.noise.outsideShare,
        });
        process.stderr.write(
          `round ${round + 1} ${client}: ${r.noise.clientCpuMsPerRequest} ms CPU/request, ${r.models[0]!.ok}/${r.models[0]!.sent} ok\n`,
        );
      }
    }
  } finally {
    server.stop();
  }
  const summary = CLIENTS.map((client) => {
    const mine = rows.filter((r) => r.client === client).map((r) => r.clientCpuMsPerRequest ?? NaN);
    return { client, medianMs: Number(median(mine).toFixed(3)), minMs: Math.min(...mine), maxMs: Math.max(...mine) };
  });
  const host = `${process.arch}, ${(await import('node:os')).cpus()[0]?.model ?? 'unknown CPU'}`;
  for (const s of summary)
    console.log(`${s.client.padEnd(12)} ${s.medianMs.toFixed(3)} ms CPU/request (median of ${rounds}; ${s.minMs}–${s.maxMs})`);
  console.log(`host: ${host}; ${qps} QPS, ${seconds} s per probe; body ${request.body.length} bytes`);
  if (outIndex > 0)
    await writeFileAtomic(process.argv[outIndex + 1]!, JSON.stringify({ host, qps, seconds, rows, summary }, null, 2) + '\n');
}

await main();
