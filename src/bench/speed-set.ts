/**
 * The speed set: every model of the coverage table (coverage.ts) at ≤ 25 GMACs,
 * compiled at the default budget (`veltair compile` with no budget flags: 8 trials per workload and
 * thread count, levels 0–4, every thread count of this machine), checked against ONNX Runtime, then
 * timed against it at 1 and 2 threads in one run; a model above 0.8 gets its per-step profile against
 * the FMA peak and memory bandwidth measured right beside it (step-roofline.ts).
 *
 *   node dist/src/bench/speed-set.js WORK [NAME…] [--max-gmacs 25] [--records-out DIR]   compile and check (resumes)
 *   node dist/src/bench/speed-set.js WORK [NAME…] --bench [--rounds 3] [--runs 3] [--profile-runs 30] [--new-run]
 *   node dist/src/bench/speed-set.js WORK --table-only [--results bench/results/torchvision.md]
 *
 * WORK is coverage's (models/exports.json, coverage/NAME.json say which models and their GMACs). The speed
 * set's own files are under WORK/speed: db/ (the tuning records all its compiles share, smallest model
 * first, so later models reuse earlier ones' workloads), bundles/NAME.bundle, records/NAME.compile.json
 * and NAME.match.json, and run.json, the one timing run (written atomically after each model, so a killed
 * run resumes; --new-run starts another). Run it with BENCH_LOCK set (model-runs.ts): compiles and
 * checks hold the lock shared, timings exclusive.
 *
 * --records-out DIR (e.g. the package's tuning-db/) compacts the speed set's database into DIR
 * (`veltair db compact`: atomic, idempotent) after each model has compiled and been checked, so an
 * operator can commit DIR as models finish, and a run resumed on another machine of the same host
 * type reads them back: compiles read the package's tuning-db/ as their shipped records, so a
 * finished model measures nothing there.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeTextAtomic } from '../atomic-file.js';
import { compactDatabase } from '../db/compact-database.js';
import { replaceTable, type CoverageRecord } from './coverage-table.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { benchBundle, checkBundle, compileBundle, rooflineOfBundle } from './model-runs.js';
import {
  needsProfile,
  SPEED_BEGIN,
  SPEED_END,
  speedSetTable,
  type SpeedCompile,
  type SpeedLatency,
  type SpeedRoofline,
  type SpeedRow,
} from './speed-set-table.js';

interface Options {
  readonly work: string;
  readonly names: readonly string[];
  readonly maxGmacs: number;
  readonly mode: 'compile' | 'bench' | 'table';
  readonly rounds: number;
  readonly runs: number;
  readonly profileRuns: number;
  readonly newRun: boolean;
  readonly results?: string;
  /** Folder the speed set's records are compacted into after each model (e.g. the package's tuning-db/). */
  readonly recordsOut?: string;
}

/** One timing run: when and where it ran, how, and each model's timings and profiles. */
interface SpeedRun {
  readonly started: string;
  readonly machine: string;
  readonly rounds: number;
  readonly runs: number;
  readonly profileRuns: number;
  readonly models: Record<
    string,
    { latency: Record<string, SpeedLatency>; roofline: Record<string, SpeedRoofline>; error?: string; when: string }
  >;
}

const log = (m: string) => process.stderr.write(`speed-set: ${m}\n`);
const readJson = <T>(path: string): T | undefined => (existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as T) : undefined);
const writeJson = (path: string, value: unknown) => writeTextAtomic(path, `${JSON.stringify(value, null, 1)}\n`);

/** The coverage table's models that matched ONNX Runtime at ≤ maxGmacs, smallest first. */
export function speedSetModels(records: readonly CoverageRecord[], maxGmacs: number): { model: string; gmacs: number }[] {
  return records
    .filter((r) => r.match?.ok && r.gmacs !== undefined && r.gmacs <= maxGmacs)
    .map((r) => ({ model: r.model, gmacs: r.gmacs! }))
    .sort((a, b) => a.gmacs - b.gmacs || a.model.localeCompare(b.model));
}

function coverageRecords(work: string): CoverageRecord[] {
  const dir = join(work, 'coverage');
  if (!existsSync(dir)) throw new Error(`${dir} is missing: run coverage.ts on ${work} first (the speed set is its models at ≤ 25 GMACs)`);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CoverageRecord);
}

async function compileAndCheck(o: Options, model: string, file: string): Promise<void> {
  const speed = join(o.work, 'speed');
  const compilePath = join(speed, 'records', `${model}.compile.json`),
    matchPath = join(speed, 'records', `${model}.match.json`);
  const bundle = join(speed, 'bundles', `${model}.bundle`);
  let compile = readJson<SpeedCompile>(compilePath);
  if (!compile) {
    log(`${model}: compiling at the default budget`);
    compile = { ...(await compileBundle(file, bundle, join(speed, 'db'), [])), budget: 'default' } as SpeedCompile;
    await writeJson(compilePath, { ...compile, when: new Date().toISOString() });
  }
  if (!compile.ok || existsSync(matchPath)) return;
  const match = await checkBundle(model, file, bundle);
  await writeJson(matchPath, match);
  log(`${model}: ${match.ok ? 'matches ONNX Runtime' : `does not match (${match.error ?? match.relErr})`}`);
}

/** Compact the speed set's database into `recordsOut` (every target it holds; unchanged files are not rewritten). */
export async function publishRecords(work: string, recordsOut: string): Promise<void> {
  const db = join(work, 'speed', 'db');
  if (!existsSync(db)) return;
  const r = await compactDatabase({ sources: [db], outDir: recordsOut, onWarning: log });
  const changed = r.targets.filter((t) => t.changed).map((t) => t.target);
  log(`records: ${changed.length > 0 ? `compacted into ${recordsOut} (${changed.join(', ')})` : `${recordsOut} already holds them`}`);
}

async function benchOne(o: Options, model: string, file: string): Promise<SpeedRun['models'][string]> {
  const bundle = join(o.work, 'speed', 'bundles', `${model}.bundle`);
  const latency: Record<string, SpeedLatency> = {},
    roofline: Record<string, SpeedRoofline> = {};
  const when = new Date().toISOString();
  for (const t of [1, 2]) {
    const r = await benchBundle(file, bundle, t, o.rounds, o.runs);
    if ('error' in r) return { latency, roofline, error: `${t} thread(s): ${r.error}`, when };
    latency[String(t)] = r;
  }
  for (const t of [1, 2]) {
    if (!needsProfile(latency[String(t)]!.ratio)) continue;
    const p = await rooflineOfBundle(bundle, t, o.profileRuns);
    if ('error' in p) return { latency, roofline, error: `profile at ${t} thread(s): ${p.error}`, when };
    roofline[String(t)] = {
      peakGflops: p.peakGflops,
      memoryGbps: p.memoryGbps,
      totalMs: p.totalMs,
      fraction: p.fraction,
      groups: p.groups,
    };
  }
  return { latency, roofline, when };
}

async function bench(o: Options, models: readonly { model: string; file: string }[]): Promise<void> {
  const runPath = join(o.work, 'speed', 'run.json');
  if (o.newRun && existsSync(runPath)) renameSync(runPath, join(o.work, 'speed', `run-${Date.now()}.json`));
  const run: SpeedRun = readJson<SpeedRun>(runPath) ?? {
    started: new Date().toISOString(),
    machine: machineLine(await machineInfo()),
    rounds: o.rounds,
    runs: o.runs,
    profileRuns: o.profileRuns,
    models: {},
  };
  for (const { model, file } of models) {
    if (run.models[model] || !readJson<{ ok: boolean }>(join(o.work, 'speed', 'records', `${model}.match.json`))?.ok) continue;
    log(`${model}: timing against ONNX Runtime at 1 and 2 threads`);
    run.models[model] = await benchOne(o, model, file);
    await writeJson(runPath, run);
  }
}

function rows(o: Options, models: readonly { model: string; gmacs: number }[]): SpeedRow[] {
  const rec = (m: string, what: string) => join(o.work, 'speed', 'records', `${m}.${what}.json`);
  const run = readJson<SpeedRun>(join(o.work, 'speed', 'run.json'));
  return models.map(({ model, gmacs }) => {
    const compile = readJson<SpeedCompile>(rec(model, 'compile')),
      match = readJson<SpeedRow['match']>(rec(model, 'match'));
    const timed = run?.models[model];
    return {
      model,
      gmacs,
      ...(compile ? { compile } : {}),
      ...(match ? { match } : {}),
      ...(timed ? { latency: timed.latency, roofline: timed.roofline, ...(timed.error ? { error: timed.error } : {}) } : {}),
    };
  });
}

async function main(o: Options): Promise<void> {
  const exported = readJson<Record<string, { file?: string }>>(join(o.work, 'models', 'exports.json')) ?? {};
  const all = speedSetModels(coverageRecords(o.work), o.maxGmacs);
  const chosen = o.names.length > 0 ? all.filter((m) => o.names.includes(m.model)) : all;
  const withFiles = chosen.map((m) => ({ ...m, file: join(o.work, 'models', exported[m.model]?.file ?? `${m.model}.onnx`) }));
  for (const d of ['records', 'bundles', 'db']) mkdirSync(join(o.work, 'speed', d), { recursive: true });
  if (o.mode === 'compile') {
    for (const m of withFiles) {
      await compileAndCheck(o, m.model, m.file);
      if (o.recordsOut) await publishRecords(o.work, o.recordsOut);
    }
  }
  if (o.mode === 'bench') await bench(o, withFiles);
  const run = readJson<SpeedRun>(join(o.work, 'speed', 'run.json'));
  const header = run
    ? `Run started ${run.started} on ${run.machine}; \`veltair bench --noise 0 --rounds ${run.rounds} --runs ${run.runs}\` ` +
      `per model and thread count, profiles of ${run.profileRuns} runs.\n\n`
    : '';
  const table = header + speedSetTable(rows(o, all));
  console.log(table);
  if (o.results) {
    const updated = replaceTable(readFileSync(o.results, 'utf8'), table, SPEED_BEGIN, SPEED_END);
    if (updated === null) throw new Error(`${o.results} has no speed-set-table markers (${SPEED_BEGIN} … ${SPEED_END})`);
    await writeTextAtomic(o.results, updated);
  }
}

const USAGE =
  'usage: speed-set.js WORK [NAME…] [--max-gmacs 25] [--records-out DIR] [--bench [--rounds 3] [--runs 3] [--profile-runs 30] [--new-run]] ' +
  '[--table-only] [--results FILE]';

export function parseSpeedSetArgs(argv: readonly string[]): Options {
  const valued = new Set(['--max-gmacs', '--rounds', '--runs', '--profile-runs', '--results', '--records-out']);
  const known = new Set([...valued, '--bench', '--table-only', '--new-run']);
  argv.forEach((a, i) => {
    if (a.startsWith('--') && !known.has(a)) throw new Error(`unknown flag ${a}; ${USAGE}`);
    if (valued.has(a) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) throw new Error(`${a} needs a value; ${USAGE}`);
  });
  const positional = argv.filter((a, i) => !a.startsWith('--') && !valued.has(argv[i - 1] ?? ''));
  if (positional.length === 0) throw new Error(USAGE);
  const num = (n: string, d: number) => {
    const i = argv.indexOf(n);
    const v = i >= 0 ? Number(argv[i + 1]) : d;
    if (!(v > 0)) throw new Error(`${n} must be a positive number, not ${argv[i + 1]}`);
    return v;
  };
  const results = argv.indexOf('--results');
  const recordsOut = argv.indexOf('--records-out');
  return {
    work: resolve(positional[0]!),
    names: positional.slice(1),
    maxGmacs: num('--max-gmacs', 25),
    mode: argv.includes('--table-only') ? 'table' : argv.includes('--bench') ? 'bench' : 'compile',
    rounds: num('--rounds', 3),
    runs: num('--runs', 3),
    profileRuns: num('--profile-runs', 30),
    newRun: argv.includes('--new-run'),
    ...(results >= 0 ? { results: resolve(argv[results + 1]!) } : {}),
    ...(recordsOut >= 0 ? { recordsOut: resolve(argv[recordsOut + 1]!) } : {}),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  Promise.resolve()
    .then(() => main(parseSpeedSetArgs(process.argv.slice(2))))
    .catch((e: unknown) => {
      console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    });
}
