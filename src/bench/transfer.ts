/**
 * Tuning transfer to a target with no records of its own, on one machine:
 *  1. from scratch: `veltair compile` of the model with an empty database, the shipped records
 *     ignored (--no-shipped-records) and an empty kernel cache: a fresh machine with nothing to start from;
 *  2. the simulated new target: every record of step 1, relabelled as measured on another host
 *     type (the fingerprint input's L1d and L2 changed to those of the other host type seen, 48 KiB
 *     and 1 MiB; ISA, cores and compiler kept), into a second empty database. Nothing there matches
 *     this machine exactly, so `veltair compile` with it (empty kernel cache again) transfers:
 *     it measures the nearest target's frontier first, capped per workload (db/transfer.ts);
 *  3. the two bundles timed back to back in alternating order over R rounds, each in a fresh process
 *     (bundle-time-child.ts; quiet, on the cores the bundle would use), paired ratio transfer / scratch with its spread.
 * The relabelled records rank candidates exactly as this machine does, which real records from
 * another host would not: this is transfer's best case for ranking, not for its budget.
 * With --isa LEVEL the second compile is instead `--isa LEVEL` with the scratch database as is:
 * a portable ISA level is another target (its flags are in the fingerprint), so the native records
 * transfer to it, and the pairing measures what the portable level costs in speed here.
 * With --shipped the second compile is what a fresh clone does on this machine: an empty database
 * and the records shipped in tuning-db/. On a host type those records do not cover, that is a real
 * transfer from other machines' measurements (no simulation); where they do, it is exact reuse,
 * and the table's "workloads exact / transferred / fresh" column says which it was.
 * --shipped --foreign-only hides this host type's own shipped records: the second compile gets only
 * the other host types' records (measured there, not relabelled), so a host type whose records ship
 * can still measure the fresh-clone case it had before they shipped.
 *
 *   npm run build && node dist/src/bench/transfer.js [--model resnet50] [--rounds 7] [--runs 5] [--threads 1]
 *     [--isa LEVEL | --shipped [--foreign-only]] [--transfer-trials N] [--work DIR [--reuse]]
 * --transfer-trials N is passed to the second compile (its cap per workload and thread count).
 * Markdown on stdout, progress on stderr. --work keeps the databases and bundles (default: a temp dir, removed);
 * --reuse takes step 1's bundle and database from an earlier run in that --work.
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { compileModel } from '../compile/compile-model.js';
import { checkIsa, type CompileOptions } from '../compile/options.js';
import { recordLine } from '../db/record.js';
import { scanDatabase } from '../db/scan.js';
import { targetFingerprint } from '../db/target-fingerprint.js';
import { detectTarget } from '../toolchain/target.js';
import type { TunePhases } from '../tune/tune-model.js';
import { repoRoot } from '../toolchain/paths.js';
import { median, summarizeRatios } from '../stats.js';
import { timeBundleInChild } from './bundle-time-child.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';

const KiB = 1024;
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const log = (m: string) => process.stderr.write(`transfer: ${m}\n`);

interface CompileRun {
  readonly seconds: number;
  readonly summary: {
    measured: number;
    dbHits: number;
    tuningSeconds: number;
    tuningPhases: TunePhases;
    transfer: {
      exactWorkloads: number;
      transferredWorkloads: number;
      transferredSeeds: number;
      freshWorkloads: number;
      medianDistance: number | null;
    };
  };
}

/** One compile (compileModel) with its own kernel cache, `cache`: each compile starts cold, as a fresh machine's would. */
async function compile(
  model: string,
  db: string,
  cache: string,
  out: string,
  isa = 'native',
  shipped = false,
  extra: CompileOptions = {},
): Promise<CompileRun> {
  const t0 = Date.now();
  const before = process.env['VELTAIR_CACHE_DIR'];
  process.env['VELTAIR_CACHE_DIR'] = cache;
  try {
    const summary = await compileModel(model, { output: out, db, shippedRecords: shipped, isa: checkIsa(isa), onNote: log, ...extra });
    return { seconds: (Date.now() - t0) / 1000, summary };
  } finally {
    if (before === undefined) delete process.env['VELTAIR_CACHE_DIR'];
    else process.env['VELTAIR_CACHE_DIR'] = before;
  }
}

/** Every record of `from`, as if measured on the other host type: caches changed, fingerprint recomputed. */
async function relabel(from: string, to: string): Promise<number> {
  await mkdir(to, { recursive: true });
  const lines = [...(await scanDatabase(from)).records.values()].map((r) => {
    const targetSpec = { ...r.targetSpec, caches: { ...r.targetSpec.caches, l1d: 48 * KiB, l2: 1024 * KiB } };
    return recordLine({ ...r, targetSpec, target: targetFingerprint(targetSpec) });
  });
  await writeFile(join(to, 'records.jsonl'), lines.join(''));
  return lines.length;
}

/** The shipped records of every target but this machine's, as one database. */
async function foreignShipped(to: string): Promise<number> {
  await mkdir(to, { recursive: true });
  const own = targetFingerprint(await detectTarget());
  const records = [...(await scanDatabase(join(repoRoot(), 'tuning-db'))).records.values()].filter((r) => r.target !== own);
  await writeFile(join(to, 'records.jsonl'), records.map(recordLine).join(''));
  return records.length;
}

async function main(): Promise<void> {
  const modelName = arg('--model', 'resnet50'),
    rounds = Number(arg('--rounds', '7')),
    runs = Number(arg('--runs', '5'));
  const threads = Number(arg('--threads', '1'));
  const isa = process.argv.includes('--isa') ? arg('--isa', '') : undefined;
  const shipped = process.argv.includes('--shipped');
  const foreignOnly = process.argv.includes('--foreign-only');
  if (foreignOnly && !shipped) throw new Error("--foreign-only hides this host's own shipped records: it goes with --shipped");
  const cap = process.argv.includes('--transfer-trials') ? arg('--transfer-trials', '') : undefined;
  const extra: CompileOptions = cap === undefined ? {} : { transferTrials: Number(cap) };
  if (cap !== undefined && !/^\d+$/.test(cap)) throw new Error(`--transfer-trials ${cap} is not a whole number`);
  const tag = cap === undefined ? '' : `-cap${cap}`;
  if (shipped && isa !== undefined) throw new Error('--shipped and --isa are two different second compiles: pick one');
  const keep = process.argv.includes('--work');
  const work = keep ? arg('--work', '') : await mkdtemp(join(tmpdir(), 'veltair-transfer-'));
  await mkdir(work, { recursive: true });
  const machine = await machineInfo();
  try {
    const model = join(work, `${modelName}.onnx`);
    if (!existsSync(model)) await execa(join(repoRoot(), 'bin', 'veltair'), ['zoo', 'build', modelName, '-o', model]);
    const reuse = process.argv.includes('--reuse') && existsSync(join(work, 'scratch.bundle', 'manifest.json'));
    let scratch: CompileRun | undefined;
    if (reuse) log(`from scratch: reusing ${join(work, 'scratch.bundle')} and its database`);
    else {
      log(`from scratch: empty database, empty kernel cache`);
      scratch = await compile(model, join(work, 'db-scratch'), join(work, 'cache-scratch'), join(work, 'scratch.bundle'));
      log(`from scratch: ${scratch.seconds.toFixed(1)} s, ${scratch.summary.measured} measured`);
    }
    let moved: CompileRun;
    // The second compile starts from nothing of its own, rerun or not: an earlier run's records would be exact reuse.
    const second = shipped
      ? `transfer-shipped${foreignOnly ? '-foreign' : ''}${tag}`
      : isa === undefined
        ? `transfer${tag}`
        : `transfer-${isa}${tag}`;
    const secondDb = join(
      work,
      shipped ? `db-shipped${foreignOnly ? '-foreign' : ''}${tag}` : isa === undefined ? 'db-other-host' : `db-${isa}${tag}`,
    );
    const secondCache = join(work, `cache-${second}`);
    await Promise.all([secondDb, secondCache, join(work, `${second}.bundle`)].map((d) => rm(d, { recursive: true, force: true })));
    if (shipped && foreignOnly) {
      const n = await foreignShipped(secondDb);
      log(`compiling as a fresh clone of a host type without records would: the ${n} shipped records of other targets, empty kernel cache`);
      moved = await compile(model, secondDb, secondCache, join(work, `${second}.bundle`), 'native', false, extra);
    } else if (shipped) {
      log('compiling as a fresh clone would: empty database, the shipped records, empty kernel cache');
      moved = await compile(model, secondDb, secondCache, join(work, `${second}.bundle`), 'native', true, extra);
    } else if (isa === undefined) {
      const relabelled = await relabel(join(work, 'db-scratch'), secondDb);
      log(`${relabelled} records relabelled as the other host type's; compiling with them, empty kernel cache`);
      moved = await compile(model, secondDb, secondCache, join(work, `${second}.bundle`), 'native', false, extra);
    } else {
      await cp(join(work, 'db-scratch'), secondDb, { recursive: true });
      log(`compiling for --isa ${isa} with the native records, empty kernel cache`);
      moved = await compile(model, secondDb, secondCache, join(work, `${second}.bundle`), isa, false, extra);
    }
    log(
      `transfer: ${moved.seconds.toFixed(1)} s (${moved.summary.tuningSeconds.toFixed(1)} s tuning: ${phaseText(moved.summary.tuningPhases)}), ` +
        `${moved.summary.measured} measured`,
    );

    // Each bundle of each round in a fresh process: in one process a bundle and a copy of itself read up to 4% apart.
    const paths = ['scratch', second].map((b) => join(work, `${b}.bundle`));
    const ratios: number[] = [];
    const ms: number[][] = [[], []];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      const t: number[] = [];
      for (const i of order) t[i] = await timeBundleInChild(paths[i]!, threads, runs);
      ms[0]!.push(t[0]!);
      ms[1]!.push(t[1]!);
      ratios.push(t[1]! / t[0]!);
    }
    const s = summarizeRatios(ratios);
    const row = (name: string, c: CompileRun | undefined, latency: number[]) => {
      if (!c) return `| ${name} | (reused from an earlier run in --work) | | | | ${median(latency).toFixed(2)} |`;
      const tr = c.summary.transfer;
      return (
        `| ${name} | ${c.seconds.toFixed(1)} | ${c.summary.tuningSeconds.toFixed(1)} | ${c.summary.measured} ` +
        `| ${tr.exactWorkloads} / ${tr.transferredWorkloads} / ${tr.freshWorkloads} ` +
        `| ${median(latency).toFixed(2)} |`
      );
    };
    process.stdout.write(
      [
        `### Tuning transfer to a target with no records (${machineLine(machine)})`,
        '',
        `Command: \`node dist/src/bench/transfer.js --model ${modelName} --rounds ${rounds} --runs ${runs} --threads ${threads}` +
          `${isa ? ` --isa ${isa}` : ''}${shipped ? ' --shipped' : ''}${foreignOnly ? ' --foreign-only' : ''}` +
          `${cap !== undefined ? ` --transfer-trials ${cap}` : ''}` +
          `${reuse ? ' --work DIR --reuse' : ''}\`` +
          `${reuse ? ' (DIR: that of an earlier run)' : ''}. Default budget; ` +
          (isa
            ? `the second compile is \`--isa ${isa}\` with the native records (another target: its flags differ).`
            : shipped && foreignOnly
              ? "the second compile is a fresh clone's on a host type with no shipped records: the records shipped in " +
                'tuning-db/ for other targets only (no simulation, no relabelling).'
              : shipped
                ? "the second compile is a fresh clone's: an empty database and the records shipped in tuning-db/ (no simulation)."
                : 'the new target simulated by relabelling the scratch records with L1d 48 KiB and L2 1 MiB (see src/bench/transfer.ts).'),
        '',
        '| compile | wall (s) | tuning (s) | measured | workloads exact / transferred / fresh | latency, median of rounds (ms) |',
        '|---|---|---|---|---|---|',
        row('from scratch', scratch, ms[0]!),
        row(
          isa ? `transfer, --isa ${isa}` : shipped ? `fresh clone (shipped records${foreignOnly ? ' of other targets' : ''})` : 'transfer',
          moved,
          ms[1]!,
        ),
        '',
        `Whole-model latency transfer / scratch, paired over ${rounds} rounds (${runs} runs each, ${threads} thread(s), ` +
          'each bundle of each round in a fresh process): ' +
          `median ${s.medianRatio.toFixed(3)} [${s.minRatio.toFixed(3)}–${s.maxRatio.toFixed(3)}]. ` +
          (scratch ? `Transfer compile time / scratch: ${(moved.seconds / scratch.seconds).toFixed(2)}.` : ''),
        '',
        `The second compile's tuning by phase (compile summary \`tuningPhases\`): ${phaseText(moved.summary.tuningPhases)}.`,
        '',
      ].join('\n'),
    );
  } finally {
    if (!keep) await rm(work, { recursive: true, force: true });
  }
}

/** tuningPhases in words, seconds each. */
function phaseText(p: TunePhases): string {
  return (
    `warm-up compile ${p.warmup.toFixed(1)} s, search build ${p.searchBuild.toFixed(1)} s, ` +
    `race ${p.searchRace.toFixed(1)} s and measure ${p.searchMeasure.toFixed(1)} s, ` +
    `profiling at the other thread counts build ${p.profileBuild.toFixed(1)} s and measure ${p.profileMeasure.toFixed(1)} s`
  );
}

const USAGE = `usage: node dist/src/bench/transfer.js [--model resnet50] [--rounds 7] [--runs 5] [--threads 1]
  [--isa LEVEL | --shipped [--foreign-only]] [--transfer-trials N] [--work DIR [--reuse]]
Two compiles of the model (from scratch, then transferring) and their bundles paired; see the header of src/bench/transfer.ts.
`;
// A typo'd or help flag must not start a many-minute compile.
const KNOWN = new Set([
  '--model',
  '--rounds',
  '--runs',
  '--threads',
  '--isa',
  '--shipped',
  '--foreign-only',
  '--transfer-trials',
  '--work',
  '--reuse',
]);
const unknown = process.argv.slice(2).find((a) => a.startsWith('-') && !KNOWN.has(a));
if (unknown !== undefined) {
  process.stdout.write(USAGE);
  process.exit(unknown === '--help' || unknown === '-h' ? 0 : 1);
}
main().catch((e: unknown) => {
  process.stderr.write(`transfer: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(2);
});
