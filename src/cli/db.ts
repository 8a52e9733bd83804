/**
 * `veltair db stats|merge|export|prune|compact|rank-eval` over tuning records (src/db/). Every subcommand takes
 * `--db DIR` (default: the user cache's tuning-db; rank-eval's: the package's tuning-db/) and `--json`; corrupt lines are skipped with one
 * warning line on stderr and never change the exit code.
 */
import { writeTextAtomic } from '../atomic-file.js';
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { databaseStats, mergeDatabases, pruneDatabase, type DatabaseStats, type PruneResult } from '../db/operations.js';
import { exportRecords, type ExportFormat } from '../db/export.js';
import { compactDatabase, type CompactResult } from '../db/compact-database.js';
import { defaultDatabaseDir, shippedDatabaseDir, unwritable } from '../db/store.js';
import { FINGERPRINT_PATTERN, targetFingerprint } from '../db/target-fingerprint.js';
import { detectTarget } from '../toolchain/target.js';
import { scanDatabase } from '../db/scan.js';
import { RANK_FEATURES } from '../tune/rank-model.js';
import { evaluateRanking, type RankEvaluation, type RankScores } from '../tune/rank-eval.js';
import { parsePositiveInt } from '../terminal/args.js';
import { formatTable, note, printJson, printLine } from '../terminal/output.js';

interface DbFlags {
  db?: string;
  json?: boolean;
}
interface ExportFlags extends DbFlags {
  format?: string;
  output?: string;
  target?: string;
  workload?: string;
}
interface PruneFlags extends DbFlags {
  keep?: string;
  dropFailed?: boolean;
  dropOtherTargets?: boolean;
  target?: string;
}

interface CompactFlags extends DbFlags {
  output?: string;
  target?: string;
  existing?: boolean;
  shipped?: boolean;
}

interface RankEvalFlags extends DbFlags {
  minRun?: string;
  k?: string;
}

const warn = (message: string) => note(`warning: ${message}`);
const dbPath = (f: DbFlags) => f.db ?? defaultDatabaseDir();

/** This machine's fingerprint, or undefined when it cannot be told (e.g. no C compiler). */
async function currentFingerprint(): Promise<string | undefined> {
  try {
    return targetFingerprint(await detectTarget());
  } catch {
    return undefined;
  }
}

/** `--target FP|current` → a fingerprint. */
async function resolveTarget(text: string): Promise<string> {
  if (text === 'current') return targetFingerprint(await detectTarget());
  if (!new RegExp(FINGERPRINT_PATTERN).test(text)) {
    throw userError(
      'BAD_ARGUMENT',
      `--target ${JSON.stringify(text)} is not a target fingerprint`,
      'use `current` or a fingerprint like t1-0123456789abcdef (see `veltair db stats`)',
    );
  }
  return text;
}

function statsText(s: DatabaseStats, current: string | undefined): string {
  const statuses =
    Object.entries(s.byStatus)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'none';
  const head = [
    `tuning database ${s.path} (${s.files} file${s.files === 1 ? '' : 's'})`,
    `records    ${s.records} unique (${s.duplicates} duplicate line${s.duplicates === 1 ? '' : 's'}, ${s.corrupt} corrupt skipped)`,
    `workloads  ${s.workloads}`,
    `status     ${statuses}`,
  ].join('\n');
  if (s.targetDetails.length === 0) return head;
  const rows = [
    ['target', 'records', 'cpu', 'cores', 'compiler'],
    ...s.targetDetails.map((t) => [t.target + (t.target === current ? ' *' : ''), String(t.records), t.cpuModel, String(t.cores), t.cc]),
  ];
  const footer = current ? `\n* this machine (${current})` : '';
  return `${head}\n\n${formatTable(rows, new Set([1, 3]))}${footer}`;
}

function pruneText(r: PruneResult): string {
  const d = r.dropped;
  return (
    `pruned ${r.path}: ${r.before} lines → ${r.kept} records (dropped ${d.corrupt} corrupt, ${d.duplicates} duplicate, ` +
    `${d.failed} failed, ${d.otherTargets} other-target, ${d.beyondKeep} beyond --keep)`
  );
}

/** Write a file via temp + rename in its directory, so a reader never sees half an export. */
async function writeOutput(path: string, text: string): Promise<void> {
  await writeTextAtomic(path, text, (p, e) => {
    const err = unwritable(p, e);
    return err === e ? userError('FILE_UNWRITABLE', `cannot write ${p}: ${(e as Error).message}`, 'choose another -o path') : err;
  });
}

function parseKeep(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw userError(
      'BAD_ARGUMENT',
      `--keep ${JSON.stringify(text)} is not a positive integer`,
      'e.g. --keep 20 keeps the 20 fastest records per workload and level',
    );
  }
  return Number(text);
}

function parseFormat(text: string): ExportFormat {
  if (text !== 'csv' && text !== 'jsonl') {
    throw userError('BAD_ARGUMENT', `--format ${JSON.stringify(text)} is not csv or jsonl`, 'use --format csv or --format jsonl');
  }
  return text;
}

async function statsAction(f: DbFlags): Promise<void> {
  const stats = await databaseStats(dbPath(f), { onWarning: warn });
  const current = await currentFingerprint();
  if (f.json) printJson({ ...stats, currentTarget: current ?? null });
  else printLine(statsText(stats, current));
}

async function mergeAction(sources: string[], f: DbFlags & { output?: string }): Promise<void> {
  if (!f.output) throw userError('BAD_ARGUMENT', 'veltair db merge needs -o DEST', 'e.g. veltair db merge shard-a shard-b -o merged-db');
  const r = await mergeDatabases(sources, f.output, { onWarning: warn });
  if (f.json) printJson(r);
  else {
    printLine(
      `merged ${r.filesRead} file${r.filesRead === 1 ? '' : 's'} into ${r.dest}: ${r.records} records ` +
        `(${r.duplicates} duplicates dropped, ${r.corrupt} corrupt lines skipped)`,
    );
  }
}

async function exportAction(f: ExportFlags): Promise<void> {
  const format = parseFormat(f.format ?? 'jsonl');
  if (f.json && !f.output) {
    throw userError(
      'BAD_ARGUMENT',
      'export --json needs -o FILE (stdout carries the JSON summary)',
      'add -o records.csv, or drop --json to stream the records to stdout',
    );
  }
  const target = f.target === undefined ? undefined : await resolveTarget(f.target);
  const r = await exportRecords(dbPath(f), { format, target, workload: f.workload, onWarning: warn });
  if (!f.output) {
    process.stdout.write(r.text);
    return;
  }
  await writeOutput(f.output, r.text);
  if (f.json) printJson({ file: f.output, format, records: r.records });
  else printLine(`exported ${r.records} records to ${f.output} (${format})`);
}

async function pruneAction(f: PruneFlags): Promise<void> {
  const keepPerWorkload = f.keep === undefined ? undefined : parseKeep(f.keep);
  const target = f.dropOtherTargets ? await resolveTarget(f.target ?? 'current') : undefined;
  const r = await pruneDatabase(dbPath(f), {
    keepPerWorkload,
    dropFailed: f.dropFailed,
    dropOtherTargets: f.dropOtherTargets,
    target,
    onWarning: warn,
  });
  if (f.json) printJson(r);
  else printLine(pruneText(r));
}

function compactText(r: CompactResult): string {
  const changed = r.targets.filter((t) => t.changed).length;
  const lines = r.targets.map((t) => {
    const s = r.index.targets[t.target];
    const unchanged = t.changed ? '' : ' (unchanged)';
    return `  ${t.target}  ${t.records} records, ${s?.workloads ?? 0} workloads, ${s?.bytes ?? 0} bytes${unchanged}  ${s?.cpuModel ?? ''}`;
  });
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  return [
    `compacted ${r.recordsRead} records into ${r.outDir}: ${plural(r.targets.length, 'target')}, ${plural(changed, 'file')} rewritten`,
    ...lines,
  ].join('\n');
}

async function compactAction(f: CompactFlags): Promise<void> {
  if (!f.output) {
    throw userError(
      'BAD_ARGUMENT',
      'veltair db compact needs -o DIR',
      'e.g. veltair db compact --db ~/.cache/veltair/tuning-db -o tuning-db',
    );
  }
  const target = f.target === undefined ? undefined : await resolveTarget(f.target);
  const r = await compactDatabase({
    sources: [dbPath(f), ...(f.shipped ? [shippedDatabaseDir()] : [])],
    outDir: f.output,
    ...(target !== undefined ? { target } : {}),
    includeExisting: f.existing !== false,
    onWarning: warn,
  });
  if (f.json) printJson(r);
  else printLine(compactText(r));
}

const fixed = (x: number, digits: number) => x.toFixed(digits);

function rankEvalText(dir: string, e: RankEvaluation): string {
  const row = (name: string, s: RankScores) => [
    name,
    fixed(s.kendallTau, 3),
    fixed(s.top1, 3),
    fixed(s.topKRecall, 3),
    `${fixed(s.meanRegretPercent, 1)}%`,
  ];
  return [
    `ranking model, leave one workload out over ${dir}: ${e.records} records of ${e.targets} targets; ` +
      `${e.runs} runs of ${e.heldOutWorkloads} held-out workloads ranked (${fixed(e.meanRunSize, 1)} candidates per run on average)`,
    formatTable(
      [['order', 'Kendall τ', 'top-1', `top-${e.k} recall`, 'regret of top-1'], row('model', e.model), row('random', e.random)],
      new Set([1, 2, 3, 4]),
    ),
    `features: ${RANK_FEATURES.join(', ')}`,
  ].join('\n');
}

async function rankEvalAction(f: RankEvalFlags): Promise<void> {
  const dir = f.db ?? shippedDatabaseDir();
  const scan = await scanDatabase(dir, { onWarning: warn });
  const e = evaluateRanking(scan.records.values(), {
    ...(f.minRun !== undefined ? { minGroup: parsePositiveInt('--min-run', f.minRun) } : {}),
    ...(f.k !== undefined ? { k: parsePositiveInt('--k', f.k) } : {}),
  });
  if (f.json) printJson({ db: dir, features: RANK_FEATURES, ...e });
  else printLine(rankEvalText(dir, e));
}

export function registerDbCommand(program: Command): void {
  const db = program.command('db').description('inspect and maintain tuning records (JSON Lines databases)');
  const dbOption = `database directory (default ${defaultDatabaseDir()})`;
  db.command('stats')
    .description('records, duplicates, corrupt lines, workloads, targets and statuses')
    .option('--db <dir>', dbOption)
    .option('--json', 'machine-readable output on stdout, nothing else there')
    .action(statsAction);
  db.command('merge')
    .description('merge databases or records files into one, dropping duplicates (CI: join shards)')
    .argument('<sources...>', 'database directories or .jsonl files')
    .option('-o, --output <dir>', 'destination database directory (created if missing; its records are kept)')
    .option('--json', 'machine-readable output on stdout, nothing else there')
    .action(mergeAction);
  db.command('export')
    .description('write records as JSON Lines or CSV (one row per measured candidate, every repeat kept)')
    .option('--db <dir>', dbOption)
    .option('--format <fmt>', 'csv or jsonl (default jsonl)')
    .option('-o, --output <file>', 'output file (default: stdout)')
    .option('--target <fp>', 'only records for this target fingerprint, or `current` for this machine')
    .option('--workload <key>', 'only records for this workload key')
    .option('--json', 'with -o: a JSON summary on stdout')
    .action(exportAction);
  db.command('prune')
    .description('rewrite the database atomically without corrupt lines, duplicates and what the options drop')
    .option('--db <dir>', dbOption)
    .option('--keep <n>', 'per target and workload, keep the N fastest ok records at each interference level')
    .option('--drop-failed', 'drop records of candidates that crashed, timed out, failed to compile or were wrong')
    .option('--drop-other-targets', 'drop records measured on other machines (see --target)')
    .option('--target <fp>', 'with --drop-other-targets: the fingerprint to keep (default: this machine)')
    .option('--json', 'machine-readable output on stdout, nothing else there')
    .action(pruneAction);
  db.command('compact')
    .description(
      "write each target's family and best records as one compressed file per target, plus index.json (a record hub like tuning-db/)",
    )
    .option('--db <dir>', dbOption)
    .option('-o, --output <dir>', 'folder of compacted files to write or update, e.g. tuning-db')
    .option('--target <fp>', 'only this target fingerprint, or `current` for this machine (default: every target)')
    .option('--no-existing', "do not read the output folder's own records: rebuild it from --db alone")
    .option('--shipped', "also read the records shipped in the package's tuning-db/")
    .option('--json', 'machine-readable output on stdout, nothing else there')
    .action(compactAction);
  db.command('rank-eval')
    .description(
      "how well the search's ranking model orders candidates of workloads it was not fitted on (leave one workload out): " +
        'Kendall τ, top-1, top-k recall, against a random order',
    )
    .option('--db <dir>', "database directory or records file (default: the package's tuning-db/)")
    .option('--min-run <n>', 'rank only tuning runs with at least this many records (default 3)')
    .option('--k <n>', 'the k of top-k recall (default 3)')
    .option('--json', 'machine-readable output on stdout, nothing else there')
    .action(rankEvalAction);
}
