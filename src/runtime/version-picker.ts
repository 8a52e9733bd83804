/**
 * The version picker: for each tunable layer, the in-plan version with the lowest profiled latency
 * (manifest latencyMs) at a given interference level. The choice per calibrated level is computed
 * once at load, so a run-time decision is a table lookup.
 *
 * Versions are indexed as the executor indexes them: the plan step's `versions` list, in order.
 */
import type { Manifest, ManifestVersion } from '../bundle/manifest.js';
import type { GraphPlan } from '../bundle/plan.js';

export interface KernelStepChoice {
  /** Native step index (the executor's setVersion step). */
  readonly step: number;
  readonly layer: number;
  /** The step's versions, in executor order. */
  readonly versions: readonly ManifestVersion[];
}

/** Every native kernel step with its versions; `stepOfPlan` comes from translatePlan. */
export function kernelSteps(m: Manifest, stepOfPlan: readonly number[]): KernelStepChoice[] {
  const layers = new Map(m.layers.map((l) => [l.index, l]));
  const out: KernelStepChoice[] = [];
  for (const p of (m.graphPlan as GraphPlan).steps) {
    if (p.op !== 'layer' || !p.versions || p.versions.length === 0) continue;
    const step = stepOfPlan[p.index] ?? -1;
    if (step < 0) continue;
    const layer = layers.get(p.layer)!;
    const byId = new Map(layer.versions.map((v) => [v.id, v]));
    out.push({ step, layer: p.layer, versions: p.versions.map((id) => byId.get(id)!) });
  }
  return out;
}

/** Profiled latency of `v` at `level`; undefined when it was not measured there. */
export function profiledMs(v: ManifestVersion, level: number): number | undefined {
  return v.latencyMs[String(level)];
}

/**
 * The versions that run at `threads`: those tuned at that count; else those tuned at the widest
 * count below it; else those at the narrowest count above (a bundle tuned at other counts).
 * Indices into `versions`; every version when `threads` is undefined.
 */
export function versionsTunedFor(versions: readonly ManifestVersion[], threads: number | undefined): number[] {
  const all = versions.map((_, i) => i);
  if (threads === undefined) return all;
  const counts = [...new Set(versions.map((v) => v.threads))];
  const below = counts.filter((c) => c <= threads);
  const count = below.length > 0 ? Math.max(...below) : Math.min(...counts);
  return all.filter((i) => versions[i]!.threads === count);
}

/**
 * Index of the version with the lowest profiled latency at `level` among the versions tuned for
 * `threads` (versionsTunedFor; every version when undefined). Versions not measured at that level
 * (e.g. a schedule using every core has no noisy levels) compete only when none was; then the
 * level-0 profile decides.
 */
export function bestVersionAt(versions: readonly ManifestVersion[], level: number, threads?: number): number {
  const pool0 = versionsTunedFor(versions, threads);
  const at = (l: number) =>
    pool0.map((i) => ({ i, ms: profiledMs(versions[i]!, l) })).filter((x) => x.ms !== undefined) as { i: number; ms: number }[];
  const measured = at(level);
  const pool = measured.length > 0 ? measured : at(0);
  if (pool.length === 0) return pool0[0] ?? 0;
  return pool.reduce((a, b) => (b.ms < a.ms ? b : a)).i;
}

/** Version index per native step (-1: not a kernel step) for every level in `levels`, among the versions tuned for `threads`. */
export function pickTable(
  steps: readonly KernelStepChoice[],
  stepCount: number,
  levels: readonly number[],
  threads?: number,
): Map<number, Int32Array> {
  const table = new Map<number, Int32Array>();
  for (const level of levels) {
    const v = new Int32Array(stepCount).fill(-1);
    for (const s of steps) v[s.step] = bestVersionAt(s.versions, level, threads);
    table.set(level, v);
  }
  return table;
}

/** The thread count a session runs at by default: the widest tuned count that leaves a core free, bounded by the machine. */
export function defaultThreadsOf(tuned: readonly number[], machineCores: number): number {
  const usable = tuned.filter((t) => t <= machineCores);
  const pool = usable.length > 0 ? usable : [1];
  const fitting = pool.filter((t) => t < machineCores);
  return fitting.length > 0 ? Math.max(...fitting) : Math.max(...pool);
}

/**
 * Quiet-profiled kernel time (ms) of a pick: what latencyRatio divides by. Uses the version's
 * level-0 latency at `threads` when it was profiled at that count, else at its tuned threads.
 */
export function profiledKernelMs(steps: readonly KernelStepChoice[], pick: Int32Array, threads: number): number {
  let sum = 0;
  for (const s of steps) {
    const v = s.versions[Math.max(0, pick[s.step]!)]!;
    sum += v.latencyByThreadsMs[String(threads)] ?? v.latencyMs['0'] ?? 0;
  }
  return sum;
}

/**
 * How a pick made at `predicted` fares at the `actual` level, by the profiles: per kernel step,
 * the picked version's latency at `actual` over the best latency any version has there.
 */
export function pickRegret(steps: readonly KernelStepChoice[], predicted: number, actual: number): { worst: number; total: number } {
  let worst = 1,
    picked = 0,
    best = 0;
  for (const s of steps) {
    const chosen = profiledMs(s.versions[bestVersionAt(s.versions, predicted)]!, actual);
    const oracle = profiledMs(s.versions[bestVersionAt(s.versions, actual)]!, actual);
    if (chosen === undefined || oracle === undefined) continue;
    worst = Math.max(worst, chosen / oracle);
    picked += chosen;
    best += oracle;
  }
  return { worst, total: best > 0 ? picked / best : 1 };
}
