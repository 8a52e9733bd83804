/**
 * `veltair compile MODEL.onnx -o OUT [--trials N] [--levels 0,1,2,3,4] [--max-versions 5]
 *  [--threads N] [--search race|exhaustive] [--window-ms MS] [--db DIR] [--no-shipped-records] [--no-winograd] [--shard i/n]
 *  [--input-shape …] [--seed N] [--sign KEY] [--force] [--json]`
 * Flag parsing, then one call of compileModel (src/compile/compile-model.ts): each flag parses into
 * the CompileOptions field of its name, with the flag named in any error; the progress bar, the
 * notes on stderr and the summary on stdout are the command's.
 */
import type { Command } from 'commander';
import { compileModel, type CompileResult } from '../compile/compile-model.js';
import {
  checkIsa,
  checkSearch,
  DEFAULT_SPARSE_MIN_OUTPUTS,
  DEFAULT_TRIALS,
  DEFAULT_WINDOW_MS,
  MAX_VERSIONS_LIMIT,
  MAX_WINDOW_MS,
  MIN_WINDOW_MS,
  type CompileOptions,
} from '../compile/options.js';
import type { SparseSummary } from '../compile/sparse-family.js';
import { defaultDatabaseDir, shardFileName } from '../db/store.js';
import type { HashFamily } from '../sparse-head/format.js';
import { parseSparsities } from '../sparse/head-versions.js';
import type { IsaLevel } from '../toolchain/isa.js';
import type { LevelRegret, Shard } from '../tune/tune-model.js';
import type { SearchMode } from '../tune/race.js';
import { collectInputShape } from './inspect.js';
import { badArgument, parsePositiveInt } from '../terminal/args.js';
import { note, printJson, printLine, progressBar } from '../terminal/output.js';

/** commander's object: every value as typed on the command line. */
interface CompileFlags {
  output?: string;
  trials?: string;
  transferTrials?: string;
  levels?: string;
  maxVersions?: string;
  threads?: string;
  profileThreads?: string;
  isa?: string;
  search?: string;
  windowMs?: string;
  db?: string;
  shippedRecords?: boolean;
  winograd?: boolean;
  shard?: string;
  seed?: string;
  inputShape: Map<string, readonly number[]>;
  sign?: string;
  force?: boolean;
  json?: boolean;
  sparse?: boolean;
  sparseMinOutputs?: string;
  sparsities?: string;
  calibration?: string;
  calibrationRows?: string;
  topK?: string;
  sparseHash?: string;
  sparseTables?: string;
}

export function parseLevels(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length === 0 || parts.some((p) => !/^[0-4]$/.test(p))) {
    throw badArgument(
      '--levels',
      text,
      'must be a comma-separated list of interference levels 0 to 4',
      'e.g. --levels 0,1,2,3,4 or --levels 0',
    );
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

export function parseShard(text: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = m ? Number(m[1]) : NaN,
    count = m ? Number(m[2]) : NaN;
  if (!m || count < 1 || index >= count) {
    throw badArgument('--shard', text, 'is not a shard i/n with 0 ≤ i < n', 'shards count from 0: --shard 0/4 … --shard 3/4');
  }
  return { index, count };
}

export function parseThreadList(flag: string, text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.some((p) => !/^\d+$/.test(p) || Number(p) < 1)) {
    throw badArgument(flag, text, 'must be thread counts (positive integers, comma-separated)', `e.g. ${flag} 1 or ${flag} 1,2`);
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

export function parseSeed(text: string): number {
  if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text))) {
    throw badArgument('--seed', text, 'is not an integer', 'e.g. --seed 1');
  }
  return Number(text);
}

function parseTransferTrials(text: string): number {
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text))) {
    throw badArgument('--transfer-trials', text, 'is not a whole number', 'e.g. --transfer-trials 2 (0: search from scratch, no transfer)');
  }
  return Number(text);
}

function parseWindowMs(text: string): number {
  const ms = Number(text);
  if (!/^\d+$/.test(text.trim()) || ms < MIN_WINDOW_MS || ms > MAX_WINDOW_MS) {
    throw badArgument(
      '--window-ms',
      text,
      `is not an integer from ${MIN_WINDOW_MS} to ${MAX_WINDOW_MS}`,
      `e.g. --window-ms ${DEFAULT_WINDOW_MS}`,
    );
  }
  return ms;
}

function parseHash(text: string): HashFamily {
  if (text !== 'dwta' && text !== 'simhash')
    throw badArgument('--sparse-hash', text, 'is not dwta or simhash', 'e.g. --sparse-hash simhash');
  return text;
}

function parseProfileThreads(text: string): CompileOptions['profileThreads'] {
  return text === 'auto' ? 'auto' : text === 'none' ? [] : parseThreadList('--profile-threads', text);
}

/** Each flag given, parsed into its field (a flag not given stays absent: compileModel's default applies). */
function parseFlags(f: CompileFlags): CompileOptions {
  const opt = <K extends keyof CompileOptions>(key: K, text: string | undefined, parse: (t: string) => CompileOptions[K]) =>
    (text === undefined ? {} : { [key]: parse(text) }) as Partial<CompileOptions>;
  return {
    ...opt('trials', f.trials, (t) => parsePositiveInt('--trials', t)),
    ...opt('transferTrials', f.transferTrials, parseTransferTrials),
    ...opt('levels', f.levels, parseLevels),
    ...opt('maxVersions', f.maxVersions, (t) => parsePositiveInt('--max-versions', t, MAX_VERSIONS_LIMIT)),
    ...opt('threads', f.threads, (t) => parseThreadList('--threads', t)),
    ...opt('profileThreads', f.profileThreads, parseProfileThreads),
    ...opt('seed', f.seed, parseSeed),
    ...opt('shard', f.shard, parseShard),
    ...opt('isa', f.isa, (t): IsaLevel => checkIsa(t)),
    ...opt('search', f.search, (t): SearchMode => checkSearch(t)),
    ...opt('windowMs', f.windowMs, parseWindowMs),
    ...opt('sparseMinOutputs', f.sparseMinOutputs, (t) => parsePositiveInt('--sparse-min-outputs', t)),
    ...opt('sparsities', f.sparsities, parseSparsities),
    ...opt('calibrationRows', f.calibrationRows, (t) => parsePositiveInt('--calibration-rows', t)),
    ...opt('topK', f.topK, (t) => parsePositiveInt('--top-k', t, 1024)),
    ...opt('sparseHash', f.sparseHash, parseHash),
    ...opt('sparseTables', f.sparseTables, (t) => parsePositiveInt('--sparse-tables', t, 4096)),
    ...(f.output !== undefined ? { output: f.output } : {}),
    ...(f.db !== undefined ? { db: f.db } : {}),
    ...(f.sign !== undefined ? { sign: f.sign } : {}),
    ...(f.calibration !== undefined ? { calibration: f.calibration } : {}),
    force: f.force === true,
    shippedRecords: f.shippedRecords !== false,
    winograd: f.winograd !== false,
    sparse: f.sparse !== false,
    inputShapes: f.inputShape,
  };
}

const fmtRegret = (r: Record<string, LevelRegret>) =>
  Object.entries(r)
    .map(([l, x]) => `level ${l}: mean ${x.meanPercent.toFixed(1)}% max ${x.maxPercent.toFixed(1)}%`)
    .join(' | ') || '-';
const fmtHistogram = (h: Record<string, number>) =>
  Object.entries(h)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([k, n]) => `${k} version${k === '1' ? '' : 's'}: ${n} layer${n === 1 ? '' : 's'}`)
    .join(', ') || '-';
const fmtBytes = (b: number) => (b >= 1024 ** 2 ? `${(b / 1024 ** 2).toFixed(1)} MiB` : `${(b / 1024).toFixed(1)} KiB`);

function summaryText(s: CompileResult, shard: Shard | undefined): string {
  const lines = [
    s.bytes !== null
      ? `bundle     ${s.bundle} (${fmtBytes(s.bytes)})`
      : `shard ${shard!.index}/${shard!.count}: tuned ${s.tunedWorkloads} of ${s.uniqueWorkloads} workloads into ${s.db} ` +
        `(${shardFileName(shard!.index, shard!.count)}); no bundle written`,
    `layers     ${s.layers} (${s.tunableLayers} tunable, ${s.uniqueWorkloads} unique workloads)`,
    `tuning     ${s.tuningSeconds.toFixed(1)} s: ${s.measured} measured` +
      `${s.raced > 0 ? ` (${s.raced} dropped after the level-0 race)` : ''}, ${s.dbHits} from the database`,
    `records    ${s.transfer.exactWorkloads} workloads with records for this target, ${s.transfer.transferredWorkloads} seeded from other ` +
      `targets (${s.transfer.transferredSeeds} seeds${s.transfer.medianDistance === null ? '' : `, median distance ${s.transfer.medianDistance}`}), ` +
      `${s.transfer.freshWorkloads} searched from scratch`,
    `versions   ${fmtHistogram(s.versionsHistogram)}`,
    `regret     ${fmtRegret(s.perLevelRegret)}`,
  ];
  if (s.sparse) lines.push(...sparseSummaryText(s.sparse));
  if (s.int8)
    lines.push(
      `int8       ${s.int8.layers} layers, ${s.int8.measured} candidates timed at ${s.int8.threads} thread(s) ` +
        `(${s.int8.failed} failed); versions ${fmtHistogram(s.int8.versionsHistogram)}`,
    );
  if (s.signedBy) lines.push(`signed     manifest.sig, Ed25519 key ${s.signedBy}`);
  if (s.bytes === null) lines.push('next: veltair db merge SHARD_DBS… -o DB, then veltair compile MODEL -o OUT --db DB (measures nothing)');
  return lines.join('\n');
}

export function sparseSummaryText(s: SparseSummary): string[] {
  const pct = (x: number | null) => (x === null ? '-' : `${(100 * x).toFixed(1)}%`);
  return [
    `sparse     ${s.layer} (${s.classes} classes): ${s.versions.filter((v) => v.kept).length} of ${s.versions.length} versions kept; ${s.index}`,
    `           calibration: ${s.calibration}; latency per input at level ${Object.keys(s.versions[0]!.latencyMs).join(', ')} (quiet first)`,
    ...s.versions.map(
      (v) =>
        `           ${v.kept ? '*' : ' '} ${v.id.padEnd(7)} ${Object.values(v.latencyMs)
          .map((x) => x.toFixed(4))
          .join(' / ')} ms  ` +
        `recall@1 ${pct(v.recallAt1)}  ` +
        `recall@5 ${pct(v.recallAt5)}  precision@1 ${pct(v.precisionAt1)}  ${Math.round(v.scoredMean)} neurons scored`,
    ),
  ];
}

/** The --json summary: the result's fields in their documented order, without the library-only ones. */
function jsonSummary(r: CompileResult): object {
  const { notes: _notes, db: _db, uniqueWorkloads: _u, tunedWorkloads: _t, bytes: _b, ...summary } = r;
  return summary;
}

async function compileAction(modelPath: string, f: CompileFlags): Promise<void> {
  const options = parseFlags(f);
  const bar = progressBar(f.json === true);
  let phase: 'compiling' | 'tuning' | undefined;
  let result: CompileResult;
  try {
    result = await compileModel(modelPath, {
      ...options,
      onNote: note,
      onCompileProgress: (done, total) => {
        if (phase !== 'compiling') {
          bar.start(total, `compiling ${total} candidates`);
          phase = 'compiling';
        }
        bar.update(done);
      },
      onProgress: (p) => {
        if (phase !== 'tuning') {
          bar.stop();
          bar.start(p.budget, 'tuning');
          phase = 'tuning';
        }
        bar.update(p.trialsDone, `workload ${p.taskIndex + 1}/${p.tasks} (${p.taskTrials} trials)`);
      },
    });
  } finally {
    bar.stop();
  }
  if (f.json) printJson(jsonSummary(result));
  else printLine(summaryText(result, options.shard));
}

export function registerCompileCommand(program: Command): void {
  program
    .command('compile')
    .description('tune every layer once at every interference level and write a bundle of Pareto kernel families')
    .argument('<model>', 'path to an .onnx file')
    .option('-o, --output <dir>', 'bundle directory to write (not needed with --shard)')
    .option('--trials <n>', `measured candidates per unique workload (default ${DEFAULT_TRIALS})`)
    .option(
      '--transfer-trials <n>',
      "candidates per workload and thread count when other machines' records cover it, on every compile " +
        '(default max(2, ⌈trials/4⌉); 0: no transfer, the full --trials)',
    )
    .option('--levels <list>', 'interference levels to measure every candidate at (default 0,1,2,3,4)')
    .option('--max-versions <n>', `versions kept per layer and thread count, 1 to ${MAX_VERSIONS_LIMIT} (default ${MAX_VERSIONS_LIMIT})`)
    .option(
      '--isa <level>',
      'kernels for this CPU (native, default: fastest) or a portable level any CPU of it runs: x86-64-v3 (AVX2), x86-64-v4 (AVX-512), ' +
        'x86-64-v3-vnni / x86-64-v4-vnni (with AVX-VNNI / AVX-512 VNNI, for INT8 models)',
    )
    .option(
      '--threads <list>',
      'thread counts to tune at, each with its own --trials and family, e.g. 1 or 1,2 ' +
        '(default: every count 1..cores; above 8 cores the powers of two and the core count)',
    )
    .option(
      '--profile-threads <list>',
      'thread counts to profile kept versions at (level 0): a list, none, or auto (1, 2, 4 … cores; default)',
    )
    .option(
      '--search <mode>',
      'race (default): time each candidate at level 0 briefly and measure in full only those that can still reach the family; ' +
        'exhaustive: every candidate at every level with full windows',
    )
    .option('--window-ms <ms>', `timing window of each measurement, ${MIN_WINDOW_MS} to ${MAX_WINDOW_MS} (default ${DEFAULT_WINDOW_MS})`)
    .option('--db <dir>', `tuning database directory (default ${defaultDatabaseDir()})`)
    .option('--no-shipped-records', "ignore the records shipped in the package's tuning-db/: tune from --db alone")
    .option('--no-winograd', 'direct versions only: no Winograd F(4x4, 3x3) candidates for stride-1 3x3 convs')
    .option('--shard <i/n>', 'tune only shard i of n of the workloads into the database; write no bundle')
    .option('--seed <n>', 'search seed (default 1)')
    .option(
      '--input-shape <name=dims>',
      'pin an input shape, e.g. input=1x3x224x224 (repeatable)',
      collectInputShape,
      new Map<string, readonly number[]>(),
    )
    .option('--sign <key>', "sign the bundle's manifest with this Ed25519 private key (veltair keygen), into manifest.sig")
    .option('--no-sparse', 'compile a large output layer densely only, with no sparse (LSH) family')
    .option(
      '--sparse-min-outputs <n>',
      `outputs from which a dense output layer gets a sparse family (default ${DEFAULT_SPARSE_MIN_OUTPUTS})`,
    )
    .option('--sparsities <list>', "sparsities of the sparse family's versions, each in (0, 1] (default 1,0.05,0.01,0.005; 1 = dense)")
    .option(
      '--calibration <file>',
      "inputs to measure the sparse versions' recall on: FILE.npy [rows, width] or an XC-format file with labels",
    )
    .option('--calibration-rows <n>', 'calibration rows used at most (default 500)')
    .option('--top-k <n>', 'classes a sparse output layer returns per input (default 5)')
    .option('--sparse-tables <L>', "hash tables of a sparse index built at compile time (default: BOLT's autotuned L)")
    .option('--sparse-hash <family>', 'hash family of a sparse index built at compile time: dwta (default, as veltair train) or simhash')
    .option('--force', 'replace an existing bundle at -o')
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(compileAction);
}
