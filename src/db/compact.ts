/**
 * Compaction: of a target's records, the few a compile uses, as TVM's TopHub ships the best
 * configurations per target rather than every measured candidate. Pure; records in, records out.
 *
 * Records are grouped by (workload, thread count, code generator version): one tuning run's
 * candidates. Of each group the compacted set keeps
 *  1. the family a compile selects from it (space/family.ts, with the compile's defaults: at most
 *     5 versions, 3% worst-regret slack, every level the records have);
 *  2. the best record at each interference level, so a family selected from the compacted set
 *     measures its regret against the same best latencies as one selected from all records;
 *  3. for every kept version, its variants at the group's sibling thread counts (the level-0
 *     profiles tune/other-thread-counts.ts takes), so a compile finds them instead of measuring.
 * Failed and raced records are dropped: what the set remembers of them is the trial count (`TrialCounts`),
 * which tells a compile that the run's budget was already spent.
 */
import { kernelSymbol } from '../codegen/kernel.js';
import { repair } from '../space/knobs.js';
import { selectFamily, type FamilyCandidate } from '../space/family.js';
import { canonicalJson } from './target-fingerprint.js';
import { isComplete, levelsOf, medianMs, recordId, type TuningRecord } from './record.js';

/** The compile's family defaults (tune/tune-model.ts). */
export const COMPACT_MAX_VERSIONS = 5;
export const COMPACT_REGRET_TOLERANCE = 0.03;

/** `workload threads codegen` → trials a tuning run spent (records counted by tune-model's resume). */
export type TrialCounts = ReadonlyMap<string, number>;

export function runKey(r: Pick<TuningRecord, 'workload' | 'threads' | 'tool'>): string {
  return `${r.workload} ${r.threads} ${r.tool.codegen}`;
}

/** Trials each run spent: its records that a compile's resume counts (every status but timeout). */
export function countTrials(records: Iterable<TuningRecord>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of records) if (r.status !== 'timeout') counts.set(runKey(r), (counts.get(runKey(r)) ?? 0) + 1);
  return counts;
}

/** Per run the larger count: a compacted input remembers trials whose records it dropped. */
export function maxTrials(...sources: readonly TrialCounts[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of sources) for (const [k, n] of s) out.set(k, Math.max(out.get(k) ?? 0, n));
  return out;
}

function candidateOf(r: TuningRecord): FamilyCandidate {
  const workload = { ...r.workloadSpec, key: r.workload };
  return {
    id: recordId(r),
    schedule: r.schedule,
    features: r.features,
    symbol: kernelSymbol(workload, r.schedule),
    latencyMs: Object.fromEntries(levelsOf(r).map((l) => [String(l), medianMs(r, l)!])),
  };
}

/** Ids of the group's family versions (what a compile keeps). */
export function familyIds(group: readonly TuningRecord[]): string[] {
  const family = selectFamily(group.map(candidateOf), { maxVersions: COMPACT_MAX_VERSIONS, tolerance: COMPACT_REGRET_TOLERANCE });
  return family.versions.map((v) => v.id);
}

/** Ids of the group's fastest record at each level it was measured at. */
export function bestPerLevelIds(group: readonly TuningRecord[]): string[] {
  const levels = [...new Set(group.flatMap(levelsOf))];
  return levels.map((level) => {
    const ranked = group
      .map((r) => ({ id: recordId(r), ms: medianMs(r, level) }))
      .filter((x): x is { id: string; ms: number } => x.ms !== undefined)
      .sort((a, b) => a.ms - b.ms || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return ranked[0]!.id;
  });
}

/** The schedule a version is profiled with at another thread count (as other-thread-counts.ts makes it). */
function variantKey(r: TuningRecord, threads: number): string {
  const schedule = repair({ ...r.schedule, threads }, r.workloadSpec, r.targetSpec);
  return `${threads} ${canonicalJson(schedule)}`;
}

function groupBy<T>(items: Iterable<T>, key: (t: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const t of items) groups.set(key(t), [...(groups.get(key(t)) ?? []), t]);
  return groups;
}

/** The compacted records of one or more targets: see the header for what is kept. Order is not fixed here. */
export function compactRecords(records: Iterable<TuningRecord>): TuningRecord[] {
  // A raced record (record.ts isComplete) is a verdict, not a measurement: never a version or a best.
  const ok = [...records].filter((r) => r.status === 'ok' && isComplete(r) && levelsOf(r).length > 0);
  const kept = new Map<string, TuningRecord>();
  const byWorkload = groupBy(ok, (r) => `${r.target} ${r.workload} ${r.tool.codegen}`);
  for (const sameWorkload of byWorkload.values()) {
    const byId = new Map(sameWorkload.map((r) => [recordId(r), r]));
    const bySchedule = new Map(sameWorkload.map((r) => [`${r.threads} ${canonicalJson(r.schedule)}`, r]));
    const counts = [...new Set(sameWorkload.map((r) => r.threads))];
    for (const group of groupBy(sameWorkload, (r) => String(r.threads)).values()) {
      const family = familyIds(group).map((id) => byId.get(id)!);
      for (const id of bestPerLevelIds(group)) kept.set(id, byId.get(id)!);
      for (const version of family) {
        kept.set(recordId(version), version);
        for (const n of counts.filter((c) => c !== version.threads)) {
          const variant = bySchedule.get(variantKey(version, n));
          if (variant) kept.set(recordId(variant), variant);
        }
      }
    }
  }
  return [...kept.values()];
}
