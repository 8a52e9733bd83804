/**
 * The rows behind every figure, from the bundle alone: pure functions of the manifest and the
 * candidate profiles (profiles/candidates.json). These rows are what the Vega-Lite specs draw and
 * what `veltair plot --data` exports, so a figure never shows a number the data file lacks.
 * Every latency here is a measured median from tuning; nothing is estimated.
 */
import type { Manifest, ManifestLayer, ManifestVersion } from '../bundle/manifest.js';
import type { BundleProfiles } from '../bundle/candidates-file.js';
import type { MeasureStatus } from '../measure/run-candidate.js';
import { bestVersionAt } from '../runtime/version-picker.js';
import type { WorkloadProfile } from '../tune/candidate-points.js';
import { kibText } from './label.js';
import { tunableLayer } from './layer-id.js';

export interface CandidatePoint {
  /** First 12 hex digits of the tuning record id. */
  readonly candidate: string;
  readonly status: MeasureStatus;
  readonly footprintL2Bytes: number;
  /** The L2 cache-tile footprint in KiB (footprintL2Bytes / 1024). */
  readonly footprintKiB: number;
  readonly parallelChunks: number;
  readonly threads: number;
  /** Median latency at level 0; null for a failed candidate or one not measured quiet. */
  readonly latencyQuietMs: number | null;
  readonly kept: boolean;
  /** 'v1'…'v5' for a kept version in the manifest's locality → parallelism order, else ''. */
  readonly versionLabel: string;
  readonly dominated: boolean;
}

export interface LevelLatency {
  /** 'v1 (…)' per kept version, or ORACLE_SERIES. */
  readonly series: string;
  readonly level: number;
  readonly latencyMs: number;
}

export interface LayerVersionCount {
  readonly layer: number;
  /** The ONNX node name: display only. */
  readonly name: string;
  readonly op: string;
  readonly versions: number;
}

export const ADAPTIVE_POLICY = 'adaptive (best kept version per level)';
export const FIXED_POLICY = 'fixed (best-quiet version)';
export const ORACLE_SERIES = 'oracle (best measured)';

export interface PolicyLatency {
  readonly level: number;
  readonly policy: typeof ADAPTIVE_POLICY | typeof FIXED_POLICY;
  /** Sum over tunable layers of profiled layer latencies (ms): not a whole-model measurement. */
  readonly latencyMs: number;
}

export const shortId = (id: string) => id.slice(0, 12);
const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** The profiled candidates of the layer's workload, or undefined when the bundle has none for it. */
export function workloadProfileOf(m: Manifest, profiles: BundleProfiles | undefined, layerIndex: number): WorkloadProfile | undefined {
  const layer = tunableLayer(m, layerIndex);
  return profiles?.workloads.find((w) => w.workload === layer.workload);
}

/** Version id → 'v1'… in the manifest's order (the tuner's locality → parallelism order). */
function versionLabels(layer: ManifestLayer): Map<string, string> {
  return new Map(layer.versions.map((v, i) => [v.id, `v${i + 1}`]));
}

/** Locality-heavy first (bigger L2 tile), then more parallel chunks, then id: a stable reading order. */
const byLocality = (a: CandidatePoint, b: CandidatePoint) =>
  b.footprintL2Bytes - a.footprintL2Bytes ||
  a.parallelChunks - b.parallelChunks ||
  (a.candidate < b.candidate ? -1 : a.candidate > b.candidate ? 1 : 0);

/**
 * One row per measured candidate of the layer's workload (failed ones included, with a null
 * latency). A bundle without profiles yields its kept versions only.
 */
export function candidatePoints(m: Manifest, profiles: BundleProfiles | undefined, layerIndex: number): CandidatePoint[] {
  const layer = tunableLayer(m, layerIndex);
  const labels = versionLabels(layer);
  const profile = workloadProfileOf(m, profiles, layerIndex);
  const rows: CandidatePoint[] = profile
    ? profile.candidates.map((c) => ({
        candidate: shortId(c.id),
        status: c.status,
        footprintL2Bytes: c.footprintBytes.l2,
        footprintKiB: round6(c.footprintBytes.l2 / 1024),
        parallelChunks: c.parallelChunks,
        threads: c.threads,
        latencyQuietMs: c.status === 'ok' ? (c.latencyMs['0'] ?? null) : null,
        kept: c.kept,
        versionLabel: labels.get(c.id) ?? '',
        dominated: c.dominated,
      }))
    : layer.versions.map((v) => ({
        candidate: shortId(v.id),
        status: 'ok' as const,
        footprintL2Bytes: v.features.footprintBytes.l2,
        footprintKiB: round6(v.features.footprintBytes.l2 / 1024),
        parallelChunks: v.features.parallelChunks,
        threads: v.threads,
        latencyQuietMs: v.latencyMs['0'] ?? null,
        kept: true,
        versionLabel: labels.get(v.id)!,
        dominated: false,
      }));
  return rows.sort(byLocality);
}

const levelsOf = (m: Manifest) => [...m.options.levels].sort((a, b) => a - b);

/** 'v1 (376 KiB, 23 chunks)': what distinguishes the version on the locality–parallelism axes. */
export function versionSeriesName(v: ManifestVersion, i: number): string {
  const chunks = v.features.parallelChunks;
  return `v${i + 1} (${kibText(v.features.footprintBytes.l2)}, ${chunks} chunk${chunks === 1 ? '' : 's'}${v.threads > 1 ? `, ${v.threads} threads` : ''})`;
}

/** Latency per interference level: one series per kept version, plus the best any candidate measured. */
export function levelLatencies(m: Manifest, layerIndex: number): LevelLatency[] {
  const layer = tunableLayer(m, layerIndex);
  const levels = levelsOf(m);
  const rows: LevelLatency[] = [];
  layer.versions.forEach((v, i) => {
    const series = versionSeriesName(v, i);
    for (const level of levels) {
      const ms = v.latencyMs[String(level)];
      if (ms !== undefined) rows.push({ series, level, latencyMs: ms });
    }
  });
  for (const level of levels) {
    const ms = layer.family?.bestMs[String(level)];
    if (ms !== undefined) rows.push({ series: ORACLE_SERIES, level, latencyMs: ms });
  }
  return rows;
}

/** Kept versions per tunable layer, in network order. */
export function modelVersionsPerLayer(m: Manifest): LayerVersionCount[] {
  return m.layers
    .filter((l) => l.tunable)
    .sort((a, b) => a.index - b.index)
    .map((l) => ({ layer: l.index, name: l.name, op: l.op, versions: l.versions.length }));
}

/** The versions the runtime can run (in the graph plan); all kept ones if the plan uses none. */
function runnable(l: ManifestLayer): readonly ManifestVersion[] {
  const inPlan = l.versions.filter((v) => v.inPlan);
  return inPlan.length > 0 ? inPlan : l.versions;
}

/**
 * Of a layer's versions, those of the thread count measured at the most levels (ties: the widest).
 * Versions of other counts run only in sessions of those counts, so a per-level comparison mixing
 * them would compare a 2-thread quiet figure with 1-thread noisy ones; and a version using every
 * core has no noisy figure at all, so whether it was quiet-best must not decide which rows exist.
 */
function levelledVersions(vs: readonly ManifestVersion[]): readonly ManifestVersion[] {
  const counts = [...new Set(vs.map((v) => v.threads))];
  const levels = (t: number) => new Set(vs.filter((v) => v.threads === t).flatMap((v) => Object.keys(v.latencyMs))).size;
  const best = counts.reduce((a, b) => (levels(b) > levels(a) || (levels(b) === levels(a) && b > a) ? b : a));
  return vs.filter((v) => v.threads === best);
}

/**
 * Per level, the sum over tunable layers of profiled layer latencies under two policies: adaptive
 * (each layer's fastest runnable version at that level, as the runtime's picker chooses) and fixed
 * (each layer's best-quiet version at every level), among the versions of the thread count
 * measured at the most levels (levelledVersions). A level where some layer's chosen version was
 * not measured is left out rather than summed over fewer layers.
 */
export function modelLatencyPerLevel(m: Manifest): PolicyLatency[] {
  const layers = m.layers.filter((l) => l.tunable && l.versions.length > 0).map((l) => levelledVersions(runnable(l)));
  if (layers.length === 0) return [];
  const rows: PolicyLatency[] = [];
  for (const level of levelsOf(m)) {
    const key = String(level);
    const adaptive = layers.map((vs) => Math.min(...vs.map((v) => v.latencyMs[key] ?? Infinity)));
    const fixed = layers.map((vs) => vs[bestVersionAt(vs, 0)]!.latencyMs[key] ?? Infinity);
    if (adaptive.every(Number.isFinite))
      rows.push({ level, policy: ADAPTIVE_POLICY, latencyMs: round6(adaptive.reduce((a, b) => a + b, 0)) });
    if (fixed.every(Number.isFinite)) rows.push({ level, policy: FIXED_POLICY, latencyMs: round6(fixed.reduce((a, b) => a + b, 0)) });
  }
  return rows;
}
