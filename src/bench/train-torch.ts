/**
 * The PyTorch side of the training benchmark: src/bench/train_torch.py in a child process, with
 * the same thread count for PyTorch's intra-op pool and for OpenBLAS, pinned to the same cores as
 * veltair, stepped one epoch at a time over stdin so the two trainers alternate.
 */
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { execa, type ResultPromise } from 'execa';
import { repoRoot } from '../toolchain/paths.js';

export const SYSTEM_PYTHON = '/usr/bin/python3';

export interface TorchInfo {
  readonly torch: string;
  readonly threads: number;
  readonly blasConfig: readonly string[];
  readonly blasLoaded: readonly string[];
  readonly readSeconds: number;
}

export interface TorchEpoch {
  readonly epoch: number;
  readonly loss: number;
  readonly epochSeconds: number;
  readonly evalSeconds: number;
  readonly 'precision@1'?: number;
  readonly 'precision@5'?: number;
  readonly 'recall@5'?: number;
}

export interface TorchTrainer {
  readonly info: TorchInfo;
  epoch(): Promise<TorchEpoch>;
  close(): Promise<void>;
}

export interface TorchOptions {
  readonly spec: string;
  readonly train: string;
  readonly test: string;
  readonly epochs: number;
  readonly batch: number;
  readonly lr: number;
  readonly threads: number;
  readonly seed: number;
  readonly cores: readonly number[];
}

export async function startTorch(o: TorchOptions): Promise<TorchTrainer> {
  const script = join(repoRoot(), 'src', 'bench', 'train_torch.py');
  const args = [
    script,
    '--spec',
    o.spec,
    '--train',
    o.train,
    '--eval',
    o.test,
    '--epochs',
    String(o.epochs),
    '--batch',
    String(o.batch),
    '--lr',
    String(o.lr),
    '--threads',
    String(o.threads),
    '--seed',
    String(o.seed),
    '--step',
  ];
  const t = String(o.threads);
  const env = { OMP_NUM_THREADS: t, OPENBLAS_NUM_THREADS: t, MKL_NUM_THREADS: t };
  const child: ResultPromise = execa('taskset', ['-c', o.cores.join(','), SYSTEM_PYTHON, ...args], {
    env,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
    reject: false,
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const r = await lines.next();
    if (r.done) throw new Error(`the PyTorch trainer ended early (${SYSTEM_PYTHON} ${script}); is python3-torch installed?`);
    return JSON.parse(r.value) as Record<string, unknown>;
  };
  const info = (await next()) as unknown as TorchInfo;
  return {
    info,
    async epoch() {
      child.stdin!.write('go\n');
      return (await next()) as unknown as TorchEpoch;
    },
    async close() {
      child.stdin!.end();
      await child;
    },
  };
}
