/**
 * Coverage of every torchvision model (issue 33): for each model `bench/torchvision/export.py --all
 * WORK/models` exported (or refused), compile it at a small budget, check it against ONNX Runtime on
 * a seeded input, and time it against ONNX Runtime at 1 and 2 threads. One record per model in
 * WORK/coverage/NAME.json (written atomically, so a killed run resumes where it stopped); the table
 * (coverage-table.ts) from all of them.
 *
 *   /usr/bin/python3 bench/torchvision/export.py --all WORK/models
 *   npm run build && BENCH_LOCK=/path/to/lock node dist/src/bench/coverage.js WORK [NAME…]
 *     [--trials 1] [--threads 1] [--rounds 3] [--runs 3] [--no-latency | --latency-only] [--force] [--table-only] [--results bench/RESULTS.md]
 *
 * Each model's compile is `veltair compile --trials T --threads T --levels 0` into WORK/bundles with
 * the database WORK/db (shared by all models, so later models reuse earlier ones' records); its wall
 * time is the "compile s". With BENCH_LOCK set, a compile holds that lock shared and a timing holds
 * it exclusive (as bench/torchvision/suite.sh does), so timings never overlap other benchmarks.
 * --no-latency compiles and checks only; a later --latency-only run times the models that matched (their
 * bundles kept in WORK/bundles), so every model's row can say whether it runs before any is timed;
 * --latency-only --force times them again (a timing taken on a busy machine).
 * --results rewrites the table between the coverage-table markers of that file; --table-only renders the
 * records there are, running nothing.
 * `--check MODEL BUNDLE` is the child that compares one bundle with ONNX Runtime (its own process, so
 * a model that crashes the runtime is a row, not the end of the run).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { writeTextAtomic } from '../atomic-file.js';
import { loadModel } from '../onnx/load.js';
import { lowerToLayers } from '../ir/lower.js';
import { repoRoot } from '../toolchain/paths.js';
import { compareWithOrt } from './against-ort.js';
import { coverageTable, MATCH_TOLERANCE, replaceTable, type CoverageRecord } from './coverage-table.js';

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
const veltairBin = () => join(repoRoot(), 'bin', 'veltair');
/** The command under the benchmark lock when BENCH_LOCK names one: shared for compiles, exclusive for timings. */
const locked = (mode: '-s' | '-x', cmd: string[]): [string, string[]] => {
  const lock = process.env['BENCH_LOCK'];
  // The shell prints when the lock was taken, so a compile's time leaves out its wait for the lock.
  return lock ? ['flock', [mode, lock, 'sh', '-c', `echo "${LOCKED_AT}$(date +%s%N)" >&2; exec "$@"`, 'sh', ...cmd]] : [cmd[0]!, cmd.slice(1)];
};
const LOCKED_AT = 'coverage-lock-taken-ns=';

/** Seconds from the lock being taken (or from `t0Ms`, with no lock) to now. */
function secondsSinceStart(stderr: string, t0Ms: number): number {
  const m = new RegExp(`${LOCKED_AT}(\\d+)`).exec(stderr);
  if (!m) return (performance.now() - t0Ms) / 1000;
  return (Date.now() * 1e6 - Number(m[1])) / 1e9;
}

function dirBytes(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((sum, f) => sum + dirBytes(join(path, f)), 0);
}

/** The last line veltair printed on stderr that reads as its error (it prints one line per error). */
function errorLine(stderr: string, fallback: string): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
  return lines.reverse().find((l) => /^error|UNSUPPORTED|\[[A-Z_]+\]/.test(l)) ?? lines[0] ?? fallback;
}

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
  const budget = `--trials ${o.trials} --threads ${o.threads} --levels 0`;
  const [cmd, args] = locked('-s', [process.execPath, veltairBin(), 'compile', model, '-o', bundle, '--db', join(o.work, 'db'),
    '--trials', String(o.trials), '--threads', String(o.threads), '--levels', '0', '--force', '--json']);
  const t0 = performance.now();
  const r = await execa(cmd, args, { reject: false, stdin: 'ignore', all: false });
  const wallSeconds = secondsSinceStart(r.stderr, t0);
  if (r.exitCode !== 0) return { ok: false, wallSeconds, budget, error: errorLine(r.stderr, `exit ${r.exitCode}`) };
  let tuningSeconds: number | undefined;
  try { tuningSeconds = (JSON.parse(r.stdout) as { tuningSeconds?: number }).tuningSeconds; } catch { /* the bundle is what counts */ }
  return { ok: true, wallSeconds, budget, bundleBytes: dirBytes(bundle), ...(tuningSeconds !== undefined ? { tuningSeconds } : {}) };
}

async function matchStep(name: string, model: string, bundle: string): Promise<NonNullable<CoverageRecord['match']>> {
  // Shared, like a compile: the check's runs must not land inside another process's timing.
  const [cmd, args] = locked('-s', [process.execPath, new URL(import.meta.url).pathname, '--check', model, bundle]);
  const r = await execa(cmd, args, { reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0) return { relErr: NaN, ok: false, error: errorLine(r.stderr, `the check of ${name} exited ${r.exitCode}`) };
  const { relErr, refSpread } = JSON.parse(r.stdout) as { relErr: number; refSpread: number };
  if (!(refSpread > 0)) return { relErr, ok: false, error: 'ONNX Runtime\'s output is constant on the seeded input, so matching it proves nothing' };
  return { relErr, ok: relErr <= MATCH_TOLERANCE };
}

async function latencyStep(o: Options, model: string, bundle: string): Promise<Pick<CoverageRecord, 'latency' | 'latencyError'>> {
  const latency: Record<string, { veltairMs: number; ortMs: number; ratio: number }> = {};
  for (const t of [1, 2]) {
    const [cmd, args] = locked('-x', [process.execPath, veltairBin(), 'bench', bundle, '--model', model, '--threads', String(t), '--noise', '0',
      '--rounds', String(o.rounds), '--runs', String(o.runs), '--json']);
    const r = await execa(cmd, args, { reject: false, stdin: 'ignore' });
    if (r.exitCode !== 0) return { latency, latencyError: errorLine(r.stderr, `bench exited ${r.exitCode}`) };
    const quiet = (JSON.parse(r.stdout) as { results: { noise: number; veltairMs: number; ortMs: number; ratioVsOrt: number }[] })
      .results.find((c) => c.noise === 0);
    if (quiet) latency[String(t)] = { veltairMs: quiet.veltairMs, ortMs: quiet.ortMs, ratio: quiet.ratioVsOrt };
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
  return readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CoverageRecord);
}

async function run(o: Options): Promise<void> {
  const exportsPath = join(o.work, 'models', 'exports.json');
  if (!existsSync(exportsPath)) throw new Error(`${exportsPath} is missing: run bench/torchvision/export.py --all ${join(o.work, 'models')} first`);
  const exported = JSON.parse(readFileSync(exportsPath, 'utf8')) as Record<string, ExportEntry>;
  const names = o.names.length > 0 ? o.names : Object.keys(exported).sort();
  const recordsDir = join(o.work, 'coverage');
  for (const d of [recordsDir, join(o.work, 'bundles'), join(o.work, 'db')]) mkdirSync(d, { recursive: true });
  for (const name of o.latencyOnly && !o.tableOnly ? names : []) await timeRecorded(o, name, exported[name], join(recordsDir, `${name}.json`));
  for (const name of o.tableOnly || o.latencyOnly ? [] : names) {
    const e = exported[name];
    if (!e) { log(`${name}: not in exports.json, skipped`); continue; }
    const path = join(recordsDir, `${name}.json`);
    if (existsSync(path) && !o.force) continue;
    const rec = await cover(o, name, e);
    await writeTextAtomic(path, `${JSON.stringify(rec, null, 1)}\n`);
    log(`${name}: ${rec.compile?.ok ? (rec.match?.ok ? 'matches' : 'does not match') : rec.compile?.error ?? rec.export.error ?? ''}`);
  }
  // Every model the exporter was asked for is a row: those not covered yet say so.
  const records = readRecords(recordsDir);
  const covered = new Set(records.map((r) => r.model));
  for (const [name, e] of Object.entries(exported)) {
    if (covered.has(name)) continue;
    records.push({ model: name, task: e.task, input: e.input, when: '', export: e.status === 'exported' ? { ok: true } : { ok: false, error: e.error ?? '' } });
  }
  const table = coverageTable(records);
  console.log(table);
  if (o.results) {
    const updated = replaceTable(readFileSync(o.results, 'utf8'), table);
    if (updated === null) throw new Error(`${o.results} has no coverage-table markers`);
    await writeTextAtomic(o.results, updated);
  }
}

/** The child: max |bundle − ORT| / max |ORT| over the first output, on one seeded input, at 1 thread. */
async function check(model: string, bundle: string): Promise<void> {
  const [c] = await compareWithOrt(model, bundle, [1]);
  process.stdout.write(`${JSON.stringify({ relErr: c!.maxRef > 0 ? c!.maxDiff / c!.maxRef : c!.maxDiff, refSpread: c!.refSpread })}\n`);
}

function parse(argv: readonly string[]): Options {
  const flag = (n: string, d: number) => { const i = argv.indexOf(n); return i >= 0 ? Number(argv[i + 1]) : d; };
  const valued = new Set(['--trials', '--threads', '--rounds', '--runs', '--results']);
  const positional = argv.filter((a, i) => !a.startsWith('--') && !valued.has(argv[i - 1] ?? ''));
  if (positional.length === 0) {
    throw new Error('usage: coverage.js WORK [NAME…] [--trials 1] [--threads 1] [--rounds 3] [--runs 3] [--no-latency] [--force] [--results FILE]');
  }
  const results = argv.indexOf('--results');
  return {
    work: resolve(positional[0]!), names: positional.slice(1), trials: flag('--trials', 1), threads: flag('--threads', 1),
    rounds: flag('--rounds', 3), runs: flag('--runs', 3), latency: !argv.includes('--no-latency'), latencyOnly: argv.includes('--latency-only'),
    force: argv.includes('--force'),
    tableOnly: argv.includes('--table-only'),
    ...(results >= 0 ? { results: resolve(argv[results + 1]!) } : {}),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  const done = argv[0] === '--check' ? check(argv[1]!, argv[2]!) : run(parse(argv));
  done.catch((e: unknown) => { console.error(`error: ${e instanceof Error ? e.message : String(e)}`); process.exit(1); });
}
