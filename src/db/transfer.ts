/**
 * Tuning transfer across targets (as TVM reuses records of other targets): when a workload has no
 * record for this target, the records other machines measured for it say where to start. They
 * are never *applied* — a transferred schedule is a candidate to measure here, nothing more.
 *
 * "Nearest": targets are compared by, in order of weight,
 *   1. vector ISA (AVX-512 / AVX2+FMA / scalar, from the target's isa): a different ISA level is
 *      far — its schedules need their vector width repaired before they even compile here;
 *   2. cache sizes (L1d, L2, L3), as |log2| ratios: tiles are sized to the caches;
 *   3. core count (|log2| ratio): parallel chunking is sized to the cores;
 *   4. the same CPU model name and compiler: a small bonus.
 * targetDistance is that weighted sum; 0 means "the same machine type" (an exact target never
 * reaches here: its records are used as measurements).
 *
 * From each workload's records on the nearest targets, the candidates worth measuring first are
 * the ones that mattered there: its latency frontier across interference levels (what its family
 * would keep), best first, then its next best candidates.
 */
import { levelsOf, medianMs, type TuningRecord } from './record.js';
import type { Target } from '../toolchain/target.js';

const log2Ratio = (a: number, b: number) => (a > 0 && b > 0 ? Math.abs(Math.log2(a / b)) : 4);

const isaClass = (t: Pick<Target, 'isa'>) => (t.isa.avx512f ? 2 : t.isa.avx2 && t.isa.fma ? 1 : 0);

/** How far target `b`'s measurements are from telling anything about target `a` (0: same type). */
export function targetDistance(a: Target, b: Target): number {
  const isa = 10 * Math.abs(isaClass(a) - isaClass(b));
  const caches = log2Ratio(a.caches.l1d, b.caches.l1d) + log2Ratio(a.caches.l2, b.caches.l2) + 0.5 * log2Ratio(a.caches.l3, b.caches.l3);
  const cores = 0.5 * log2Ratio(a.cores, b.cores);
  const same = (a.cpuModel === b.cpuModel ? -0.25 : 0) + (a.cc === b.cc ? -0.05 : 0);
  return Math.max(0, isa + caches + cores + same);
}

export interface TransferSeed {
  readonly record: TuningRecord;
  /** The source target's distance from this one. */
  readonly distance: number;
}

/** One source target's candidates for a workload: what its family would keep (its frontier), then its next best, best first. */
function frontierOf(records: readonly TuningRecord[]): TuningRecord[] {
  const ok = records.filter((r) => r.status === 'ok' && levelsOf(r).length > 0);
  const levels = [...new Set(ok.flatMap(levelsOf))].sort((a, b) => a - b);
  const at = (r: TuningRecord, l: number) => medianMs(r, l) ?? Infinity;
  const dominated = (r: TuningRecord) =>
    ok.some((o) => o !== r && levels.every((l) => at(o, l) <= at(r, l)) && levels.some((l) => at(o, l) < at(r, l)));
  const quiet = (r: TuningRecord) => at(r, levels[0] ?? 0);
  const byQuiet = (a: TuningRecord, b: TuningRecord) => quiet(a) - quiet(b);
  const frontier = ok.filter((r) => !dominated(r)).sort(byQuiet);
  return [...frontier, ...ok.filter((r) => !frontier.includes(r)).sort(byQuiet)];
}

/**
 * Seeds for a workload on `target` from other targets' records: the nearest targets' frontier
 * candidates, nearest first, at most `limit`. `records` may hold any targets' records (this
 * target's are ignored: they are measurements, not seeds).
 */
export function transferSeeds(records: readonly TuningRecord[], target: Target, fingerprint: string, limit: number): TransferSeed[] {
  const byTarget = new Map<string, TuningRecord[]>();
  for (const r of records) {
    if (r.target === fingerprint) continue;
    const list = byTarget.get(r.target) ?? [];
    list.push(r);
    byTarget.set(r.target, list);
  }
  const ranked = [...byTarget.values()]
    .map((rs) => ({ rs, distance: targetDistance(target, rs[0]!.targetSpec) }))
    .sort((a, b) => a.distance - b.distance || (a.rs[0]!.target < b.rs[0]!.target ? -1 : 1));
  const out: TransferSeed[] = [];
  for (const { rs, distance } of ranked) {
    for (const record of frontierOf(rs)) {
      if (out.length >= limit) return out;
      out.push({ record, distance });
    }
  }
  return out;
}
