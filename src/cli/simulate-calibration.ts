/**
 * `veltair simulate --calibration FILE`: the serving calibration (src/simulate/calibration.ts) and
 * each simulated model's tensor bytes per request (inputs + outputs), read from its bundle's
 * manifest when its --profiles entry is a bundle directory; a model without one is charged the
 * calibration's smallest front-end point, and the label says so.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { dtypeByteSize } from '../onnx/dtype.js';
import type { DType } from '../onnx/model.js';
import { chargesFor, readCalibration, type Charges } from '../simulate/calibration.js';

interface ManifestTensors {
  model?: { inputs?: { dtype: DType; shape: number[] }[]; outputs?: { dtype: DType; shape: number[] }[] };
}

/** Tensor bytes per request of the bundle at `dir`, or null when it is not a readable bundle. */
export function bundleTensorBytes(dir: string): number | null {
  const path = join(dir, 'manifest.json');
  if (!existsSync(path)) return null;
  try {
    const m = (JSON.parse(readFileSync(path, 'utf8')) as ManifestTensors).model;
    const sum = (ts: { dtype: DType; shape: number[] }[] | undefined) =>
      (ts ?? []).reduce((s, t) => s + t.shape.reduce((a, b) => a * Math.max(1, b), 1) * dtypeByteSize(t.dtype), 0);
    return sum(m?.inputs) + sum(m?.outputs);
  } catch {
    return null;
  }
}

export function simulateCharges(
  file: string,
  models: readonly string[],
  profileEntries: readonly string[],
): { charges: Charges; label: string } {
  const c = readCalibration(file);
  const byName = new Map<string, number>();
  for (const e of profileEntries) {
    const dir = e.includes('=') ? e.slice(e.indexOf('=') + 1) : e;
    const bytes = bundleTensorBytes(dir);
    if (bytes !== null) byName.set(basename(dir).replace(/\.bundle$/, ''), bytes);
  }
  const bytes = models.map((m) => byName.get(m) ?? byName.get(m.split('@')[0]!) ?? 0);
  const unknown = models.filter((_, i) => !byName.has(models[i]!) && !byName.has(models[i]!.split('@')[0]!));
  const label =
    `charging live serving costs measured on ${c.machine} (${c.measured.slice(0, 10)}): per-request front end by tensor bytes, ` +
    `per-block dispatch ${c.blockDispatchUs.toFixed(0)} µs + wake-up ${c.wakeUpUsPerCore.toFixed(0)} µs/core ` +
    `+ event loop ${c.eventLoopUsPerBlock.toFixed(0)} µs` +
    (unknown.length > 0 ? `; ${unknown.join(', ')}: tensor bytes unknown (no bundle), charged the smallest front-end point` : '');
  return { charges: chargesFor(c, bytes), label };
}
