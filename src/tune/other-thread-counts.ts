/**
 * The kept versions of each workload at the other thread counts, quiet: what the runtime needs to
 * pick a version for a given number of free cores. Profiling a version at another count records a
 * candidate at that count, which may join that count's family, so the families are selected again
 * until they stand still: a rerun against the same database (which holds those records from the
 * start) then picks the same versions. Each round profiles every workload whose family still moves,
 * together (evaluateBatches: one build, one harness child per thread count).
 */
import type { Workload } from '../ir/workload.js';
import { repair, isValid } from '../space/knobs.js';
import { evaluateBatches, type EvaluateContext } from './evaluate.js';
import type { Family, FamilyCandidate } from '../space/family.js';

/**
 * Profile each workload's family (select(k): workload k's family from the database as it now is)
 * at `counts` until no family changes. Per workload: the family kept, and per kept version (same
 * order) threads → level-0 median (ms) where measured.
 */
export async function profileUntilSettled<F extends Family>(
  workloads: readonly Workload[],
  select: (k: number) => F,
  counts: readonly number[],
  ctx: EvaluateContext,
): Promise<{ fams: F[]; profiles: Record<string, number>[][] }> {
  const fams = workloads.map((_, k) => select(k));
  const profiles: Record<string, number>[][] = workloads.map(() => []);
  // Each round that changes a family measures a version not profiled before, so this ends; the
  // family kept is the one selected after the last profiling, whose candidate counts a rerun sees.
  const ids = (f: Family) => f.versions.map((v) => v.id).join(',');
  let moving = workloads.map((_, k) => k);
  for (let round = 0; round < 16 && moving.length > 0; round++) {
    const got = await profileVersions(
      moving.map((k) => ({ w: workloads[k]!, versions: fams[k]!.versions })),
      counts,
      ctx,
    );
    moving = moving.filter((k, j) => {
      profiles[k] = got[j]!;
      const again = select(k);
      const settled = ids(again) === ids(fams[k]!);
      fams[k] = again;
      return !settled;
    });
  }
  return { fams, profiles };
}

/**
 * Level-0 latency of each kept version at each requested thread count (measured or from the
 * database), for several workloads' families at once: per workload, per version, threads → ms.
 */
export async function profileVersions(
  fams: readonly { w: Workload; versions: readonly FamilyCandidate[] }[],
  counts: readonly number[],
  ctx: EvaluateContext,
): Promise<Record<string, number>[][]> {
  const plans = fams.map(({ w, versions }) => {
    const profiles = versions.map((v) => ({ [String(v.schedule.threads)]: v.latencyMs['0'] }) as Record<string, number | undefined>);
    const variants = versions
      .flatMap((v, vi) =>
        counts.filter((c) => c !== v.schedule.threads).map((c) => ({ vi, s: repair({ ...v.schedule, threads: c }, w, ctx.target) })),
      )
      .filter((x) => isValid(x.s, w, ctx.target) && x.s.threads !== versions[x.vi]!.schedule.threads);
    return { w, profiles, variants, unique: [...new Map(variants.map((x) => [JSON.stringify(x.s), x.s])).values()] };
  });
  const asked = plans.filter((p) => p.unique.length > 0);
  // Every variant is timed in full: a profile is a measurement the runtime reads, not a race to win (race.ts).
  const quiet = { ...ctx, levels: [0], levelsFor: () => [0], search: 'exhaustive' as const };
  const results =
    asked.length > 0
      ? await evaluateBatches(
          asked.map((p) => ({ workload: p.w, schedules: p.unique })),
          quiet,
        )
      : [];
  asked.forEach((p, k) => {
    const byKey = new Map(results[k]!.map((r, i) => [JSON.stringify(p.unique[i]), r]));
    for (const x of p.variants) {
      const ms = byKey.get(JSON.stringify(x.s))?.medianMs['0'];
      if (ms !== undefined) p.profiles[x.vi]![String(x.s.threads)] = ms;
    }
  });
  return plans.map((p) => p.profiles.map(clean));
}

const clean = (p: Record<string, number | undefined>) =>
  Object.fromEntries(Object.entries(p).filter((e): e is [string, number] => e[1] !== undefined));
