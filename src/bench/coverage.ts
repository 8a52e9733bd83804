/**
 * Coverage of every torchvision model: for each model `bench/torchvision/export.py --all
 * WORK/models` exported (or refused), compile it at a small budget, check it against ONNX Runtime on
 * a seeded input, and time it against ONNX Runtime at 1 and 2 threads. One record per model in
 * WORK/coverage/NAME.json (written atomically, so a killed run resumes where it stopped); the table
 * (coverage-table.ts) from all of them.
 *
 *   /usr/bin/python3 bench/torchvision/export.py --all WORK/models
 *   npm run build && BENCH_LOCK=/path/to/lock node dist/src/bench/coverage.js WORK [NAME…]
 *     [--trials 1] [--threads 1] [--rounds 3] [--runs 3] [--no-latency | --latency-only] [--force] [--table-only] [--results bench/results/torchvision.md]
 *
 * Each model's compile is `veltair compile --trials T --threads T --levels 0` into WORK/bundles with
 * the database WORK/db (shared by all models, so later models reuse earlier ones' records); its wall
 * time is the "compile s". With BENCH_LOCK set, a compile holds that lock shared and a timing holds
 * it exclusive, so timings never overlap other benchmarks.
 * --no-latency compiles and checks only; a later --latency-only run times the models that matched (their
 * bundles kept in WORK/bundles), so every model's row can say whether it runs before any is timed;
 * --latency-only --force times them again (a timing taken on a busy machine).
 * --results rewrites the table between the coverage-table markers of that file; --table-only renders the
 * records there are, running nothing.
 * Each compile, check and timing is a child process of its own (model-runs.ts).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeTextAtomic } from '../atomic-file.js';
import { loadModel } from '../onnx/load.js';
import { lowerToLayers } from '../ir/lower.js';
import { coverageTable, replaceTable, type CoverageRecord } from './coverage-table.js';
import { benchBundle, checkBundle, compileBundle } from './model-runs.js';

interface ExportEntry {
  readonly status: 'exported' | 'failed';
  readonly task: 'classification' | 'segmentation' | 'detection';
  readonly input: number[];
  readonly file?: string;
  readonly error?: string;
}

interface Options {
  readonly work: string;
  readonly names: readonly string[];
  readonly trials: number;
  readonly threads: number;
  readonly rounds: number;
  readonly runs: number;
  readonly latency: boolean;
  /** Time the models already compiled and matched (by a run with --no-latency) whose bundles are still there. */
  readonly latencyOnly: boolean;
  readonly force: boolean;
  readonly tableOnly: boolean;
  readonly results?: string;
}

const log = (m: string) => process.stderr.write(`coverage: ${m}\n`);
async function tunableGmacs(model: string): Promise<number | undefined> {
  try {
    const graph = lowerToLayers(await loadModel(model));
    return graph.layers.filter((l) => l.tunable).reduce((s, l) => s + l.macs, 0) / 1e9;
  } catch {
    return undefined; // the compile step reports why the model does not load
  }
}

async function compileStep(o: Options, name: string, model: string): Promise<NonNullable<CoverageRecord['compile']>> {
  const bundle = join(o.work, 'bundles', `${name}.bundle`);
  const budget = ['--trials', String(o.trials), '--threads', String(o.threads), '--levels', '0'];
  return { ...(await compileBundle(model, bundle, join(o.work, 'db'), budget)), budget: budget.join(' ') };
}

async function matchStep(name: string, model: string, bundle: string): Promise<NonNullable<CoverageRecord['match']>> {
  return checkBundle(name, model, bundle);
}

async function latencyStep(o: Options, model: string, bundle: string): Promise<Pick<CoverageRecord, 'latency' | 'latencyError'>> {
  const latency: Record<string, { veltairMs: number; ortMs: number; ratio: number }> = {};
  for (const t of [1, 2]) {
    const r = await benchBundle(model, bundle, t, o.rounds, o.runs);
    if ('error' in r) return { latency, latencyError: r.error };
    latency[String(t)] = { veltairMs: r.veltairMs, ortMs: r.ortMs, ratio: r.ratio };
  }
  return { latency };
}

async function cover(o: Options, name: string, e: ExportEntry): Promise<CoverageRecord> {
  const base = { model: name, task: e.task, input: e.input, when: new Date().toISOString() };
  if (e.status !== 'exported' || !e.file) return { ...base, export: { ok: false, error: e.error ?? 'not exported' } };
  const model = join(o.work, 'models', e.file);
  const gmacs = await tunableGmacs(model);
  log(`${name}: compiling (${gmacs === undefined ? '?' : gmacs.toFixed(2)} GMACs)`);
  const compile = await compileStep(o, name, model);
  const rec: CoverageRecord = { ...base, export: { ok: true }, ...(gmacs !== undefined ? { gmacs } : {}), compile };
  if (!compile.ok) return rec;
  const bundle = join(o.work, 'bundles', `${name}.bundle`);
  const match = await matchStep(name, model, bundle);
  if (!match.ok || !o.latency) return { ...rec, match };
  log(`${name}: timing against ONNX Runtime`);
  return { ...rec, match, ...(await latencyStep(o, model, bundle)) };
}

async function timeRecorded(o: Options, name: string, e: ExportEntry | undefined, path: string): Promise<void> {
  if (!existsSync(path)) return;
  const rec = JSON.parse(readFileSync(path, 'utf8')) as CoverageRecord;
  const bundle = join(o.work, 'bundles', `${name}.bundle`);
  const timed = rec.latency !== undefined && Object.keys(rec.latency).length > 0;
  if (!rec.match?.ok || (timed && !o.force) || !existsSync(bundle)) return;
  log(`${name}: timing against ONNX Runtime`);
  const next: CoverageRecord = { ...rec, ...(await latencyStep(o, join(o.work, 'models', e?.file ?? `${name}.onnx`), bundle)) };
  await writeTextAtomic(path, `${JSON.stringify(next, null, 1)}\n`);
}

function readRecords(dir: string): CoverageRecord[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CoverageRecord);
}

async function run(o: Options): Promise<void> {
  const exportsPath = join(o.work, 'models', 'exports.json');
  if (!existsSync(exportsPath))
    throw new Error(`${exportsPath} is missing: run bench/torchvision/export.py --all ${join(o.work, 'models')} first`);
  const exported = JSON.parse(readFileSync(exportsPath, 'utf8')) as Record<string, ExportEntry>;
  const names = o.names.length > 0 ? o.names : Object.keys(exported).sort();
  const recordsDir = join(o.work, 'coverage');
  for (const d of [recordsDir, join(o.work, 'bundles'), join(o.work, 'db')]) mkdirSync(d, { recursive: true });
  for (const name of o.latencyOnly && !o.tableOnly ? names : [])
    await timeRecorded(o, name, exported[name], join(recordsDir, `${name}.json`));
  for (const name of o.tableOnly || o.latencyOnly ? [] : names) {
    const e = exported[name];
    if (!e) {
      log(`${name}: not in exports.json, skipped`);
      continue;
    }
    const path = join(recordsDir, `${name}.json`);
    if (existsSync(path) && !o.force) continue;
    const rec = await cover(o, name, e);
    await writeTextAtomic(path, `${JSON.stringify(rec, null, 1)}\n`);
    log(`${name}: ${rec.compile?.ok ? (rec.match?.ok ? 'matches' : 'does not match') : (rec.compile?.error ?? rec.export.error ?? '')}`);
  }
  // Every model the exporter was asked for is a row: those not covered yet say so.
  const records = readRecords(recordsDir);
  const covered = new Set(records.map((r) => r.model));
  for (const [name, e] of Object.entries(exported)) {
    if (covered.has(name)) continue;
    records.push({
      model: name,
      task: e.task,
      input: e.input,
      when: '',
      export: e.status === 'exported' ? { ok: true } : { ok: false, error: e.error ?? '' },
    });
  }
  const table = coverageTable(records);
  console.log(table);
  if (o.results) {
    const updated = replaceTable(readFileSync(o.results, 'utf8'), table);
    if (updated === null) throw new Error(`${o.results} has no coverage-table markers`);
    await writeTextAtomic(o.results, updated);
  }
}

function parse(argv: readonly string[]): Options {
  const flag = (n: string, d: number) => {
    const i = argv.indexOf(n);
    return i >= 0 ? Number(argv[i + 1]) : d;
  };
  const valued = new Set(['--trials', '--threads', '--rounds', '--runs', '--results']);
  const positional = argv.filter((a, i) => !a.startsWith('--') && !valued.has(argv[i - 1] ?? ''));
  if (positional.length === 0) {
    throw new Error(
      'usage: coverage.js WORK [NAME…] [--trials 1] [--threads 1] [--rounds 3] [--runs 3] [--no-latency] [--force] [--results FILE]',
    );
  }
  const results = argv.indexOf('--results');
  return {
    work: resolve(positional[0]!),
    names: positional.slice(1),
    trials: flag('--trials', 1),
    threads: flag('--threads', 1),
    rounds: flag('--rounds', 3),
    runs: flag('--runs', 3),
    latency: !argv.includes('--no-latency'),
    latencyOnly: argv.includes('--latency-only'),
    force: argv.includes('--force'),
    tableOnly: argv.includes('--table-only'),
    ...(results >= 0 ? { results: resolve(argv[results + 1]!) } : {}),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run(parse(process.argv.slice(2))).catch((e: unknown) => {
    console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
