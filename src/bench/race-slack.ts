/**
 * What a racing slack would cost, from records (no timing runs): for each tuning run of a database
 * of complete records (an exhaustive search's, ideally: racing itself cuts what it drops short), at
 * each factor f, the level measurements beyond f × the run's best at that level (the full windows a
 * race with slack f − 1 would cut short), the candidates beyond it at every level they were
 * measured at (those it would drop outright), and how many of those the run's family keeps
 * (space/family.ts, the compile's defaults). A slack is safe for those records when no family
 * member is beyond it everywhere.
 *
 *   node dist/src/bench/race-slack.js --db DIR [--slacks 1.5,1.3,1.2,1.1]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { COMPACT_MAX_VERSIONS, COMPACT_REGRET_TOLERANCE } from '../db/compact.js';
import { isComplete, levelsOf, medianMs, recordId, type TuningRecord } from '../db/record.js';
import { scanDatabase } from '../db/scan.js';
import { selectFamily } from '../space/family.js';

export interface SlackExposure {
  /** Median at a level / the run's best there above which a measurement counts as beyond. */
  readonly factor: number;
  /** Candidates beyond at every level they were measured at. */
  readonly beyond: number;
  /** Of `beyond`, the family members. */
  readonly familyBeyond: number;
  /** Level measurements beyond. */
  readonly measurementsBeyond: number;
}

export interface SlackReport {
  readonly runs: number;
  readonly records: number;
  /** Level measurements of those records (one full window each). */
  readonly measurements: number;
  readonly exposures: readonly SlackExposure[];
}

/** Per factor, the candidates beyond it and the family members among them, over every run of `records`. */
export function slackExposure(records: Iterable<TuningRecord>, factors: readonly number[]): SlackReport {
  const runs = new Map<string, TuningRecord[]>();
  for (const r of records) {
    if (r.status !== 'ok' || !isComplete(r) || medianMs(r, 0) === undefined) continue;
    const key = `${r.target} ${r.workload} ${r.threads} ${r.tool.codegen}`;
    runs.set(key, [...(runs.get(key) ?? []), r]);
  }
  const beyond = factors.map(() => 0);
  const familyBeyond = factors.map(() => 0);
  const measurementsBeyond = factors.map(() => 0);
  let count = 0,
    measurements = 0;
  for (const rs of runs.values()) {
    const family = selectFamily(
      rs.map((r) => ({
        id: recordId(r),
        schedule: r.schedule,
        features: r.features,
        symbol: recordId(r),
        latencyMs: Object.fromEntries(levelsOf(r).map((l) => [String(l), medianMs(r, l)!])),
      })),
      { maxVersions: COMPACT_MAX_VERSIONS, tolerance: COMPACT_REGRET_TOLERANCE },
    );
    const kept = new Set(family.versions.map((v) => v.id));
    const best = new Map<number, number>();
    for (const r of rs) for (const l of levelsOf(r)) best.set(l, Math.min(best.get(l) ?? Infinity, medianMs(r, l)!));
    count += rs.length;
    measurements += rs.reduce((n, r) => n + levelsOf(r).length, 0);
    factors.forEach((f, i) => {
      for (const r of rs) {
        const far = levelsOf(r).filter((l) => medianMs(r, l)! > f * best.get(l)!);
        measurementsBeyond[i]! += far.length;
        if (far.length < levelsOf(r).length) continue;
        beyond[i]!++;
        if (kept.has(recordId(r))) familyBeyond[i]!++;
      }
    });
  }
  return {
    runs: runs.size,
    records: count,
    measurements,
    exposures: factors.map((factor, i) => ({
      factor,
      beyond: beyond[i]!,
      familyBeyond: familyBeyond[i]!,
      measurementsBeyond: measurementsBeyond[i]!,
    })),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { db: { type: 'string' }, slacks: { type: 'string' } } });
  if (!values.db) throw new Error('usage: node dist/src/bench/race-slack.js --db DIR [--slacks 1.5,1.3,1.2,1.1]');
  const factors = (values.slacks ?? '1.5,1.3,1.2,1.1,1.05').split(',').map(Number);
  if (factors.some((f) => !(f >= 1))) throw new Error('--slacks: factors of at least 1, e.g. 1.5,1.3');
  const scan = await scanDatabase(values.db, {});
  const r = slackExposure(scan.records.values(), factors);
  console.log(`${r.records} complete ok records, ${r.measurements} level measurements, in ${r.runs} tuning runs of ${values.db}`);
  const pct = (n: number, of: number) => `${((100 * n) / Math.max(1, of)).toFixed(1)}%`;
  for (const e of r.exposures)
    console.log(
      `> ${e.factor} × the run's best at a level: ${e.measurementsBeyond} measurements (${pct(e.measurementsBeyond, r.measurements)}); ` +
        `at every level: ${e.beyond} candidates (${pct(e.beyond, r.records)}), ${e.familyBeyond} of them family members`,
    );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
