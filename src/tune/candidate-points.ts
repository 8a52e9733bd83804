/**
 * What a bundle keeps of a workload's tuning: every candidate the family was chosen from (and every
 * one that failed), reduced to the numbers a researcher plots — where it sits in the
 * parallelism–locality plane, its median latency at each level, how many repeats that median is
 * of, and whether it was kept or dominated. Pure; built from the tuning records.
 */
import { levelsOf, medianMs, recordId, type TuningRecord } from '../db/record.js';
import type { MeasureStatus } from '../measure/run-candidate.js';
import type { Schedule } from '../space/knobs.js';
import { dominates, type Family, type FamilyCandidate } from '../space/family.js';

export interface CandidateProfile {
  /** Tuning record id. */
  readonly id: string;
  readonly status: MeasureStatus;
  readonly schedule: Schedule;
  readonly threads: number;
  readonly footprintBytes: { readonly l1: number; readonly l2: number; readonly l3: number; readonly total: number };
  readonly parallelChunks: number;
  /** Level → median latency (ms); empty for a failed candidate. */
  readonly latencyMs: Readonly<Record<string, number>>;
  /** Level → number of timed repeats behind the median. */
  readonly repeats: Readonly<Record<string, number>>;
  readonly kept: boolean;
  readonly dominated: boolean;
}

export interface WorkloadProfile {
  readonly workload: string;
  readonly candidates: readonly CandidateProfile[];
  /**
   * Sum over these candidates of every recorded repeat's per-call latency at the family's levels, in
   * seconds: a lower bound on the kernel time the tuning spent (builds, verification, warm-up and
   * the calls folded into each repeat are not in it).
   */
  readonly timedSeconds: number;
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * `records`: the workload's records for this target at the thread counts the family considered,
 * failures included; `levels`: the levels the family was selected over.
 */
export function workloadProfile(
  workload: string,
  records: readonly TuningRecord[],
  levels: readonly number[],
  family: Family,
  considered: readonly FamilyCandidate[],
): WorkloadProfile {
  const kept = new Set(family.versions.map((v) => v.id));
  const okById = new Map(considered.map((c) => [c.id, c]));
  const candidates = records.map((r): CandidateProfile => {
    const id = recordId(r);
    const measured = levelsOf(r).filter((l) => levels.includes(l));
    const latencyMs = Object.fromEntries(
      measured.flatMap((l) => {
        const ms = medianMs(r, l);
        return ms === undefined ? [] : [[String(l), ms]];
      }),
    );
    const self = okById.get(id);
    return {
      id,
      status: r.status,
      schedule: r.schedule,
      threads: r.threads,
      footprintBytes: r.features.footprintBytes,
      parallelChunks: r.features.parallelChunks,
      latencyMs,
      repeats: r.status === 'ok' ? Object.fromEntries(measured.map((l) => [String(l), r.latencies[String(l)]!.length])) : {},
      kept: kept.has(id),
      dominated: self !== undefined && considered.some((b) => b !== self && dominates(b, self)),
    };
  });
  const seconds =
    records.reduce(
      (s, r) =>
        s +
        Object.entries(r.latencies)
          .filter(([l]) => levels.includes(Number(l)))
          .reduce((t, [, xs]) => t + xs.reduce((u, x) => u + x, 0), 0),
      0,
    ) / 1000;
  const unique = [...new Map(candidates.map((c) => [c.id, c])).values()].sort(byId);
  return { workload, candidates: unique, timedSeconds: Math.round(seconds * 1e6) / 1e6 };
}
