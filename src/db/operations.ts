/**
 * Whole-database operations behind `veltair db`: stats, merge (concatenate + dedup), prune. Merge
 * and prune rewrite through store.rewriteDatabase: under the directory lock, to a temp file renamed
 * into place, so a concurrent append is never lost and a crash never leaves half a database.
 */
import { medianMs, levelsOf, type TuningRecord } from './record.js';
import { databaseFiles, scanDatabase, type WarningSink } from './scan.js';
import { rewriteDatabase } from './store.js';
import type { MeasureStatus } from '../measure/run-candidate.js';

export interface TargetSummary {
  readonly target: string;
  readonly records: number;
  readonly cpuModel: string;
  readonly cores: number;
  readonly cc: string;
}

export interface DatabaseStats {
  readonly path: string;
  readonly files: number;
  /** Unique records (by record id). */
  readonly records: number;
  readonly corrupt: number;
  readonly duplicates: number;
  readonly workloads: number;
  readonly targets: Readonly<Record<string, number>>;
  readonly targetDetails: readonly TargetSummary[];
  readonly byStatus: Readonly<Partial<Record<MeasureStatus, number>>>;
}

export async function databaseStats(path: string, o: { onWarning?: WarningSink } = {}): Promise<DatabaseStats> {
  const scan = await scanDatabase(path, { onWarning: o.onWarning });
  const targets: Record<string, number> = {};
  const details = new Map<string, TargetSummary>();
  const byStatus: Partial<Record<MeasureStatus, number>> = {};
  const workloads = new Set<string>();
  for (const r of scan.records.values()) {
    targets[r.target] = (targets[r.target] ?? 0) + 1;
    byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    workloads.add(r.workload);
    const d = details.get(r.target);
    details.set(r.target, {
      target: r.target,
      records: (d?.records ?? 0) + 1,
      cpuModel: r.targetSpec.cpuModel,
      cores: r.targetSpec.cores,
      cc: r.targetSpec.cc,
    });
  }
  return {
    path,
    files: scan.files.length,
    records: scan.records.size,
    corrupt: scan.corrupt,
    duplicates: scan.duplicates,
    workloads: workloads.size,
    targets,
    targetDetails: [...details.values()].sort((a, b) => b.records - a.records),
    byStatus,
  };
}

export interface MergeResult {
  readonly dest: string;
  readonly filesRead: number;
  readonly records: number;
  readonly duplicates: number;
  readonly corrupt: number;
}

/**
 * Merge databases (directories or single .jsonl files) into `destDir`, whose own records are kept:
 * everything is read, deduplicated by record id and written as one `records.jsonl`; files inside
 * `destDir` that were folded in are removed. Records of every target are kept.
 */
export async function mergeDatabases(
  sources: readonly string[],
  destDir: string,
  o: { onWarning?: WarningSink } = {},
): Promise<MergeResult> {
  for (const s of sources) await databaseFiles(s); // FILE_NOT_FOUND before anything is written
  const { scan, written } = await rewriteDatabase(destDir, (s) => s.records, {
    extraSources: sources,
    onWarning: o.onWarning,
    allowMissing: true,
  });
  return { dest: destDir, filesRead: scan.files.length, records: written, duplicates: scan.duplicates, corrupt: scan.corrupt };
}

export interface PruneOptions {
  /** Per target, workload and thread count, keep the N fastest ok records at each measured level (their union). */
  readonly keepPerWorkload?: number;
  /** Drop records whose status is not ok (a later tune may then measure those candidates again). */
  readonly dropFailed?: boolean;
  /** Drop every record not measured on `target`. */
  readonly dropOtherTargets?: boolean;
  /** Fingerprint of the target to keep; required with dropOtherTargets. */
  readonly target?: string;
  readonly onWarning?: WarningSink;
}

export interface PruneResult {
  readonly path: string;
  readonly before: number;
  readonly kept: number;
  readonly dropped: {
    readonly corrupt: number;
    readonly duplicates: number;
    readonly failed: number;
    readonly otherTargets: number;
    readonly beyondKeep: number;
  };
}

/** The ids of a group's ok records that are among the `n` fastest (by median) at any level. */
export function bestPerLevel(group: readonly [string, TuningRecord][], n: number): Set<string> {
  const keep = new Set<string>();
  const levels = new Set(group.flatMap(([, r]) => levelsOf(r)));
  for (const level of levels) {
    group
      .map(([id, r]) => ({ id, ms: medianMs(r, level) }))
      .filter((x): x is { id: string; ms: number } => x.ms !== undefined)
      .sort((a, b) => a.ms - b.ms || a.id.localeCompare(b.id))
      .slice(0, n)
      .forEach((x) => keep.add(x.id));
  }
  return keep;
}

/**
 * Rewrite a database keeping what the options allow. Corrupt lines and duplicates always go.
 * `keepPerWorkload` ranks ok records only; failures stay unless `dropFailed` (they are what stops
 * a rerun from measuring a crashing candidate again).
 */
export async function pruneDatabase(dir: string, o: PruneOptions = {}): Promise<PruneResult> {
  if (o.dropOtherTargets && !o.target) throw new Error('pruneDatabase: dropOtherTargets needs a target');
  await databaseFiles(dir); // FILE_NOT_FOUND rather than creating an empty database
  const dropped = { corrupt: 0, duplicates: 0, failed: 0, otherTargets: 0, beyondKeep: 0 };
  const { scan, written } = await rewriteDatabase(
    dir,
    (s) => {
      dropped.corrupt = s.corrupt;
      dropped.duplicates = s.duplicates;
      const groups = new Map<string, [string, TuningRecord][]>();
      const kept: [string, TuningRecord][] = [];
      for (const [id, r] of s.records) {
        if (o.dropOtherTargets && r.target !== o.target) {
          dropped.otherTargets++;
          continue;
        }
        if (r.status !== 'ok') {
          if (o.dropFailed) dropped.failed++;
          else kept.push([id, r]);
          continue;
        }
        // A family is per thread count: ranking 2-thread records against 1-thread ones would prune one count's family away.
        const key = `${r.target}\0${r.workload}\0${r.threads}`;
        groups.set(key, [...(groups.get(key) ?? []), [id, r]]);
      }
      for (const group of groups.values()) {
        const best = o.keepPerWorkload === undefined ? undefined : bestPerLevel(group, o.keepPerWorkload);
        for (const entry of group) {
          if (!best || best.has(entry[0])) kept.push(entry);
          else dropped.beyondKeep++;
        }
      }
      return kept;
    },
    { onWarning: o.onWarning },
  );
  return { path: dir, before: scan.lines, kept: written, dropped };
}
