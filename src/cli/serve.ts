/**
 * `veltair serve [BUNDLE…] [--repo DIR] [--config FILE] [--host H] [--port P] [--policy P]
 *  [--cores N|LIST] [--qos-multiple X] [--max-body-bytes B] [--backend veltair|onnxruntime] [--json]`
 *
 * A KServe v2 / Triton HTTP server over the scheduler (src/serve/). Binds 127.0.0.1 unless --host
 * says otherwise. --cores: how many of this process's cores to use (default: all of them, or the
 * pod's CPU limit if lower), or an explicit list. Prints the URL and one line per model (QoS,
 * profile, requirements) on stderr, or one JSON object on stdout with --json, then serves until
 * SIGTERM/SIGINT, drains and exits 0.
 */
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { parsePolicy } from '../schedule/policies.js';
import { resolveModels, type ModelConfig } from '../serve/config.js';
import { createMetrics } from '../serve/metrics.js';
import { setupDispatcher } from '../serve/setup.js';
import { startServer } from '../serve/start.js';
import type { Backend } from '../serve/backend.js';
import { availableCores, cgroupCpuLimit, parseCoreList } from '../toolchain/cpu.js';
import { badArgument, parsePositiveInt } from '../terminal/args.js';
import { note, printJson, printLine } from '../terminal/output.js';
import { loadBenchRoom } from './bench-room.js';

interface ServeFlags {
  repo?: string;
  config?: string;
  host: string;
  port: string;
  policy: string;
  cores?: string;
  qosMultiple: string;
  maxBodyBytes: string;
  backend: string;
  json?: boolean;
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

function parseMultiple(text: string): number {
  const x = Number(text);
  if (!(x >= 1 && x <= 1000)) throw badArgument('--qos-multiple', text, 'is not a number from 1 to 1000', 'e.g. --qos-multiple 4');
  return x;
}

async function backendFor(flags: ServeFlags, models: readonly ModelConfig[], cpus: readonly number[], say: (s: string) => void,
  metrics: ReturnType<typeof createMetrics>): Promise<{ backend: Backend; summaries: readonly string[] }> {
  const qosMultiple = parseMultiple(flags.qosMultiple);
  if (flags.backend === 'veltair') {
    const setup = await setupDispatcher({ models, policy: parsePolicy(flags.policy), cpus, metrics, qosMultiple, onProgress: say });
    return { backend: setup.dispatcher, summaries: setup.summaries };
  }
  if (flags.backend === 'onnxruntime') {
    const ort = await loadBenchRoom('ort-backend');
    return ort.createOrtBackend({ models, cpus, qosMultiple });
  }
  throw badArgument('--backend', flags.backend, 'is not veltair or onnxruntime', 'the ONNX Runtime backend is the baseline: --backend onnxruntime');
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve bundles over the KServe v2 / Triton HTTP protocol, many models sharing the CPU through the scheduler')
    .argument('[bundles...]', 'bundle directories (the model name is the directory name without .bundle)')
    .option('--repo <dir>', 'a model repository: every sub-directory holding a bundle (and an optional veltair-serve.json)')
    .option('--config <file>', 'per-model settings: {"models": {NAME: {bundle, qosMs, priority, maxQueue, replicas, profile}}}')
    .option('--host <host>', 'address to bind (a non-loopback address serves the network: put it behind your own access control)', '127.0.0.1')
    .option('--port <port>', 'TCP port (0: any free port)', '8000')
    .option('--policy <policy>', 'scheduling policy: veltair, veltair-sched, veltair-compile, fcfs, prema, layerwise, static:K', 'veltair')
    .option('--cores <n|list>', 'cores to use: a count (the first N) or a list such as 0,1 (default: all, or the pod\'s CPU limit)')
    .option('--qos-multiple <x>', 'QoS of a model with none configured: X times its fastest quiet latency here', '4')
    .option('--max-body-bytes <n>', 'largest request body accepted', String(64 * 1024 * 1024))
    .option('--backend <name>', 'veltair, or onnxruntime (the baseline: one InferenceSession per model, first come first served)', 'veltair')
    .option('--json', 'print {url, models, policy, cores} as JSON on stdout once listening')
    .action(async (bundles: string[], flags: ServeFlags) => {
      const port = parsePort(flags.port);
      const bodyLimit = parsePositiveInt('--max-body-bytes', flags.maxBodyBytes, 2 ** 31);
      parseMultiple(flags.qosMultiple);
      parsePolicy(flags.policy);
      if (!/^[A-Za-z0-9.:_-]{1,253}$/.test(flags.host)) {
        throw userError('BAD_ARGUMENT', `--host ${JSON.stringify(flags.host.slice(0, 60))} is not a host name or address`, 'e.g. --host 127.0.0.1');
      }
      const cpus = serveCpus(flags.cores);
      const models = resolveModels({ bundles, ...(flags.repo ? { repo: flags.repo } : {}), ...(flags.config ? { config: flags.config } : {}) });
      const metrics = createMetrics();
      const { backend, summaries } = await backendFor(flags, models, cpus, note, metrics);
      const server = await startServer({ backend, metrics, host: flags.host, port, bodyLimit, signals: true });
      if (flags.json) {
        printJson({ url: server.url, backend: backend.name, policy: flags.backend === 'veltair' ? flags.policy : 'fcfs', cores: cpus,
          models: backend.models.map((m) => ({ name: m.name, qosMs: m.qosMs })) });
      } else {
        printLine(`veltair serve: ${backend.name} backend, policy ${flags.policy}, cores ${cpus.join(',')}, listening on ${server.url}`);
      }
      for (const s of summaries) note(s);
      await server.closed;
    });
}
