/**
 * How a bundle version's threads divide its output (space/schedule.ts threadSplit), read from the
 * manifest: the runtime's pooling follows it, so each thread reads the rows its own core wrote.
 */
import { problemOf } from '../space/problem.js';
import { threadSplit, type ThreadSplit } from '../space/schedule.js';
import type { ManifestLayer, ManifestVersion } from './manifest.js';

export type { ThreadSplit };

/** undefined for a layer without a workload (not a tuned kernel). */
export function versionSplit(l: ManifestLayer, v: ManifestVersion): ThreadSplit | undefined {
  return l.workloadSpec ? threadSplit(problemOf(l.workloadSpec, v.schedule.vec), v.schedule) : undefined;
}
