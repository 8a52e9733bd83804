/**
 * Live serving: the highest total QPS at which every model of a mix keeps ≥ 99% of its requests
 * within QoS, for each scheduling policy of `veltair serve` and for ONNX Runtime FCFS behind the
 * same front end — each arm a fresh server process on the same cores (taskset), with the same
 * glibc malloc tunables, the same QoS, the same seeded open-loop load (veltair load's generator in
 * this process, binary tensors), arms interleaved over rounds (order reversed every other round).
 * Beside each policy: what `veltair simulate` predicts for the same profiles, cores and QoS.
 *
 *   npm run build && node dist/src/bench/serve-bench.js --mix NAME=BUNDLE,BUNDLE… [--mix …]
 *     [--arms ort,fcfs,prema,layerwise,static:6,veltair-compile,veltair-sched,veltair]
 *     [--cores 0,1] [--qos-multiple 5] [--duration 4] [--rounds 2] [--seed 1] [--json-out FILE]
 *
 * QoS per model: `--qos-multiple` × its quiet latency through the server (median of 20 sequential
 * requests on the veltair fcfs server of the mix, HTTP included), stated in the output.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { repoRoot } from '../toolchain/paths.js';
import { availableCores } from '../toolchain/cpu.js';
import { median } from '../stats.js';
import { findMaxQps, requestFor, type LoadModel, type LoadResult, type Metadata } from '../serve/load.js';
import { machineInfo, machineLine } from './machine.js';
import { ORT_MALLOC_TUNABLES } from './pinned-child.js';

interface Mix { readonly name: string; readonly bundles: readonly string[] }

interface Args {
  mixes: Mix[];
  arms: string[];
  cores: number[];
  qosMultiple: number;
  durationS: number;
  rounds: number;
  seed: number;
  jsonOut?: string;
}

function parseArgs(argv: readonly string[]): Args {
  const a: Args = {
    mixes: [], arms: ['ort', 'fcfs', 'prema', 'layerwise', 'static:6', 'veltair-compile', 'veltair-sched', 'veltair'],
    cores: availableCores(), qosMultiple: 5, durationS: 4, rounds: 2, seed: 1,
  };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1] ?? '';
    switch (argv[i]) {
      case '--mix': { const [n, list] = v.split('='); a.mixes.push({ name: n!, bundles: list!.split(',').map((b) => resolve(b)) }); i++; break; }
      case '--arms': a.arms = v.split(','); i++; break;
      case '--cores': a.cores = v.split(',').map(Number); i++; break;
      case '--qos-multiple': a.qosMultiple = Number(v); i++; break;
      case '--duration': a.durationS = Number(v); i++; break;
      case '--rounds': a.rounds = Number(v); i++; break;
      case '--seed': a.seed = Number(v); i++; break;
      case '--json-out': a.jsonOut = v; i++; break;
      default: throw new Error(`unknown argument ${argv[i]}`);
    }
  }
  if (a.mixes.length === 0) throw new Error('give at least one --mix NAME=BUNDLE,BUNDLE');
  return a;
}

const nameOf = (bundle: string) => basename(bundle).replace(/\.bundle$/, '');

interface Server { readonly child: ResultPromise; readonly url: string }

async function startServe(args: readonly string[], cores: readonly number[]): Promise<Server> {
  const bin = join(repoRoot(), 'bin', 'veltair');
  const child = execa('taskset', ['-c', cores.join(','), process.execPath, bin, 'serve', ...args, '--port', '0', '--json'],
    { reject: false, stdin: 'ignore', buffer: false, env: { GLIBC_TUNABLES: ORT_MALLOC_TUNABLES } });
  const url = await new Promise<string>((res, rej) => {
    let out = '', err = '';
    child.stdout!.on('data', (d: Buffer) => { out += d.toString(); try { res(String((JSON.parse(out) as { url: string }).url)); } catch { /* partial */ } });
    child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
    void child.then((r) => rej(new Error(`serve ${args.join(' ')} exited ${r.exitCode}: ${err.slice(-600)}`)));
  });
  return { child, url };
}

async function stopServe(s: Server): Promise<void> {
  s.child.kill('SIGTERM');
  await s.child;
}

async function modelsOf(url: string, names: readonly string[], qos: ReadonlyMap<string, number>, seed: number): Promise<LoadModel[]> {
  const out: LoadModel[] = [];
  for (const [i, name] of names.entries()) {
    const meta = await (await fetch(`${url}/v2/models/${name}`)).json() as Metadata;
    out.push({ name, weight: 1, qosMs: qos.get(name) ?? meta.parameters?.qos_ms ?? 1000, ...requestFor(meta, seed + i * 101, false) });
  }
  return out;
}

/** Median latency of 20 sequential requests per model (after 3 warm-ups), HTTP included. */
async function quietLatencies(url: string, models: readonly LoadModel[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of models) {
    const one = async () => {
      const t0 = performance.now();
      const r = await fetch(`${url}/v2/models/${m.name}/infer`, { method: 'POST', headers: m.headers, body: m.body as BodyInit });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`${m.name}: ${r.status}`);
      return performance.now() - t0;
    };
    for (let i = 0; i < 3; i++) await one();
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) samples.push(await one());
    out.set(m.name, median(samples));
  }
  return out;
}

async function warm(url: string, models: readonly LoadModel[]): Promise<void> {
  for (const m of models) {
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${url}/v2/models/${m.name}/infer`, { method: 'POST', headers: m.headers, body: m.body as BodyInit });
      await r.arrayBuffer();
    }
  }
}

async function simulated(mix: Mix, policy: string, cores: number, qos: ReadonlyMap<string, number>, seed: number): Promise<number | null> {
  const bin = join(repoRoot(), 'bin', 'veltair');
  const r = await execa(process.execPath, [bin, 'simulate', '--profiles', mix.bundles.join(','), '--models', mix.bundles.map(nameOf).join(','),
    '--cores', String(cores), '--policy', policy, '--find-max', '--seed', String(seed), '--duration', '20',
    ...[...qos].flatMap(([n, ms]) => ['--qos', `${n}=${ms.toFixed(3)}`]), '--json'], { reject: false });
  if (r.exitCode !== 0) return null;
  const out = JSON.parse(r.stdout) as { maxQps?: { policy: string; maxQps: number }[] };
  return out.maxQps?.find((m) => m.policy === policy)?.maxQps ?? null;
}

interface ArmResult { arm: string; maxQps: number[]; simulatedQps: number | null; runs: LoadResult[][] }

async function benchMix(mix: Mix, a: Args, log: (s: string) => void) {
  const names = mix.bundles.map(nameOf);
  const work = mkdtempSync(join(tmpdir(), `veltair-serve-bench-${mix.name}-`));
  // Quiet latencies on the fcfs server: the QoS every arm is held to.
  const probe = await startServe([...mix.bundles, '--policy', 'fcfs'], a.cores);
  const probeModels = await modelsOf(probe.url, names, new Map(), a.seed);
  const quiet = await quietLatencies(probe.url, probeModels);
  await stopServe(probe);
  const qos = new Map([...quiet].map(([n, ms]) => [n, a.qosMultiple * ms]));
  log(`mix ${mix.name}: quiet ${[...quiet].map(([n, ms]) => `${n} ${ms.toFixed(2)} ms`).join(', ')}; QoS ${a.qosMultiple}× that`);
  const config = join(work, 'veltair-serve.json');
  writeFileSync(config, JSON.stringify({ models: Object.fromEntries(names.map((n, i) => [n, { bundle: mix.bundles[i], qosMs: qos.get(n) }])) }));
  const results = new Map<string, ArmResult>(a.arms.map((arm) => [arm, { arm, maxQps: [], simulatedQps: null, runs: [] }]));
  const start = [...quiet].reduce((s, [, ms]) => s + 1000 / ms, 0) / names.length / 2;
  for (let round = 0; round < a.rounds; round++) {
    const order = round % 2 === 0 ? a.arms : [...a.arms].reverse();
    for (const arm of order) {
      const flags = arm === 'ort' ? ['--backend', 'onnxruntime'] : ['--policy', arm];
      const server = await startServe(['--config', config, ...flags], a.cores);
      try {
        const models = await modelsOf(server.url, names, qos, a.seed);
        await warm(server.url, models);
        const found = await findMaxQps(new URL(server.url), models, { durationS: a.durationS, seed: a.seed + round * 1000, startQps: start, tolerance: 1.1 });
        results.get(arm)!.maxQps.push(found.maxQps);
        results.get(arm)!.runs.push(found.runs);
        log(`  round ${round + 1} ${arm}: max ${found.maxQps.toFixed(2)} QPS (${found.runs.length} runs)`);
      } finally {
        await stopServe(server);
      }
    }
  }
  for (const arm of a.arms.filter((x) => x !== 'ort')) results.get(arm)!.simulatedQps = await simulated(mix, arm, a.cores.length, qos, a.seed);
  return { mix: mix.name, models: names, quietMs: Object.fromEntries(quiet), qosMs: Object.fromEntries(qos), arms: [...results.values()] };
}

function table(r: Awaited<ReturnType<typeof benchMix>>): string {
  const med = (xs: readonly number[]) => (xs.length > 0 ? median(xs) : Number.NaN);
  const ort = med(r.arms.find((x) => x.arm === 'ort')?.maxQps ?? []);
  const fcfs = med(r.arms.find((x) => x.arm === 'fcfs')?.maxQps ?? []);
  const rows = r.arms.map((x) => {
    const live = med(x.maxQps);
    const sim = x.simulatedQps;
    return `| ${x.arm === 'ort' ? 'ONNX Runtime FCFS' : x.arm} | ${x.maxQps.map((q) => q.toFixed(2)).join(' / ')} | ${live.toFixed(2)} | `
      + `${Number.isFinite(ort) && ort > 0 ? (live / ort).toFixed(2) : '-'} | ${Number.isFinite(fcfs) && fcfs > 0 ? (live / fcfs).toFixed(2) : '-'} | `
      + `${sim === null ? '-' : `${sim.toFixed(2)} (simulated)`} | ${sim === null || live <= 0 ? '-' : (sim / live).toFixed(2)} |`;
  });
  return ['| arm | max QPS per round (live) | median | × ORT FCFS | × veltair fcfs | simulator predicts | sim / live |',
    '|---|---|---|---|---|---|---|', ...rows].join('\n');
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const machine = await machineInfo();
  const out = [];
  for (const mix of a.mixes) out.push(await benchMix(mix, a, (s) => process.stderr.write(`${s}\n`)));
  if (a.jsonOut) writeFileSync(a.jsonOut, JSON.stringify({ machine, args: a, results: out }, null, 2));
  const command = `node dist/src/bench/serve-bench.js ${process.argv.slice(2).join(' ')}`;
  console.log(`### Live serving (${machineLine(machine)}, ${new Date().toISOString().slice(0, 10)})\n\nCommand: \`${command}\`\n`);
  for (const r of out) {
    console.log(`#### Mix ${r.mix}: ${r.models.join(', ')} on cores ${a.cores.join(',')}`);
    console.log(`QoS: ${r.models.map((m) => `${m} ${r.qosMs[m]!.toFixed(1)} ms (${a.qosMultiple} × quiet ${r.quietMs[m]!.toFixed(2)} ms)`).join('; ')}\n`);
    console.log(table(r), '\n');
  }
}

await main();
