/**
 * A model as the scheduler sees it: *units* (schedulable layers) with a dense latency table
 * unit × version × cores (1..N) × level (0..4), built once from a profile.
 *
 * Units: each tunable step and the non-tunable steps after it (activations, pooling, reorders
 * until the next tunable step; steps before the first tunable one join it). The paper schedules
 * conv/FC layers; the other ops are cheap, run between them, and cannot be re-versioned, so they
 * ride with the layer before them and their time counts where it is spent. A profile without
 * tunable steps has one unit per step.
 *
 * Figures: the profile's own where it has them (measured or artifact); everything else from the
 * scaling model (scaling.ts), counted as modelled. `sources` says how many of the table's
 * step-level figures are of each kind. Pure.
 */
import { quoteForMessage, userError } from '../errors.js';
import type { FigureSource, Profile, ProfileStep, ProfileVersion } from './scheduling-profile.js';
import { fitStep, predictStep, type ScalingConstants, type StepFit } from './scaling.js';

export const LEVEL_COUNT = 5;

export interface Unit {
  readonly index: number;
  readonly firstStep: number;
  readonly lastStep: number;
  /** The unit's tunable step name (or its only step's). */
  readonly name: string;
  readonly op: string;
  readonly versions: number;
  readonly versionIds: readonly string[];
  /** ms, at ((v · maxCores) + (cores − 1)) · LEVEL_COUNT + level. */
  readonly latMs: Float64Array;
  readonly flops: number;
  readonly bytes: number;
  readonly footprintBytes: number;
}

export interface ModelTable {
  readonly name: string;
  readonly maxCores: number;
  readonly units: readonly Unit[];
  /** One block claim/release on `cores` cores, ms. */
  readonly claimMs: Float64Array;
  readonly claimSource: FigureSource | 'none';
  readonly sources: Readonly<Record<FigureSource, number>>;
  /** Transformations applied (printed with results). */
  readonly notes: readonly string[];
}

export interface TableOptions {
  readonly maxCores: number;
  readonly scaling: ScalingConstants;
  /** Multiply every latency (and flops, bytes) by this factor: a modelled change of input size. */
  readonly scale?: number;
  /** Run the profile's steps this many times in a row (identical layers, e.g. more encoder layers). */
  readonly repeat?: number;
  /** Replace the profile's claim/release cost (µs at 1 core). */
  readonly claimUs?: number;
  /**
   * Use only the profile's figures at these core counts (fit and table); figures at other counts
   * are held out (e.g. for validation) and modelled like any missing count. Default: all.
   */
  readonly useCores?: readonly number[];
}

function restrictCores(p: Profile, cores: readonly number[]): Profile {
  const keep = new Set(cores.map(String));
  const steps = p.steps.map((s) => ({
    ...s,
    versions: s.versions.map((v) => ({ ...v, latencyUs: Object.fromEntries(Object.entries(v.latencyUs).filter(([c]) => keep.has(c))) })),
  }));
  return { ...p, coreCounts: p.coreCounts.filter((c) => keep.has(String(c))), steps };
}

export function latAt(u: Unit, maxCores: number, v: number, cores: number, level: number): number {
  return u.latMs[(v * maxCores + (cores - 1)) * LEVEL_COUNT + level]!;
}

/** Latency at a continuous level (linear between integer levels). */
export function latAtLevel(u: Unit, maxCores: number, v: number, cores: number, level: number): number {
  const l = Math.min(LEVEL_COUNT - 1, Math.max(0, level));
  const lo = Math.floor(l),
    hi = Math.min(LEVEL_COUNT - 1, lo + 1),
    f = l - lo;
  const a = latAt(u, maxCores, v, cores, lo);
  return f === 0 ? a : a + (latAt(u, maxCores, v, cores, hi) - a) * f;
}

interface VersionModel {
  readonly fit: StepFit;
  readonly v: ProfileVersion;
}

function level0Points(v: ProfileVersion) {
  return Object.entries(v.latencyUs)
    .filter(([, byLevel]) => byLevel['0'] !== undefined)
    .map(([c, byLevel]) => ({ cores: Number(c), us: byLevel['0']!.us }));
}

/** µs and source of one step-version at (cores, level). */
function figure(m: VersionModel, cores: number, level: number, k: ScalingConstants): { us: number; source: FigureSource } {
  const at = m.v.latencyUs[String(cores)]?.[String(level)];
  if (at) return { us: at.us, source: at.source };
  const quiet = m.v.latencyUs[String(cores)]?.['0'];
  const base = quiet ? quiet.us : predictStep(m.fit, cores, k);
  if (level === 0) return { us: base, source: 'modelled' };
  // The level's slowdown where it was measured, nearest core count (log scale), carried over.
  const measuredAt = Object.entries(m.v.latencyUs)
    .filter(([, byLevel]) => byLevel[String(level)] !== undefined && byLevel['0'] !== undefined)
    .map(([c, byLevel]) => ({ c: Number(c), ratio: byLevel[String(level)]!.us / byLevel['0']!.us }))
    .sort((a, b) => Math.abs(Math.log(a.c / cores)) - Math.abs(Math.log(b.c / cores)) || a.c - b.c);
  if (measuredAt.length > 0) return { us: base * measuredAt[0]!.ratio, source: 'modelled' };
  // Never measured at this level: the highest measured level below it stands in (none: quiet).
  return level > 0 ? { ...figure(m, cores, level - 1, k), source: 'modelled' } : { us: base, source: 'modelled' };
}

function unitRanges(steps: readonly ProfileStep[]): { first: number; last: number }[] {
  const tunable = steps.map((s, i) => (s.kind === 'tunable' ? i : -1)).filter((i) => i >= 0);
  if (tunable.length === 0) return steps.map((_, i) => ({ first: i, last: i }));
  return tunable.map((t, j) => ({ first: j === 0 ? 0 : t, last: j + 1 < tunable.length ? tunable[j + 1]! - 1 : steps.length - 1 }));
}

export function buildModelTable(profile: Profile, o: TableOptions): ModelTable {
  const p = o.useCores ? restrictCores(profile, o.useCores) : profile;
  if (p.steps.some((s) => s.versions.some((v) => Object.keys(v.latencyUs).length === 0))) {
    throw userError(
      'BAD_ARGUMENT',
      `profile of ${quoteForMessage(profile.model.name)} has no figures at core count(s) ${o.useCores!.join(',')} for some step`,
      `its figures are at ${profile.coreCounts.join(',')} cores`,
    );
  }
  const N = o.maxCores;
  const k = o.scaling;
  const scale = o.scale ?? 1;
  const repeat = o.repeat ?? 1;
  const sources: Record<FigureSource, number> = { measured: 0, modelled: 0, artifact: 0 };
  const models = p.steps.map((s) => s.versions.map((v) => ({ v, fit: fitStep(level0Points(v), v.parallelChunks, s.bytes, k) })));
  const baseUnits = unitRanges(p.steps).map((r) => {
    const steps = p.steps.slice(r.first, r.last + 1);
    const main = steps.find((s) => s.kind === 'tunable') ?? steps[0]!;
    const mainIndex = p.steps.indexOf(main);
    const versions = main.versions.length;
    const lat = new Float64Array(versions * N * LEVEL_COUNT);
    for (let c = 1; c <= N; c++) {
      for (let l = 0; l < LEVEL_COUNT; l++) {
        let others = 0;
        for (let i = r.first; i <= r.last; i++) {
          if (i === mainIndex) continue;
          const f = figure(models[i]![0]!, c, l, k);
          sources[f.source] += repeat;
          others += f.us;
        }
        for (let v = 0; v < versions; v++) {
          const f = figure(models[mainIndex]![v]!, c, l, k);
          sources[f.source] += repeat;
          lat[(v * N + (c - 1)) * LEVEL_COUNT + l] = ((f.us + others) * scale) / 1000;
        }
      }
    }
    return {
      firstStep: r.first,
      lastStep: r.last,
      name: main.name,
      op: main.op,
      versions,
      versionIds: main.versions.map((v) => v.id),
      latMs: lat,
      flops: steps.reduce((s, x) => s + x.flops, 0) * scale,
      bytes: steps.reduce((s, x) => s + x.bytes, 0) * scale,
      footprintBytes: Math.max(...steps.map((x) => x.footprintBytes)) * scale,
    };
  });
  const units: Unit[] = [];
  for (let rep = 0; rep < repeat; rep++) {
    for (const u of baseUnits) units.push({ ...u, index: units.length, name: repeat > 1 ? `${u.name} (×${rep + 1})` : u.name });
  }
  const claimMs = new Float64Array(N + 1);
  let claimSource: ModelTable['claimSource'] = 'none';
  const base = o.claimUs !== undefined ? { us: o.claimUs, threads: 1 } : p.claimCost;
  if (base) {
    claimSource = o.claimUs !== undefined ? 'modelled' : p.claimCost!.source;
    // A team of c threads wakes in ~log2(c) rounds: scale the measured cost by that (modelled beyond the measured size).
    for (let c = 1; c <= N; c++) claimMs[c] = (base.us * Math.max(1, Math.log2(c))) / Math.max(1, Math.log2(base.threads)) / 1000;
  }
  const notes: string[] = [];
  if (scale !== 1) notes.push(`every latency ×${scale.toFixed(3)} (modelled)`);
  if (o.useCores)
    notes.push(
      `only the figures at ${o.useCores.join(',')} core(s) used; ` +
        `${profile.coreCounts.filter((c) => !o.useCores!.includes(c)).join(',') || 'no other counts'} held out`,
    );
  if (repeat !== 1) notes.push(`the profile's ${p.steps.length} steps run ${repeat}× in a row (identical layers; figures reused)`);
  return { name: p.model.name, maxCores: N, units, claimMs, claimSource, sources, notes };
}

/** The version with the lowest latency at (cores, integer level), and that latency. */
export function bestVersion(u: Unit, maxCores: number, cores: number, level: number): { v: number; ms: number } {
  let v = 0,
    ms = Infinity;
  for (let i = 0; i < u.versions; i++) {
    const t = latAtLevel(u, maxCores, i, cores, level);
    if (t < ms) {
      ms = t;
      v = i;
    }
  }
  return { v, ms };
}
