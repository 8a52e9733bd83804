/**
 * Measure what live serving pays per request and per block on this machine, and write the serving
 * calibration the simulator charges (src/simulate/calibration.ts; fit in serve-calibrate-fit.ts):
 * a veltair server of the given bundles (policy `layerwise` by default: the most blocks per
 * request, of every team size the scheduler picks) on the given cores, answering `--requests`
 * sequential requests per model after a warm-up; every answer's timeline is read back. Give
 * bundles of different input sizes for the front end's curve by tensor bytes.
 *
 *   npm run build && flock -x /work/.bench.lock node dist/src/bench/serve-calibrate.js A.bundle B.bundle… \
 *     [--cores 0,1] [--policy layerwise] [--requests 30] -o calibration.json
 */
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { requestFor, type LoadModel, type Metadata } from '../serve/load.js';
import { availableCores } from '../toolchain/cpu.js';
import { machineInfo, machineLine } from './machine.js';
import { startArm } from './serve-arms.js';
import { modelName } from './serve-mixes.js';
import { fitCalibration, type CalibrationSample } from './serve-calibrate-fit.js';
import { timedInfer } from './serve-timeline.js';

const ELEMENT: Readonly<Record<string, number>> = { FP32: 4, FP64: 8, INT64: 8, INT32: 4, INT16: 2, UINT16: 2, INT8: 1, UINT8: 1, BOOL: 1 };

/** Tensor bytes of one request and its answer, from the v2 metadata. */
async function tensorBytes(base: URL, name: string): Promise<{ meta: Metadata; bytes: number }> {
  const meta = await (await fetch(new URL(`/v2/models/${name}`, base))).json() as Metadata & { outputs?: { datatype: string; shape: number[] }[] };
  const size = (ts: { datatype: string; shape: number[] }[] | undefined) =>
    (ts ?? []).reduce((s, t) => s + t.shape.reduce((a, b) => a * Math.max(1, b), 1) * (ELEMENT[t.datatype] ?? 4), 0);
  return { meta, bytes: size(meta.inputs) + size(meta.outputs) };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const flag = (name: string, fallback: string) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1]! : fallback; };
  const bundles = argv.filter((a, i) => !a.startsWith('-') && !['--cores', '--policy', '--requests', '-o'].includes(argv[i - 1] ?? '')).map((b) => resolve(b));
  const out = flag('-o', '');
  if (bundles.length === 0 || out === '') throw new Error('usage: serve-calibrate.js BUNDLE… [--cores 0,1] [--policy layerwise] [--requests 30] -o FILE');
  const cores = argv.includes('--cores') ? flag('--cores', '').split(',').map(Number) : availableCores();
  const requests = Number(flag('--requests', '30'));
  const names = bundles.map(modelName);
  const server = await startArm(flag('--policy', 'layerwise'), { names, bundles, qosMs: {}, cores, work: mkdtempSync(join(tmpdir(), 'veltair-calibrate-')) });
  const samples: CalibrationSample[] = [];
  try {
    for (const name of names) {
      const base = new URL(server.urls.get(name)!);
      const { meta, bytes } = await tensorBytes(base, name);
      const m: LoadModel = { name, weight: 1, qosMs: 1e9, base, ...requestFor(meta, 1, false) };
      for (let i = 0; i < 5; i++) await timedInfer(m);
      for (let i = 0; i < requests; i++) samples.push({ bytes, answer: await timedInfer(m) });
    }
  } finally {
    await server.stop();
  }
  const machine = machineLine(await machineInfo());
  const cal = fitCalibration(samples, { machine, measured: new Date().toISOString(), command: `node dist/src/bench/serve-calibrate.js ${argv.join(' ')}` });
  const tmp = `${out}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(cal, null, 2) + '\n');
  renameSync(tmp, out);
  process.stdout.write(`serving calibration (${machine}, cores ${cores.join(',')}): `
    + `front end ${cal.frontEnd.map((p) => `${p.bytes} B → ${p.us} µs`).join(', ')}; `
    + `block dispatch ${cal.blockDispatchUs} µs + ${cal.wakeUpUsPerCore} µs per extra core; `
      + `event loop ${cal.eventLoopUsPerBlock} µs per block → ${out}\n`);
}

await main();
