/**
 * ONNX Runtime's single-layer baseline in its own child process, so that it can be
 *  - pinned from birth (taskset) to the cores the veltair kernel used, every thread it makes, and
 *  - started with glibc's malloc told never to return memory to the OS between runs.
 * Why the second: with glibc's defaults, ORT (1.x, CPU EP) on this kind of VM frees and re-maps
 * its large per-run buffers, and a run then spends most of its time in page faults — measured on
 * a ResNet-50 1x1 conv (64>256, 56x56): median 10.2 ms per run with the defaults, 0.94 ms with
 * the tunables below, the same model and session options. Benchmarking against the slow mode
 * would flatter veltair; the baseline must be ORT at its best.
 *
 * Protocol: one JSON request per stdin line `{id, workload, threads, minMs}`, one JSON reply per
 * stdout line `{id, medianMs, samplesMs, overheadMs, ortVersion}` or `{id, error}`.
 */
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { execa, type ResultPromise } from 'execa';
import type { Workload } from '../ir/workload.js';
import { measureOrtLayer } from './ort-layer.js';

/** Large thresholds: freed memory stays in the heap and is reused, as a tuned deployment would. */
export const ORT_MALLOC_TUNABLES = 'glibc.malloc.trim_threshold=4294967295:glibc.malloc.mmap_threshold=33554432:glibc.malloc.top_pad=268435456';

export interface OrtChildTiming {
  readonly medianMs: number;
  readonly samplesMs: readonly number[];
  readonly overheadMs: number;
  readonly ortVersion: string;
}

export interface OrtChild {
  /** Whether the child was started under taskset on the requested cores. */
  readonly pinned: boolean;
  measure(w: Workload, threads: number, minMs: number): Promise<OrtChildTiming>;
  close(): Promise<void>;
}

interface Reply { id: number; error?: string; medianMs?: number; samplesMs?: number[]; overheadMs?: number; ortVersion?: string }

async function hasTaskset(): Promise<boolean> {
  try {
    await execa('taskset', ['--version'], { stdin: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function startOrtChild(cores: readonly number[]): Promise<OrtChild> {
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
  const lines = createInterface({ input: child.stdout! });
  lines.on('line', (text) => {
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
  return {
    pinned,
    measure(w, threads, minMs) {
      const id = next++;
      return new Promise<OrtChildTiming>((resolve, reject) => {
        pending.set(id, (r) => (r.error !== undefined ? reject(new Error(r.error))
          : resolve({ medianMs: r.medianMs!, samplesMs: r.samplesMs!, overheadMs: r.overheadMs!, ortVersion: r.ortVersion! })));
        if (child.exitCode !== null || !child.stdin?.writable) {
          pending.delete(id);
          reject(new Error(`ONNX Runtime child is not running: ${stderr.join('').split('\n')[0] || 'no output'}`));
          return;
        }
        child.stdin.write(JSON.stringify({ id, workload: w, threads, minMs }) + '\n');
      });
    },
    async close() {
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function serve(): Promise<void> {
  const lines = createInterface({ input: process.stdin });
  const seen = new Set<string>();
  for await (const text of lines) {
    let id = -1;
    try {
      const req = JSON.parse(text) as { id: number; workload: Workload; threads: number; minMs: number };
      id = req.id;
      // A fresh process (and a workload with bigger buffers) first grows the heap, page-faulting
      // through its first runs: a warm-up that is not reported.
      if (!seen.has(req.workload.key)) await measureOrtLayer(req.workload, { threads: req.threads, minMs: req.minMs / 2 });
      seen.add(req.workload.key);
      const t = await measureOrtLayer(req.workload, { threads: req.threads, minMs: req.minMs });
      process.stdout.write(JSON.stringify({ id, medianMs: t.medianMs, samplesMs: t.samplesMs, overheadMs: t.overhead.medianMs, ortVersion: t.ortVersion }) + '\n');
    } catch (e) {
      process.stdout.write(JSON.stringify({ id, error: (e instanceof Error ? e.message : String(e)).split('\n')[0] }) + '\n');
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--serve') await serve();
