/**
 * `veltair serve [BUNDLE…] [--repo DIR] [--config FILE] [--host H] [--port P] [--policy P]
 *  [--cores N|LIST] [--qos-multiple X] [--max-body-bytes B] [--backend veltair|onnxruntime] [--trust KEY…] [--json]
 *  [--drain-grace-ms MS] [--drain-timeout-ms MS] [--header-timeout-ms MS] [--body-timeout-ms MS] [--send-timeout-ms MS]
 *  [--max-connections N] [--discard-limit-bytes B]`
 *
 * A KServe v2 / Triton HTTP server over the scheduler (src/serve/). Binds 127.0.0.1 unless --host
 * says otherwise. --cores: how many of this process's cores to use (default: all of them, or the
 * pod's CPU limit if lower), or an explicit list. Prints the URL and one line per model (QoS,
 * profile, requirements) on stderr, or one JSON object on stdout with --json, then serves until
 * SIGTERM/SIGINT and drains (src/serve/drain.ts): exit 0 when every request sent was answered,
 * DRAIN_CUT_SHORT_EXIT (3) when the drain deadline (or a second signal, which brings it forward) cut something off.
 */
import type { Command } from 'commander';
import { readTrustedKey } from '../bundle/sign.js';
import { userError } from '../errors.js';
import { parsePolicy } from '../schedule/policies.js';
import { resolveModels, type ModelConfig } from '../serve/config.js';
import { DEFAULT_LIMITS, DRAIN_CUT_SHORT_EXIT, type ServeLimits } from '../serve/limits.js';
import { createMetrics } from '../serve/metrics.js';
import { DEFAULT_BLOCK_NICE, setupDispatcher } from '../serve/setup.js';
import { startServer } from '../serve/start.js';
import type { Backend } from '../serve/backend.js';
import { availableCores, cgroupCpuLimit, parseCoreList } from '../toolchain/cpu.js';
import { badArgument, parsePositiveInt } from '../terminal/args.js';
import { note, printJson, printLine } from '../terminal/output.js';
import { loadOrtRoom } from './ort-room.js';

/** V8 flag that keeps garbage collection on the event loop's thread: bin/veltair and serve's child processes start with it. */
const SINGLE_THREADED_GC = '--single-threaded-gc';

interface ServeFlags {
  repo?: string;
  config?: string;
  host: string;
  port: string;
  policy: string;
  cores?: string;
  qosMultiple: string;
  blockNice: string;
  /** false with --no-chain. */
  chain?: boolean;
  maxBodyBytes: string;
  backend: string;
  trust?: string[];
  json?: boolean;
  drainGraceMs: string;
  drainTimeoutMs: string;
  headerTimeoutMs: string;
  bodyTimeoutMs: string;
  sendTimeoutMs: string;
  maxConnections: string;
  discardLimitBytes: string;
}

/** The connection and drain bounds from their flags, each checked: one clear error naming the flag. */
export function parseLimits(
  f: Pick<
    ServeFlags,
    'drainGraceMs' | 'drainTimeoutMs' | 'headerTimeoutMs' | 'bodyTimeoutMs' | 'sendTimeoutMs' | 'maxConnections' | 'discardLimitBytes'
  >,
): ServeLimits {
  const ms = (flag: string, text: string, min: number) => {
    if (!/^\d{1,9}$/.test(text.trim()) || Number(text) < min) {
      throw badArgument(flag, text, `is not a whole number of milliseconds${min > 0 ? ` from ${min}` : ''}`, `e.g. ${flag} 3000`);
    }
    return Number(text);
  };
  const limits: ServeLimits = {
    drainGraceMs: ms('--drain-grace-ms', f.drainGraceMs, 0),
    drainTimeoutMs: ms('--drain-timeout-ms', f.drainTimeoutMs, 1),
    headerTimeoutMs: ms('--header-timeout-ms', f.headerTimeoutMs, 1),
    bodyTimeoutMs: ms('--body-timeout-ms', f.bodyTimeoutMs, 1),
    sendTimeoutMs: ms('--send-timeout-ms', f.sendTimeoutMs, 1),
    maxConnections: parsePositiveInt('--max-connections', f.maxConnections, 1_000_000),
    discardLimitBytes: parsePositiveInt('--discard-limit-bytes', f.discardLimitBytes, 2 ** 40),
  };
  if (limits.drainTimeoutMs <= limits.drainGraceMs) {
    throw badArgument(
      '--drain-timeout-ms',
      f.drainTimeoutMs,
      `is not longer than --drain-grace-ms (${limits.drainGraceMs})`,
      'the deadline bounds the whole drain, grace included: leave room to answer what the grace period took in',
    );
  }
  return limits;
}

/** The CPUs to serve on: a count (the first N available), an explicit list, or all (capped by the cgroup limit). */
export function serveCpus(flag: string | undefined, all: readonly number[] = availableCores(), limit = cgroupCpuLimit()): number[] {
  if (flag === undefined) return all.slice(0, Math.min(all.length, limit ?? all.length));
  if (flag.includes(',')) return parseCoreList(flag, all);
  return all.slice(0, parsePositiveInt('--cores', flag, all.length));
}

function parsePort(text: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) {
    throw badArgument('--port', text, 'is not a port from 0 to 65535', 'e.g. --port 8000 (0: any free port)');
  }
  return Number(text);
}

function parseBlockNice(text: string): number {
  const x = Number(text);
  if (!(Number.isInteger(x) && x >= 0 && x <= 19)) {
    throw badArgument('--block-nice', text, 'is not an integer from 0 to 19', 'e.g. --block-nice 10 (0: no change)');
  }
  return x;
}

function parseMultiple(text: string): number {
  const x = Number(text);
  if (!(x >= 1 && x <= 1000)) throw badArgument('--qos-multiple', text, 'is not a number from 1 to 1000', 'e.g. --qos-multiple 4');
  return x;
}

async function backendFor(
  flags: ServeFlags,
  models: readonly ModelConfig[],
  cpus: readonly number[],
  say: (s: string) => void,
  metrics: ReturnType<typeof createMetrics>,
): Promise<{ backend: Backend; summaries: readonly string[] }> {
  const qosMultiple = parseMultiple(flags.qosMultiple);
  if (flags.backend === 'veltair') {
    const trustedKeys = flags.trust?.map((k) => readTrustedKey(k));
    const setup = await setupDispatcher({
      models,
      policy: parsePolicy(flags.policy),
      cpus,
      metrics,
      qosMultiple,
      blockNice: parseBlockNice(flags.blockNice),
      chain: flags.chain !== false,
      onProgress: say,
      ...(trustedKeys ? { trustedKeys } : {}),
    });
    return { backend: setup.dispatcher, summaries: setup.summaries };
  }
  if (flags.backend === 'onnxruntime') {
    const ort = await loadOrtRoom('serve-backend', '--backend onnxruntime serves through ONNX Runtime');
    return ort.createOrtBackend({ models, cpus, qosMultiple, blockNice: parseBlockNice(flags.blockNice) });
  }
  throw badArgument(
    '--backend',
    flags.backend,
    'is not veltair or onnxruntime',
    'the ONNX Runtime backend is the baseline: --backend onnxruntime',
  );
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve bundles over the KServe v2 / Triton HTTP protocol, many models sharing the CPU through the scheduler')
    .argument('[bundles...]', 'bundle directories (the model name is the directory name without .bundle)')
    .option('--repo <dir>', 'a model repository: every sub-directory holding a bundle (and an optional veltair-serve.json)')
    .option('--config <file>', 'per-model settings: {"models": {NAME: {bundle, qosMs, priority, maxQueue, replicas, profile}}}')
    .option(
      '--host <host>',
      'address to bind (a non-loopback address serves the network: put it behind your own access control)',
      '127.0.0.1',
    )
    .option('--port <port>', 'TCP port (0: any free port)', '8000')
    .option(
      '--policy <policy>',
      'scheduling policy: veltair, veltair-partition, veltair-sched, veltair-compile, fcfs, prema, layerwise, static:K',
      'veltair',
    )
    .option('--cores <n|list>', "cores to use: a count (the first N) or a list such as 0,1 (default: all, or the pod's CPU limit)")
    .option('--qos-multiple <x>', 'QoS of a model with none configured: X times its fastest quiet latency here', '4')
    .option(
      '--block-nice <n>',
      "nice value (0-19) of the threads that run kernels (above 0 also batch threads), so the server's own thread " +
        '(HTTP, scheduling) is never queued behind them on shared cores',
      String(DEFAULT_BLOCK_NICE),
    )
    .option(
      '--no-chain',
      "return to the event loop after every block (the scheduler decides each), instead of running a request's blocks " +
        'back to back in its worker until a tighter request or a core claim stops it at a layer boundary',
    )
    .option('--max-body-bytes <n>', 'largest request body accepted', String(64 * 1024 * 1024))
    .option(
      '--backend <name>',
      'veltair, or onnxruntime (the baseline: one InferenceSession per model, first come first served)',
      'veltair',
    )
    .option(
      '--trust <key>',
      'serve only bundles this Ed25519 public key (veltair keygen PREFIX.pub) signed (repeatable: any of them)',
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option('--json', 'print {url, models, policy, cores} as JSON on stdout once listening')
    .option(
      '--drain-grace-ms <ms>',
      'after SIGTERM, keep listening this long, answering readiness and new requests 503',
      String(DEFAULT_LIMITS.drainGraceMs),
    )
    .option(
      '--drain-timeout-ms <ms>',
      `deadline of the whole drain, grace included; past it open connections are cut and the exit status is ${DRAIN_CUT_SHORT_EXIT}`,
      String(DEFAULT_LIMITS.drainTimeoutMs),
    )
    .option(
      '--header-timeout-ms <ms>',
      "a request's headers must arrive within this long (else 408 and close)",
      String(DEFAULT_LIMITS.headerTimeoutMs),
    )
    .option(
      '--body-timeout-ms <ms>',
      'a request body that makes no progress this long is answered 408 and closed',
      String(DEFAULT_LIMITS.bodyTimeoutMs),
    )
    .option(
      '--send-timeout-ms <ms>',
      'an answer the client takes nothing of for this long is cut off (the connection closed)',
      String(DEFAULT_LIMITS.sendTimeoutMs),
    )
    .option(
      '--max-connections <n>',
      'connections open at once; more are answered 503 with Retry-After and closed',
      String(DEFAULT_LIMITS.maxConnections),
    )
    .option(
      '--discard-limit-bytes <n>',
      'after an early answer (413, 503), read and discard up to this much of the rest of the body before closing',
      String(DEFAULT_LIMITS.discardLimitBytes),
    )
    .action(async (bundles: string[], flags: ServeFlags) => {
      const port = parsePort(flags.port);
      const bodyLimit = parsePositiveInt('--max-body-bytes', flags.maxBodyBytes, 2 ** 31);
      parseMultiple(flags.qosMultiple);
      parseBlockNice(flags.blockNice);
      parsePolicy(flags.policy);
      const limits = parseLimits(flags);
      if (!/^[A-Za-z0-9.:_-]{1,253}$/.test(flags.host)) {
        throw userError(
          'BAD_ARGUMENT',
          `--host ${JSON.stringify(flags.host.slice(0, 60))} is not a host name or address`,
          'e.g. --host 127.0.0.1',
        );
      }
      const cpus = serveCpus(flags.cores);
      for (const k of flags.trust ?? []) readTrustedKey(k); // a bad --trust is refused before any model is read
      const models = resolveModels({
        bundles,
        ...(flags.repo ? { repo: flags.repo } : {}),
        ...(flags.config ? { config: flags.config } : {}),
      });
      const metrics = createMetrics();
      const { backend, summaries } = await backendFor(flags, models, cpus, note, metrics);
      const server = await startServer({ backend, metrics, host: flags.host, port, bodyLimit, limits, signals: true });
      if (flags.json) {
        printJson({
          url: server.url,
          backend: backend.name,
          policy: flags.backend === 'veltair' ? flags.policy : 'fcfs',
          cores: cpus,
          models: backend.models.map((m) => ({ name: m.name, qosMs: m.qosMs })),
        });
      } else {
        printLine(`veltair serve: ${backend.name} backend, policy ${flags.policy}, cores ${cpus.join(',')}, listening on ${server.url}`);
      }
      for (const s of summaries) note(s);
      if (!process.execArgv.includes(SINGLE_THREADED_GC)) {
        note(
          `veltair serve: node runs without ${SINGLE_THREADED_GC}, so V8's collector threads can take the kernels' cores; ` +
            `start the server as bin/veltair does (\`node ${SINGLE_THREADED_GC} bin/veltair serve …\`)`,
        );
      }
      const report = await server.closed;
      if (report.cutShort) {
        const why = report.hurried
          ? 'a second signal cut the drain short'
          : `the drain deadline (--drain-timeout-ms ${limits.drainTimeoutMs}) came first`;
        note(`veltair serve: ${why}: ${report.connectionsCut} connection(s) cut off`);
        // main() answers 0 for a command that returned; a cut-short drain must not look like a clean one.
        process.exit(DRAIN_CUT_SHORT_EXIT);
      }
    });
}
