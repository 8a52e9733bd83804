/**
 * Single pass vs five passes. The same per-pass budget (--trials candidates per
 * workload) is spent two ways on a few ResNet-50 workloads:
 *   five-pass: five separate tuning passes, pass L optimising and measuring level L only (each
 *              with its own database; the five share one kernel cache, as one user's would);
 *   one-pass:  one pass measuring every candidate at all five levels (its own database and cache).
 * Reported: each approach's wall-clock tuning time and their ratio; per workload and level, the
 * best latency each approach found in its own pass (taken minutes apart, so only indicative) and —
 * the comparison that counts — the two winners re-measured back to back at that level, alternating
 * order over R rounds, as a paired ratio one-pass / five-pass with its spread.
 *
 *   npm run build && node dist/src/bench/passes.js [--trials 8] [--workloads 3] [--rounds 3] [--threads N] [--min-time-ms 100]
 * Markdown on stdout, progress on stderr.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKernel } from '../codegen/kernel.js';
import { medianMs, levelsOf } from '../db/record.js';
import { openDatabase, type TuningDatabase } from '../db/store.js';
import type { Workload } from '../ir/workload.js';
import { buildKernels } from '../measure/build.js';
import { summarizeRatios, median } from '../stats.js';
import { makeCandidate } from '../space/candidate.js';
import type { Schedule } from '../space/knobs.js';
import { detectTarget, type Target } from '../toolchain/target.js';
import { measureCandidatesAtLevels } from '../measure/at-levels.js';
import { openLevelBank, planCores, type LevelBank } from '../interference/bank.js';
import { DEFAULT_NOISY_SCREEN } from '../tune/evaluate.js';
import { tuneWorkloads } from '../tune/tune-model.js';
import { describeWorkload } from '../compare/layers.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { buildBenchModels } from './models.js';

const LEVELS = [0, 1, 2, 3, 4] as const;
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const log = (m: string) => process.stderr.write(`passes: ${m}\n`);

const PICKS: readonly ((w: Workload) => boolean)[] = [
  (w) => w.op === 'conv2d' && w.kh === 3 && w.cin === 64 && w.cout === 64 && w.h === 56 && w.strideH === 1,
  (w) => w.op === 'conv2d' && w.kh === 1 && w.cin === 256 && w.cout === 64 && w.h === 56,
  (w) => w.op === 'conv2d' && w.kh === 3 && w.cin === 256 && w.cout === 256 && w.h === 14 && w.strideH === 1,
];

interface Best {
  readonly schedule: Schedule;
  readonly ms: number;
}

/** Best in-pass median at a level over a database's ok records of a workload. */
function bestAt(db: TuningDatabase, key: string, level: number): Best | undefined {
  let best: Best | undefined;
  for (const r of db.lookup(key)) {
    if (!levelsOf(r).includes(level)) continue;
    const ms = medianMs(r, level)!;
    if (!best || ms < best.ms) best = { schedule: r.schedule, ms };
  }
  return best;
}

/** Records by status (and the first failure's message), for the log. */
function statusLine(db: TuningDatabase, keys: readonly string[]): string {
  const counts: Record<string, number> = {};
  let firstError = '';
  for (const k of keys)
    for (const r of db.records(k)) {
      counts[r.status] = (counts[r.status] ?? 0) + 1;
      if (r.error && !firstError) firstError = r.error;
    }
  return `${JSON.stringify(counts)}${firstError ? ` first error: ${firstError}` : ''}`;
}

/** Of a database's ok records: how many, and how many were measured quiet only (screened out of the noisy levels). */
function countScreened(db: TuningDatabase, keys: readonly string[]): { ok: number; screened: number } {
  const ok = keys.flatMap((k) => db.records(k)).filter((r) => r.status === 'ok');
  return { ok: ok.length, screened: ok.filter((r) => levelsOf(r).length === 1).length };
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const t0 = Date.now();
  const value = await fn();
  return { value, seconds: (Date.now() - t0) / 1000 };
}

/** Paired re-measurement at one level: one-pass winner vs five-pass winner, alternating order. */
async function paired(
  w: Workload,
  a: Schedule,
  b: Schedule,
  level: number,
  rounds: number,
  bank: LevelBank,
  t: Target,
  cacheDir: string,
  minTimeMs: number,
): Promise<number[]> {
  const cands = [a, b].map((s) => makeCandidate(w, s, t));
  const units = cands.map(generateKernel);
  const built = await buildKernels(units, { cacheDir });
  const job = (i: number) => {
    const o = built.find((x) => x.symbol === units[i]!.symbol)!;
    if (o.status !== 'ok') throw new Error(o.message);
    return { soPath: o.soPath, symbol: o.symbol, threads: cands[i]!.schedule.threads };
  };
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    const ms: number[] = [];
    for (const i of order) {
      const [[m]] = await measureCandidatesAtLevels([{ job: job(i), levels: [level] }], bank, { cacheDir, minTimeMs });
      if (m!.status !== 'ok') throw new Error(`re-measurement failed: ${m!.status} ${m!.message ?? ''}`);
      ms[i] = m!.medianMs!;
    }
    ratios.push(ms[0]! / ms[1]!);
  }
  return ratios;
}

async function main(): Promise<void> {
  const trials = arg('--trials', 8),
    count = arg('--workloads', 3),
    rounds = arg('--rounds', 3),
    minTimeMs = arg('--min-time-ms', 100);
  const target = await detectTarget();
  const threads = [arg('--threads', Math.max(1, target.cores - 1))];
  const machine = await machineInfo();
  const models = await buildBenchModels(['resnet50']);
  const work = await mkdtemp(join(tmpdir(), 'veltair-passes-'));
  try {
    const graph = models.models.get('resnet50')!.graph;
    const workloads = PICKS.slice(0, count).map((p) => graph.layers.find((l) => l.workload && p(l.workload))!.workload!);
    const uses = workloads.map((workload) => ({ workload, count: graph.layers.filter((l) => l.workload?.key === workload.key).length }));
    const common = { trials, threads, seed: 1, target, minTimeMs, maxVersions: 5 };
    const open = (name: string) => openDatabase(join(work, name), { target, shipped: false });

    // One co-runner bank, started before either approach and kept warm for both (and for the paired
    // re-measurement): its start is reported on its own line rather than charged to either.
    const plan = planCores(threads);
    log(`starting the co-runners of levels ${LEVELS.filter((l) => l > 0).join(',')}`);
    const started = await timed(() => openLevelBank({ levels: [...LEVELS], plan, cacheDir: join(work, 'one-cache') }));
    const bank = started.value;
    try {
      log(`one pass, levels ${LEVELS.join(',')}, ${trials} trials × ${uses.length} workloads`);
      const oneDb = await open('one-db');
      const one = await timed(() =>
        tuneWorkloads(uses, {
          ...common,
          levels: [...LEVELS],
          db: oneDb,
          cacheDir: join(work, 'one-cache'),
          bank,
          onProgress: (p) => log(`one-pass ${p.trialsDone}/${p.budget}`),
        }),
      );

      log(
        `one pass: ${one.seconds.toFixed(1)} s, records ${statusLine(
          oneDb,
          workloads.map((w) => w.key),
        )}`,
      );
      const fiveDbs: TuningDatabase[] = [];
      let fiveSeconds = 0,
        fiveMeasured = 0;
      for (const level of LEVELS) {
        log(`five-pass: pass for level ${level}`);
        const db = await open(`five-db-${level}`);
        fiveDbs.push(db);
        const pass = await timed(() =>
          tuneWorkloads(uses, {
            ...common,
            levels: [level],
            db,
            cacheDir: join(work, 'five-cache'),
            bank,
            onProgress: (p) => log(`pass ${level}: ${p.trialsDone}/${p.budget}`),
          }),
        );
        fiveSeconds += pass.seconds;
        log(
          `pass ${level}: ${pass.seconds.toFixed(1)} s, records ${statusLine(
            db,
            workloads.map((w) => w.key),
          )}`,
        );
        fiveMeasured += pass.value.measured;
      }

      log(`paired re-measurement of the winners, ${rounds} rounds per level`);
      const rows: string[] = [];
      const within3: boolean[] = [];
      for (const w of workloads) {
        for (const level of LEVELS) {
          const a = bestAt(oneDb, w.key, level),
            b = bestAt(fiveDbs[level]!, w.key, level);
          if (!a || !b) {
            rows.push(
              `| ${describeWorkload(w)} | ${level} | ${a?.ms.toFixed(3) ?? '-'} | ${b?.ms.toFixed(3) ?? '-'} | no winner to compare |`,
            );
            continue;
          }
          const same = JSON.stringify(a.schedule) === JSON.stringify(b.schedule);
          const ratios = same
            ? []
            : await paired(w, a.schedule, b.schedule, level, rounds, bank, target, join(work, 'one-cache'), minTimeMs);
          const s = same ? undefined : summarizeRatios(ratios);
          within3.push(same || s!.medianRatio <= 1.03);
          rows.push(
            `| ${describeWorkload(w)} | ${level} | ${a.ms.toFixed(3)} | ${b.ms.toFixed(3)} | ${
              same ? 'same schedule (1.00)' : `${s!.medianRatio.toFixed(3)} [${s!.minRatio.toFixed(3)}–${s!.maxRatio.toFixed(3)}]`
            } |`,
          );
        }
      }

      const start = started.seconds;
      const screened = countScreened(
        oneDb,
        workloads.map((w) => w.key),
      );
      const out = [
        `### Single pass vs five passes (${machineLine(machine)})`,
        '',
        `Command: \`node dist/src/bench/passes.js --trials ${trials} --workloads ${count} --rounds ${rounds} --threads ${threads[0]} ` +
          `--min-time-ms ${minTimeMs}\`; ResNet-50 workloads ${workloads.map(describeWorkload).join('; ')}; ` +
          `kernels on ${threads[0]} thread(s), co-runners on cores ${plan.noiseCores.join(',')}.`,
        '',
        '| approach | tuning time (s) | candidates measured | level-measurements |',
        '|---|---|---|---|',
        `| one pass, levels 0–4 | ${one.seconds.toFixed(1)} | ${one.value.measured} | ${one.value.measured * LEVELS.length} (at most) |`,
        `| five passes, one level each | ${fiveSeconds.toFixed(1)} | ${fiveMeasured} | ${fiveMeasured} |`,
        `| ratio one / five | ${(one.seconds / fiveSeconds).toFixed(2)} | | |`,
        '',
        `Co-runners of levels 1–4 started once before both approaches and kept warm for both: ${start.toFixed(1)} s, in neither row. ` +
          `Started per compile instead, each approach pays about that once in all (one pass starts four co-runners, the five passes ` +
          `one each), so the ratio would be (${one.seconds.toFixed(1)} + ${start.toFixed(1)}) / (${fiveSeconds.toFixed(1)} + ${start.toFixed(1)}) = ` +
          `${((one.seconds + start) / (fiveSeconds + start)).toFixed(2)} (arithmetic on the figures above, not a separate run). ` +
          `The one pass measured ${screened.screened} of its ${screened.ok} ok candidates at level 0 only: their quiet median was over ` +
          `${DEFAULT_NOISY_SCREEN}× the best so far (src/tune/evaluate.ts).`,
        '',
        `| workload | level | one-pass best, in pass (ms) | five-pass best, in pass (ms) | paired ratio one/five, median [min–max] over ${rounds} rounds |`,
        '|---|---|---|---|---|',
        ...rows,
        '',
        `One-pass winner within 3% of the five-pass winner (paired median): ${within3.filter(Boolean).length}/${within3.length} workload-levels. ` +
          `Families kept (one pass): ${[...one.value.families.values()].map((f) => f.count).join(', ')} versions; ` +
          `median in-pass regret ${LEVELS.map(
            (l) => `L${l} ${median([...one.value.families.values()].map((f) => f.regretPercent[String(l)] ?? 0)).toFixed(1)}%`,
          ).join(', ')}.`,
      ];
      process.stdout.write(out.join('\n') + '\n');
    } finally {
      await bank.close();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
    await models.dispose();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`passes: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(2);
});
