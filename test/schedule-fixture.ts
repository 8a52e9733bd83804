/**
 * Small hand-made scheduling profiles: every figure given at every core count (nothing is
 * modelled unless a test asks), so a test can say exactly what each layer needs.
 */
import {
  PROFILE_FORMAT,
  PROFILE_FORMAT_VERSION,
  checkProfile,
  type LatencyFigure,
  type Profile,
  type ProfileStep,
} from '../src/schedule/scheduling-profile.js';
import { buildModelTable, type ModelTable } from '../src/schedule/model-table.js';
import { planModel, type ModelPlan } from '../src/schedule/requirement.js';
import type { ScalingConstants } from '../src/schedule/scaling.js';

export const NO_SCALING: ScalingConstants = { forkJoinUs: 0, serialFraction: 0, coreGBps: null, memoryGBps: 1e9, provenance: 'test' };

/** A layer: its single-core time (µs); `serialUs` of it does not scale, the rest scales up to `maxUseful` cores. */
export interface HandLayer {
  readonly us1: number;
  readonly serialUs?: number;
  readonly maxUseful?: number;
  /** Version 0's latency at level 4 over its quiet latency (levels between: linear); default 1 (no interference effect). */
  readonly noisy?: number;
  /** Extra versions: [quiet multiplier, level-4 multiplier] relative to version 0's quiet latency. */
  readonly versions?: readonly (readonly [number, number])[];
  readonly bytes?: number;
}

function latency(
  l: HandLayer,
  maxCores: number,
  cores: readonly number[],
  quiet: number,
  noisy: number,
): Record<string, Record<string, LatencyFigure>> {
  const out: Record<string, Record<string, LatencyFigure>> = {};
  const serial = l.serialUs ?? 0;
  for (const c of cores) {
    const t = serial + (l.us1 - serial) / Math.min(c, l.maxUseful ?? maxCores);
    out[String(c)] = {};
    for (let l = 0; l <= 4; l++) out[String(c)]![String(l)] = { us: t * (quiet + ((noisy - quiet) * l) / 4), source: 'measured' };
  }
  return out;
}

export function handProfile(name: string, layers: readonly HandLayer[], maxCores: number, claimUs = 0): Profile {
  const cores = Array.from({ length: maxCores }, (_, i) => i + 1);
  const steps: ProfileStep[] = layers.map((l, index) => ({
    index,
    name: `${name}.layer${index}`,
    op: 'conv2d',
    kind: 'tunable',
    layer: index,
    flops: l.us1 * 1e3,
    bytes: l.bytes ?? 1e5,
    footprintBytes: l.bytes ?? 1e5,
    versions: [
      { id: 'v0', symbol: null, tunedThreads: 1, parallelChunks: null, latencyUs: latency(l, maxCores, cores, 1, l.noisy ?? 1) },
      ...(l.versions ?? []).map(([q, n], k) => ({
        id: `v${k + 1}`,
        symbol: null,
        tunedThreads: 1,
        parallelChunks: null,
        latencyUs: latency(l, maxCores, cores, q, n),
      })),
    ],
  }));
  return checkProfile(
    {
      format: PROFILE_FORMAT,
      formatVersion: PROFILE_FORMAT_VERSION,
      model: { name, sha256: null, manifestSha256: null },
      machine: { description: 'hand-made test profile', cores: maxCores, l3Bytes: null, source: 'measured' },
      method: 'test',
      coreCounts: cores,
      levels: [0, 1, 2, 3, 4].map((level) => ({
        level,
        summary: `level ${level}`,
        coRunnerGBps: level * 5,
        coRunnerBytes: level * 2 ** 24,
        source: 'measured' as const,
      })),
      claimCost: claimUs > 0 ? { us: claimUs, threads: 1, source: 'measured' } : null,
      steps,
    } satisfies Profile,
    'test',
  );
}

export function handTable(name: string, layers: readonly HandLayer[], maxCores: number, claimUs = 0): ModelTable {
  return buildModelTable(handProfile(name, layers, maxCores, claimUs), { maxCores, scaling: NO_SCALING });
}

export function handPlan(name: string, layers: readonly HandLayer[], maxCores: number, qosMs: number, claimUs = 0): ModelPlan {
  return planModel(handTable(name, layers, maxCores, claimUs), qosMs);
}

/**
 * A jagged model: eight layers of 1 ms at one core; seven scale perfectly, layer 3 has 0.4 ms that
 * does not. With a 4 ms QoS every share is 0.5 ms: the cheap layers need 2 cores, the spike 6
 * (400 + 600/6 = 500 µs); the time-weighted average requirement is 2.5.
 */
export const JAGGED: readonly HandLayer[] = [
  { us1: 1000 },
  { us1: 1000 },
  { us1: 1000 },
  { us1: 1000, serialUs: 400 },
  { us1: 1000 },
  { us1: 1000 },
  { us1: 1000 },
  { us1: 1000 },
];
export const JAGGED_QOS_MS = 4;
