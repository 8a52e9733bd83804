/**
 * ONNX Runtime on a whole model, in its own child process: pinned from birth (taskset) to the
 * cores veltair's kernels use, and with glibc's malloc told to keep freed memory (the tunables of
 * measure/ort-child.ts, for the reason given there: otherwise ORT spends its runs in page faults
 * on this VM and the baseline would flatter veltair). Same session options as the per-layer
 * baseline: all graph optimisations, sequential execution, intra-op threads = veltair's threads.
 *
 * Protocol: one JSON request per stdin line, one reply per stdout line:
 *   {id, op: 'load', model, threads, inputs: ManifestTensorInfo[]} → {id, ortVersion}
 *   {id, op: 'run', runs}  → {id, samplesMs}   (one unreported warm-up run first)
 *   any failure            → {id, error}
 */
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { execa, type ResultPromise } from 'execa';
import type { ManifestTensorInfo } from '../bundle/manifest.js';
import { ORT_MALLOC_TUNABLES } from '../measure/ort-child.js';
import { modelFeeds } from './bench-feeds.js';

export interface OrtModelChild {
  readonly pinned: boolean;
  load(model: string, threads: number, inputs: readonly ManifestTensorInfo[]): Promise<{ ortVersion: string }>;
  run(runs: number): Promise<number[]>;
  close(): Promise<void>;
}

interface Reply { id: number; error?: string; ortVersion?: string; samplesMs?: number[] }

async function hasTaskset(): Promise<boolean> {
  try {
    await execa('taskset', ['--version'], { stdin: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function startOrtModelChild(cores: readonly number[]): Promise<OrtModelChild> {
  const script = fileURLToPath(import.meta.url);
  const pinned = await hasTaskset();
  const [cmd, args] = pinned
    ? ['taskset', ['-c', cores.join(','), process.execPath, script, '--serve']]
    : [process.execPath, [script, '--serve']];
  const tunables = [process.env['GLIBC_TUNABLES'], ORT_MALLOC_TUNABLES].filter(Boolean).join(':');
  const child: ResultPromise = execa(cmd, args as string[], {
    env: { GLIBC_TUNABLES: tunables }, stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', buffer: false, reject: false,
  });
  const pending = new Map<number, (r: Reply) => void>();
  const stderr: string[] = [];
  child.stderr?.on('data', (d: Buffer) => { if (stderr.length < 20) stderr.push(d.toString()); });
  createInterface({ input: child.stdout! }).on('line', (text) => {
    let r: Reply;
    try { r = JSON.parse(text) as Reply; } catch { return; }
    pending.get(r.id)?.(r);
    pending.delete(r.id);
  });
  const exited = child.then(() => {
    for (const [id, resolve] of pending) resolve({ id, error: `ONNX Runtime child exited: ${stderr.join('').split('\n')[0] || 'no output'}` });
    pending.clear();
  });
  let next = 0;
  const ask = (req: Record<string, unknown>) => new Promise<Reply>((resolve, reject) => {
    const id = next++;
    pending.set(id, (r) => (r.error !== undefined ? reject(new Error(r.error)) : resolve(r)));
    if (child.exitCode !== null || !child.stdin?.writable) {
      pending.delete(id);
      reject(new Error(`ONNX Runtime child is not running: ${stderr.join('').split('\n')[0] || 'no output'}`));
      return;
    }
    child.stdin.write(JSON.stringify({ ...req, id }) + '\n');
  });
  return {
    pinned,
    async load(model, threads, inputs) { return { ortVersion: (await ask({ op: 'load', model, threads, inputs })).ortVersion ?? 'unknown' }; },
    async run(runs) { return (await ask({ op: 'run', runs })).samplesMs!; },
    async close() {
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function serve(): Promise<void> {
  const ort = await import('onnxruntime-node');
  let session: import('onnxruntime-node').InferenceSession | undefined;
  let feeds: Record<string, import('onnxruntime-node').Tensor> = {};
  const lines = createInterface({ input: process.stdin });
  for await (const text of lines) {
    let id = -1;
    try {
      const req = JSON.parse(text) as { id: number; op: string; model?: string; threads?: number; inputs?: ManifestTensorInfo[]; runs?: number };
      id = req.id;
      if (req.op === 'load') {
        await session?.release();
        session = await ort.InferenceSession.create(req.model!, {
          intraOpNumThreads: req.threads!, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
        });
        const data = modelFeeds(req.inputs!);
        feeds = Object.fromEntries(req.inputs!.map((t, i) => [t.name, new ort.Tensor(t.dtype as 'float32', data[i] as Float32Array, [...t.shape])]));
        await session.run(feeds);
        process.stdout.write(JSON.stringify({ id, ortVersion: ort.env.versions.node ?? 'unknown' }) + '\n');
      } else if (req.op === 'run') {
        if (!session) throw new Error('no model loaded');
        await session.run(feeds);
        const samplesMs: number[] = [];
        for (let i = 0; i < req.runs!; i++) {
          const t0 = process.hrtime.bigint();
          await session.run(feeds);
          samplesMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        process.stdout.write(JSON.stringify({ id, samplesMs }) + '\n');
      } else {
        throw new Error(`unknown request ${JSON.stringify(req.op)}`);
      }
    } catch (e) {
      process.stdout.write(JSON.stringify({ id, error: (e instanceof Error ? e.message : String(e)).split('\n')[0] }) + '\n');
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--serve') await serve();
