/**
 * ONNX Runtime's single-layer baseline in its own child process, so that it can be
 *  - pinned from birth (taskset) to the cores the veltair kernel used, every thread it makes, and
 *  - started with glibc's malloc told never to return memory to the OS between runs.
 * Why the second: with glibc's defaults, ORT (1.x, CPU EP) frees and re-maps its large per-run
 * buffers, and a run can then spend much of its time in page faults. Benchmarking against that
 * mode would flatter veltair; the baseline must be ORT at its best. How much it matters on a
 * machine: `node dist/src/bench/ort-malloc.js` (same layer, same session options, both settings,
 * interleaved); bench/RESULTS.md has the figure with its date and machine.
 *
 * Protocol (pinned-child.ts): request `{workload, threads, minMs}`, reply
 * `{medianMs, samplesMs, overheadMs, ortVersion}`.
 */
import { fileURLToPath } from 'node:url';
import type { Workload } from '../ir/workload.js';
import { measureOrtLayer } from './layer.js';
import { serveJsonLines, startPinnedChild } from './pinned-child.js';

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

export async function startOrtChild(cores: readonly number[], o: { mallocTunables?: boolean } = {}): Promise<OrtChild> {
  const child = await startPinnedChild(fileURLToPath(import.meta.url), cores, o);
  return {
    pinned: child.pinned,
    measure: (workload, threads, minMs) => child.ask<OrtChildTiming>({ workload, threads, minMs }),
    close: () => child.close(),
  };
}

async function serve(): Promise<void> {
  const seen = new Set<string>();
  await serveJsonLines(async (raw) => {
    const req = raw as unknown as { workload: Workload; threads: number; minMs: number };
    // A fresh process (and a workload with bigger buffers) first grows the heap, page-faulting
    // through its first runs: a warm-up that is not reported.
    if (!seen.has(req.workload.key)) await measureOrtLayer(req.workload, { threads: req.threads, minMs: req.minMs / 2 });
    seen.add(req.workload.key);
    const t = await measureOrtLayer(req.workload, { threads: req.threads, minMs: req.minMs });
    return { medianMs: t.medianMs, samplesMs: t.samplesMs, overheadMs: t.overhead.medianMs, ortVersion: t.ortVersion };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--serve') await serve();
