/**
 * How a bundle version's threads divide its output (space/knobs.ts threadSplit), read from the
 * manifest: the runtime's pooling follows it, so each thread reads the rows its own core wrote; and
 * a conv version's tiling, from which space/tile-owner.ts tells which thread writes each block and
 * pixel (the channel gather follows that).
 */
import { problemOf } from '../space/problem.js';
import { threadSplit, type ThreadSplit } from '../space/knobs.js';
import { outputOwner, type OutputOwner, type Tiling } from '../space/tile-owner.js';
import { fp32Schedule, type ManifestLayer, type ManifestVersion } from './manifest.js';

export type { ThreadSplit, OutputOwner, Tiling };
export { outputOwner };

/** undefined for a layer without a workload (not a tuned kernel). */
export function versionSplit(l: ManifestLayer, v: ManifestVersion): ThreadSplit | undefined {
  const s = fp32Schedule(v);
  return l.workloadSpec && s ? threadSplit(problemOf(l.workloadSpec, s.vec), s) : undefined;
}

/** A conv version's loop problem and schedule (undefined for other layers: their outputs are not blocked images). */
export function versionTiling(l: ManifestLayer, v: ManifestVersion): Tiling | undefined {
  const s = fp32Schedule(v);
  return l.workloadSpec?.op === 'conv2d' && s ? { problem: problemOf(l.workloadSpec, s.vec), schedule: s } : undefined;
}
