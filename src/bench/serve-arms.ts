/**
 * The arms of serve-bench, and the servers each one runs. An arm is a label: a kind, optionally
 * `#n` to run the same kind twice (`--arms fcfs,fcfs` → `fcfs`, `fcfs#2`, the identical-arms check
 * of resolution). Kinds:
 *   ort            ONNX Runtime, one session per model on every core, all requests FCFS (today's baseline);
 *   ort-pinned     one ONNX Runtime server per model, each pinned (taskset) to its own core subset, the
 *                  split chosen per mix by measurement (pinned-split.ts);
 *   ort-instances  per model, as many 1-thread ONNX Runtime instances as cores sharing its queue (config `replicas`);
 *   anything else  a `veltair serve --policy` (fcfs, prema, layerwise, static:N, veltair, …).
 * Every server is `veltair serve` — the same HTTP front end — started under taskset with the same
 * glibc malloc tunables; the load generator reaches each model at its server's URL.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { repoRoot } from '../toolchain/paths.js';
import { ORT_MALLOC_TUNABLES } from './pinned-child.js';
import type { Split } from './pinned-split.js';

export const ORT_KINDS = ['ort', 'ort-pinned', 'ort-instances'] as const;

export interface Arm { readonly label: string; readonly kind: string }

/** Labels from `--arms`: a kind named again gets `#2`, `#3`… */
export function parseArms(text: string): Arm[] {
  const seen = new Map<string, number>();
  return text.split(',').filter((k) => k.length > 0).map((kind) => {
    const n = (seen.get(kind) ?? 0) + 1;
    seen.set(kind, n);
    return { label: n === 1 ? kind : `${kind}#${n}`, kind };
  });
}

export const isOrt = (kind: string) => (ORT_KINDS as readonly string[]).includes(kind);

interface Server { readonly child: ResultPromise; readonly url: string }

export async function startServe(args: readonly string[], cores: readonly number[]): Promise<Server> {
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

export interface ArmServers {
  /** Model name → the URL of the server answering it. */
  readonly urls: ReadonlyMap<string, string>;
  stop(): Promise<void>;
}

export interface ArmContext {
  readonly names: readonly string[];
  readonly bundles: readonly string[];
  readonly qosMs: Readonly<Record<string, number>>;
  readonly cores: readonly number[];
  /** A scratch directory for the arm's serve configs. */
  readonly work: string;
  /** ort-pinned: the core subset of each model. */
  readonly split?: Split;
}

function writeConfig(ctx: ArmContext, file: string, models: readonly number[], extra: Record<string, unknown> = {}): string {
  const path = join(ctx.work, file);
  writeFileSync(path, JSON.stringify({
    models: Object.fromEntries(models.map((i) => [ctx.names[i]!, { bundle: ctx.bundles[i], qosMs: ctx.qosMs[ctx.names[i]!], ...extra }])),
  }));
  return path;
}

/** Start the servers of one arm; every model of the mix is answered by one of them. */
export async function startArm(kind: string, ctx: ArmContext): Promise<ArmServers> {
  const all = ctx.names.map((_, i) => i);
  const one = async (args: string[], cores: readonly number[], models: readonly number[]) => ({ server: await startServe(args, cores), models });
  let started: { server: Server; models: readonly number[] }[] = [];
  try {
    if (kind === 'ort') {
      started = [await one(['--config', writeConfig(ctx, 'ort.json', all), '--backend', 'onnxruntime'], ctx.cores, all)];
    } else if (kind === 'ort-instances') {
      const config = writeConfig(ctx, 'ort-instances.json', all, { replicas: ctx.cores.length });
      started = [await one(['--config', config, '--backend', 'onnxruntime'], ctx.cores, all)];
    } else if (kind === 'ort-pinned') {
      if (!ctx.split) throw new Error('ort-pinned needs a core split');
      for (const i of all) {
        started.push(await one(['--config', writeConfig(ctx, `ort-pinned-${i}.json`, [i]), '--backend', 'onnxruntime'], ctx.split[i]!, [i]));
      }
    } else {
      started = [await one(['--config', writeConfig(ctx, 'veltair.json', all), '--policy', kind], ctx.cores, all)];
    }
  } catch (e) {
    await Promise.all(started.map((s) => stopServe(s.server)));
    throw e;
  }
  const urls = new Map<string, string>();
  for (const s of started) for (const i of s.models) urls.set(ctx.names[i]!, s.server.url);
  return { urls, stop: async () => { await Promise.all(started.map((s) => stopServe(s.server))); } };
}
