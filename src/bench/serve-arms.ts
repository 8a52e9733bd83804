/**
 * The arms of serve-bench, and the servers each one runs. An arm is a label: a kind, optionally
 * `#n` to run the same kind twice (`--arms fcfs,fcfs` → `fcfs`, `fcfs#2`, the identical-arms check
 * of resolution). Kinds:
 *   ort            ONNX Runtime, one session per model on every core, all requests FCFS (today's baseline);
 *   ort-pinned     one ONNX Runtime server per model, each pinned (taskset) to its own core subset, the
 *                  split chosen per mix by measurement (pinned-split.ts);
 *   ort-instances  per model, as many 1-thread ONNX Runtime instances as cores sharing its queue (config `replicas`);
 *   anything else  a `veltair serve --policy` (fcfs, prema, layerwise, static:N, veltair, …); among them
 *                  `veltair-partition`, the static split of the cores that veltair's chooser predicts best
 *                  for an even load (partition.ts), set against `ort-pinned`'s measured split.
 * Every server is `veltair serve` — the same HTTP front end — started under taskset with the same
 * glibc malloc tunables; the load generator reaches each model at its server's URL.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServeProcess, stopServeProcess, type ServeProcess } from '../load/serve-process.js';
import type { Split } from './pinned-split.js';

export const ORT_KINDS = ['ort', 'ort-pinned', 'ort-instances'] as const;

export interface Arm {
  readonly label: string;
  readonly kind: string;
}

/** Labels from `--arms`: a kind named again gets `#2`, `#3`… */
export function parseArms(text: string): Arm[] {
  const seen = new Map<string, number>();
  return text
    .split(',')
    .filter((k) => k.length > 0)
    .map((kind) => {
      const n = (seen.get(kind) ?? 0) + 1;
      seen.set(kind, n);
      return { label: n === 1 ? kind : `${kind}#${n}`, kind };
    });
}

export const isOrt = (kind: string) => (ORT_KINDS as readonly string[]).includes(kind);

export interface ArmServers {
  /** Model name → the URL of the server answering it. */
  readonly urls: ReadonlyMap<string, string>;
  /** The server processes' ids: their CPU is the arm's own, not outside noise. */
  readonly pids: readonly number[];
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

/** The serve config of the given models of the mix (every arm's servers, and the in-process transport's backends, read one). */
export function writeConfig(ctx: ArmContext, file: string, models: readonly number[], extra: Record<string, unknown> = {}): string {
  const path = join(ctx.work, file);
  writeFileSync(
    path,
    JSON.stringify({
      models: Object.fromEntries(models.map((i) => [ctx.names[i]!, { bundle: ctx.bundles[i], qosMs: ctx.qosMs[ctx.names[i]!], ...extra }])),
    }),
  );
  return path;
}

/** Start the servers of one arm; every model of the mix is answered by one of them. */
export async function startArm(kind: string, ctx: ArmContext): Promise<ArmServers> {
  const all = ctx.names.map((_, i) => i);
  const one = async (args: string[], cores: readonly number[], models: readonly number[]) => ({
    server: await startServeProcess(args, cores),
    models,
  });
  let started: { server: ServeProcess; models: readonly number[] }[] = [];
  try {
    if (kind === 'ort') {
      started = [await one(['--config', writeConfig(ctx, 'ort.json', all), '--backend', 'onnxruntime'], ctx.cores, all)];
    } else if (kind === 'ort-instances') {
      const config = writeConfig(ctx, 'ort-instances.json', all, { replicas: ctx.cores.length });
      started = [await one(['--config', config, '--backend', 'onnxruntime'], ctx.cores, all)];
    } else if (kind === 'ort-pinned') {
      if (!ctx.split) throw new Error('ort-pinned needs a core split');
      for (const i of all) {
        started.push(
          await one(['--config', writeConfig(ctx, `ort-pinned-${i}.json`, [i]), '--backend', 'onnxruntime'], ctx.split[i]!, [i]),
        );
      }
    } else {
      started = [await one(['--config', writeConfig(ctx, 'veltair.json', all), '--policy', kind], ctx.cores, all)];
    }
  } catch (e) {
    await Promise.all(started.map((s) => stopServeProcess(s.server)));
    throw e;
  }
  const urls = new Map<string, string>();
  for (const s of started) for (const i of s.models) urls.set(ctx.names[i]!, s.server.url);
  const pids = started.map((s) => s.server.child.pid).filter((p): p is number => p !== undefined);
  return {
    urls,
    pids,
    stop: async () => {
      await Promise.all(started.map((s) => stopServeProcess(s.server)));
    },
  };
}
