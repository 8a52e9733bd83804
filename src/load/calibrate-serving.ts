/**
 * Measure what live serving pays per request and per block on this machine, and fit the serving
 * calibration the simulator charges (src/simulate/calibration.ts, fit in calibration-fit.ts): a
 * veltair server of the given bundles (policy `layerwise` by default: the most blocks per request,
 * of every team size the scheduler picks) on the given cores answers `requests` sequential
 * requests per model after a warm-up, and every answer's timeline is read back. Bundles of
 * different input sizes give the front end's curve by tensor bytes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { userError } from '../errors.js';
import { fitCalibration, type CalibrationSample } from '../simulate/calibration-fit.js';
import type { ServingCalibration } from '../simulate/calibration.js';
import { requestFor, type LoadModel, type Metadata } from './generator.js';
import { startServeProcess, stopServeProcess } from './serve-process.js';
import { timedInfer } from './timed-answer.js';

const ELEMENT: Readonly<Record<string, number>> = { FP32: 4, FP64: 8, INT64: 8, INT32: 4, INT16: 2, UINT16: 2, INT8: 1, UINT8: 1, BOOL: 1 };
const WARM_UP_REQUESTS = 5;

export interface CalibrateServingOptions {
  readonly bundles: readonly string[];
  readonly cores: readonly number[];
  readonly policy: string;
  readonly requests: number;
  /** Where and how it was measured, recorded in the file. */
  readonly machine: string;
  readonly command: string;
  readonly onProgress?: (message: string) => void;
}

/** Tensor bytes of one request and its answer, from the v2 metadata. */
async function tensorBytes(base: URL, name: string): Promise<{ meta: Metadata; bytes: number }> {
  type Described = Metadata & { outputs?: { datatype: string; shape: number[] }[] };
  const meta = (await (await fetch(new URL(`/v2/models/${encodeURIComponent(name)}`, base))).json()) as Described;
  const size = (ts: { datatype: string; shape: number[] }[] | undefined) =>
    (ts ?? []).reduce((s, t) => s + t.shape.reduce((a, b) => a * Math.max(1, b), 1) * (ELEMENT[t.datatype] ?? 4), 0);
  return { meta, bytes: size(meta.inputs) + size(meta.outputs) };
}

/** A model's name in the server's config: its bundle directory's name without `.bundle`. */
export const servedName = (bundle: string) => basename(bundle).replace(/\.bundle$/, '');

export async function calibrateServing(o: CalibrateServingOptions): Promise<ServingCalibration> {
  const names = o.bundles.map(servedName);
  if (new Set(names).size !== names.length) {
    throw userError('BAD_ARGUMENT', `two bundles share a name (${names.join(', ')})`, 'give each bundle directory its own name');
  }
  const work = mkdtempSync(join(tmpdir(), 'veltair-calibrate-'));
  const samples: CalibrationSample[] = [];
  try {
    const config = join(work, 'serve.json');
    writeFileSync(config, JSON.stringify({ models: Object.fromEntries(names.map((n, i) => [n, { bundle: o.bundles[i] }])) }));
    o.onProgress?.(`starting veltair serve --policy ${o.policy} on cores ${o.cores.join(',')}`);
    const server = await startServeProcess(['--config', config, '--policy', o.policy], o.cores).catch((e: unknown) => {
      throw userError(
        'BAD_ARGUMENT',
        `veltair serve did not start on these bundles: ${(e as Error).message.split('\n').slice(-2).join(' ')}`,
        'check that each argument is a bundle directory written by veltair compile, and --policy is one that veltair serve takes',
      );
    });
    try {
      for (const name of names) {
        const base = new URL(server.url);
        const { meta, bytes } = await tensorBytes(base, name);
        const m: LoadModel = { name, weight: 1, qosMs: 1e9, base, ...requestFor(meta, 1, false) };
        o.onProgress?.(`${name}: ${o.requests} requests of ${bytes} tensor bytes`);
        for (let i = 0; i < WARM_UP_REQUESTS; i++) await timedInfer(m);
        for (let i = 0; i < o.requests; i++) samples.push({ bytes, answer: await timedInfer(m) });
      }
    } finally {
      await stopServeProcess(server);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return fitCalibration(samples, { machine: o.machine, measured: new Date().toISOString(), command: o.command });
}
