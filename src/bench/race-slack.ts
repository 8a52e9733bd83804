/**
 * What a racing slack would cost, from records (no timing runs): for each tuning run of a database
 * of complete records (an exhaustive search's, ideally: racing itself removes what it drops), how
 * many candidates lie beyond s × the run's best quiet median, and how many of those the run's
 * family keeps (space/family.ts, the compile's defaults). A slack is safe for those records when no
 * family member lies beyond it; the share beyond is the most a race with that slack could drop.
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
  /** Quiet median / run's best above which a candidate counts as beyond. */
  readonly factor: number;
  readonly beyond: number;
  /** Of `beyond`, the family members. */
  readonly familyBeyond: number;
}

export interface SlackReport {
  readonly runs: number;
  readonly records: number;
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
  let count = 0;
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
    const best = Math.min(...rs.map((r) => medianMs(r, 0)!));
    count += rs.length;
    factors.forEach((f, i) => {
      for (const r of rs) {
        if (!(medianMs(r, 0)! > f * best)) continue;
        beyond[i]!++;
        if (kept.has(recordId(r))) familyBeyond[i]!++;
      }
    });
  }
  return {
    runs: runs.size,
    records: count,
    exposures: factors.map((factor, i) => ({ factor, beyond: beyond[i]!, familyBeyond: familyBeyond[i]! })),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { db: { type: 'string' }, slacks: { type: 'string' } } });
  if (!values.db) throw new Error('usage: node dist/src/bench/race-slack.js --db DIR [--slacks 1.5,1.3,1.2,1.1]');
  const factors = (values.slacks ?? '1.5,1.3,1.2,1.1,1.05').split(',').map(Number);
  if (factors.some((f) => !(f >= 1))) throw new Error('--slacks: factors of at least 1, e.g. 1.5,1.3');
  const scan = await scanDatabase(values.db, {});
  const r = slackExposure(scan.records.values(), factors);
  console.log(`${r.records} complete ok records in ${r.runs} tuning runs of ${values.db}`);
  for (const e of r.exposures)
    console.log(
      `quiet > ${e.factor} × the run's best: ${e.beyond} candidates (${((100 * e.beyond) / Math.max(1, r.records)).toFixed(1)}%), ` +
        `${e.familyBeyond} of them family members`,
    );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
