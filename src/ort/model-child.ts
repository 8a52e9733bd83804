/**
 * ONNX Runtime on a whole model, in its own child process: pinned from birth (taskset) to the
 * cores veltair's kernels use, and with glibc's malloc told to keep freed memory (the tunables of
 * ort-layer-child.ts, for the reason given there: otherwise ORT spends its runs in page faults
 * on this VM and the baseline would flatter veltair). Same session options as the per-layer
 * baseline: all graph optimisations, sequential execution, intra-op threads = veltair's threads.
 *
 * Protocol (measure/pinned-child.ts):
 *   {op: 'load', model, threads, inputs: ManifestTensorInfo[]} → {ortVersion}
 *   {op: 'run', runs}  → {samplesMs}   (one unreported warm-up run first)
 */
import { fileURLToPath } from 'node:url';
import type { ManifestTensorInfo } from '../bundle/manifest.js';
import { serveJsonLines, startPinnedChild } from './pinned-child.js';
import { modelFeeds } from '../compile/feeds.js';

export interface OrtModelChild {
  readonly pinned: boolean;
  load(model: string, threads: number, inputs: readonly ManifestTensorInfo[]): Promise<{ ortVersion: string }>;
  run(runs: number): Promise<number[]>;
  close(): Promise<void>;
}

export async function startOrtModelChild(cores: readonly number[]): Promise<OrtModelChild> {
  const child = await startPinnedChild(fileURLToPath(import.meta.url), cores);
  return {
    pinned: child.pinned,
    async load(model, threads, inputs) {
      const r = await child.ask<{ ortVersion?: string }>({ op: 'load', model, threads, inputs });
      return { ortVersion: r.ortVersion ?? 'unknown' };
    },
    async run(runs) {
      return (await child.ask<{ samplesMs: number[] }>({ op: 'run', runs })).samplesMs;
    },
    close: () => child.close(),
  };
}

async function serve(): Promise<void> {
  const ort = await import('onnxruntime-node');
  let session: import('onnxruntime-node').InferenceSession | undefined;
  let feeds: Record<string, import('onnxruntime-node').Tensor> = {};
  await serveJsonLines(async (raw) => {
    const req = raw as { op?: string; model?: string; threads?: number; inputs?: ManifestTensorInfo[]; runs?: number };
    if (req.op === 'load') {
      await session?.release();
      session = await ort.InferenceSession.create(req.model!, {
        intraOpNumThreads: req.threads!,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
      });
      const data = modelFeeds(req.inputs!);
      feeds = Object.fromEntries(
        req.inputs!.map((t, i) => [t.name, new ort.Tensor(t.dtype as 'float32', data[i] as Float32Array, [...t.shape])]),
      );
      await session.run(feeds);
      return { ortVersion: ort.env.versions.node ?? 'unknown' };
    }
    if (req.op === 'run') {
      if (!session) throw new Error('no model loaded');
      await session.run(feeds);
      const samplesMs: number[] = [];
      for (let i = 0; i < req.runs!; i++) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        samplesMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      return { samplesMs };
    }
    throw new Error(`unknown request ${JSON.stringify(req.op)}`);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--serve') await serve();
