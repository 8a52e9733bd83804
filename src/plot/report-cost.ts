/**
 * What tuning a bundle cost, as far as the bundle can say. The bundle records every measured
 * candidate and its repeats but, on purpose, no wall-clock tuning time (it must be byte-identical
 * across recompiles from the same database), so the cost is given in what was measured: candidates
 * (ok and failed), repeats, and the timed kernel seconds — the sum of the recorded repeat latencies,
 * a lower bound on the kernel time spent (builds, verification and warm-up are not in it). Pure.
 */
import type { Manifest } from '../bundle/manifest.js';
import type { BundleProfiles } from '../bundle/candidates-file.js';

export interface WorkloadCost {
  readonly workload: string;
  /** Manifest indices of the layers computing this workload, in model order. */
  readonly layers: readonly number[];
  readonly ok: number;
  /** Failed candidates by status (wrong, crash, timeout, compile_error). */
  readonly failed: Readonly<Record<string, number>>;
  /** Timed repeats over every candidate and level. */
  readonly repeats: number;
  readonly timedSeconds: number;
  readonly kept: number;
  readonly dominated: number;
}

export interface TuningCost {
  readonly workloads: readonly WorkloadCost[];
  readonly ok: number;
  readonly failed: Readonly<Record<string, number>>;
  readonly repeats: number;
  readonly timedSeconds: number;
}

/** Tunable workloads in the order their first layer appears, with the layers that share each. */
export function workloadLayers(m: Manifest): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const l of m.layers) {
    if (!l.tunable || l.workload === null) continue;
    const list = out.get(l.workload) ?? [];
    list.push(l.index);
    out.set(l.workload, list);
  }
  return out;
}

const addCounts = (into: Record<string, number>, from: Readonly<Record<string, number>>) => {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
};

/** The tuning cost per workload of the bundle (model order) and in total; undefined without profiles. */
export function tuningCost(m: Manifest, profiles: BundleProfiles | undefined): TuningCost | undefined {
  if (!profiles) return undefined;
  const byKey = new Map(profiles.workloads.map((w) => [w.workload, w]));
  const workloads: WorkloadCost[] = [];
  for (const [workload, layers] of workloadLayers(m)) {
    const p = byKey.get(workload);
    const candidates = p?.candidates ?? [];
    const failed: Record<string, number> = {};
    for (const c of candidates) if (c.status !== 'ok') failed[c.status] = (failed[c.status] ?? 0) + 1;
    workloads.push({
      workload,
      layers,
      ok: candidates.filter((c) => c.status === 'ok').length,
      failed,
      repeats: candidates.reduce((s, c) => s + Object.values(c.repeats).reduce((a, b) => a + b, 0), 0),
      timedSeconds: p?.timedSeconds ?? 0,
      kept: candidates.filter((c) => c.kept).length,
      dominated: candidates.filter((c) => c.dominated).length,
    });
  }
  const failed: Record<string, number> = {};
  for (const w of workloads) addCounts(failed, w.failed);
  return {
    workloads,
    ok: workloads.reduce((s, w) => s + w.ok, 0),
    failed,
    repeats: workloads.reduce((s, w) => s + w.repeats, 0),
    timedSeconds: workloads.reduce((s, w) => s + w.timedSeconds, 0),
  };
}

export const failedTotal = (failed: Readonly<Record<string, number>>): number => Object.values(failed).reduce((a, b) => a + b, 0);
