/**
 * `veltair compile MODEL.onnx -o OUT [--trials N] [--levels 0,1,2,3,4] [--max-versions 5]
 *  [--threads N] [--db DIR] [--no-shipped-records] [--shard i/n] [--input-shape …] [--seed N] [--sign KEY] [--force] [--json]`
 * load → lower → tune the unique workloads (one pass, every level, at every thread count) → families → bundle.
 * Every argument and the output location are checked, and a C compiler is found, before the
 * first candidate is measured. With --shard only that shard's workloads are tuned into the
 * database (its own records file) and no bundle is written. With --sign KEY the manifest is signed
 * (Ed25519, src/bundle/sign.ts) inside the staging directory, so the bundle appears signed or not
 * at all.
 */
import type { Command } from 'commander';
import { totalmem } from 'node:os';
import { resolve } from 'node:path';
import { buildBundleFiles, type BuiltBundle } from '../bundle/build.js';
import { readSigningKey, signBundleDir } from '../bundle/sign.js';
import { checkOutput, prepareOutput, writeBundleAtomically } from '../bundle/write.js';
import { openDatabase, defaultDatabaseDir, shardFileName } from '../db/store.js';
import { quoteForMessage, userError } from '../errors.js';
import { lowerToLayers, summarise } from '../ir/lower.js';
import { formatBytes, minimumMemory } from '../ir/memory.js';
import type { LayerGraph } from '../ir/layer.js';
import { compilerVersion } from '../toolchain/compiler.js';
import { loadModel } from '../onnx/load.js';
import { powersUpTo } from '../space/schedule.js';
import { detectTarget, targetNotes } from '../toolchain/target.js';
import { ISA_LEVELS, missingForLevel, vectorWidths, type IsaLevel } from '../toolchain/isa.js';
import { assertRunnable } from '../runtime/preflight.js';
import { tasksOf, tuneWorkloads, type LevelRegret, type Shard, type TransferSummary, type TuneResult } from '../tune/tune-model.js';
import { collectInputShape } from './inspect.js';
import { badArgument, parsePositiveInt } from '../terminal/args.js';
import { note, printJson, printLine, progressBar } from '../terminal/output.js';
import { buildSparseFamily, DEFAULT_SPARSE_MIN_OUTPUTS, loadCalibration, parseSparseArgs, planSparse, sparseSummaryText, type SparseFlags,
  type SparseSummary } from './sparse-compile.js';

/**
 * Trials per unique workload when --trials is not given. A budget choice: the search is seeded with
 * the two ends of the space and a balanced default, and 8 trials × 5 levels keep a ResNet-50
 * compile from an empty database within the issue's 20-minute budget on the 2-core development
 * machine: 691 s wall from an empty database and a cold kernel cache, 285 candidates measured
 * (bench/RESULTS.md, "Tuning: ResNet-50 compile", 1 Dec 2026). Raise it with --trials when time allows.
 */
export const DEFAULT_TRIALS = 8;
export const MAX_VERSIONS_LIMIT = 5;

interface CompileFlags extends SparseFlags {
  output?: string;
  trials?: string;
  transferTrials?: string;
  levels?: string;
  maxVersions?: string;
  threads?: string;
  profileThreads?: string;
  isa?: string;
  db?: string;
  shippedRecords?: boolean;
  shard?: string;
  seed?: string;
  inputShape: Map<string, readonly number[]>;
  sign?: string;
  force?: boolean;
  json?: boolean;
}

export interface CompileSummary {
  readonly bundle: string | null;
  readonly layers: number;
  readonly tunableLayers: number;
  readonly versionsHistogram: Record<string, number>;
  readonly measured: number;
  readonly dbHits: number;
  readonly tuningSeconds: number;
  readonly perLevelRegret: Record<string, LevelRegret>;
  /** How each workload started: exact records, seeds transferred from the nearest other targets, or nothing. */
  readonly transfer: TransferSummary;
  /** Key id of the signing key (--sign), else absent. */
  readonly signedBy?: string;
  /** The large output layer's sparse family (sparse-compile.ts), when the model has one. */
  readonly sparse?: SparseSummary;
}


export function parseLevels(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length === 0 || parts.some((p) => !/^[0-4]$/.test(p))) {
    throw badArgument('--levels', text, 'must be a comma-separated list of interference levels 0 to 4', 'e.g. --levels 0,1,2,3,4 or --levels 0');
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

export function parseShard(text: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = m ? Number(m[1]) : NaN, count = m ? Number(m[2]) : NaN;
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

interface CompileArgs {
  readonly trials: number;
  /** undefined: the tuner's default cap (max(2, ⌈trials/3⌉)). */
  readonly transferTrials: number | undefined;
  readonly levels: number[];
  readonly maxVersions: number;
  readonly threads: number[] | undefined;
  readonly profileThreads: number[] | 'auto';
  readonly seed: number;
  readonly shard: Shard | undefined;
  readonly isa: IsaLevel;
}

function parseIsa(text: string): IsaLevel {
  if (!(ISA_LEVELS as readonly string[]).includes(text)) {
    throw badArgument('--isa', text, `is not one of ${ISA_LEVELS.join(', ')}`, 'native (fastest here) or a portable level: --isa x86-64-v3');
  }
  const level = text as IsaLevel;
  const missing = missingForLevel(level);
  if (missing.length > 0) {
    throw userError('BAD_ARGUMENT', `--isa ${level} needs ${missing.join(', ')}, which this CPU lacks: veltair measures every kernel it keeps, `
      + 'so it builds for an ISA level only on a CPU that runs it (no cross-compilation)', 'compile on a machine of that level, or use --isa native');
  }
  return level;
}

function parseTransferTrials(text: string): number {
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text))) {
    throw badArgument('--transfer-trials', text, 'is not a whole number', 'e.g. --transfer-trials 2 (0: search from scratch, no transfer)');
  }
  return Number(text);
}

function parseArgs(f: CompileFlags): CompileArgs {
  const profile = f.profileThreads ?? 'auto';
  return {
    trials: f.trials === undefined ? DEFAULT_TRIALS : parsePositiveInt('--trials', f.trials),
    transferTrials: f.transferTrials === undefined ? undefined : parseTransferTrials(f.transferTrials),
    levels: f.levels === undefined ? [0, 1, 2, 3, 4] : parseLevels(f.levels),
    maxVersions: f.maxVersions === undefined ? MAX_VERSIONS_LIMIT : parsePositiveInt('--max-versions', f.maxVersions, MAX_VERSIONS_LIMIT),
    threads: f.threads === undefined ? undefined : parseThreadList('--threads', f.threads),
    profileThreads: profile === 'auto' ? 'auto' : profile === 'none' ? [] : parseThreadList('--profile-threads', profile),
    seed: f.seed === undefined ? 1 : parseSeed(f.seed),
    shard: f.shard === undefined ? undefined : parseShard(f.shard),
    isa: parseIsa(f.isa ?? 'native'),
  };
}

const fmtRegret = (r: Record<string, LevelRegret>) =>
  Object.entries(r).map(([l, x]) => `level ${l}: mean ${x.meanPercent.toFixed(1)}% max ${x.maxPercent.toFixed(1)}%`).join(' | ') || '-';
const fmtHistogram = (h: Record<string, number>) =>
  Object.entries(h).sort(([a], [b]) => Number(a) - Number(b))
    .map(([k, n]) => `${k} version${k === '1' ? '' : 's'}: ${n} layer${n === 1 ? '' : 's'}`).join(', ') || '-';
const fmtBytes = (b: number) => (b >= 1024 ** 2 ? `${(b / 1024 ** 2).toFixed(1)} MiB` : `${(b / 1024).toFixed(1)} KiB`);

function summaryText(
  s: CompileSummary, tune: TuneResult, built: BuiltBundle | undefined, uniqueWorkloads: number, shard: Shard | undefined, dbDir: string,
): string {
  const lines = [
    built
      ? `bundle     ${s.bundle} (${fmtBytes(built.bytes)})`
      : `shard ${shard!.index}/${shard!.count}: tuned ${tune.families.size} of ${uniqueWorkloads} workloads into ${dbDir} `
        + `(${shardFileName(shard!.index, shard!.count)}); no bundle written`,
    `layers     ${s.layers} (${s.tunableLayers} tunable, ${uniqueWorkloads} unique workloads)`,
    `tuning     ${s.tuningSeconds.toFixed(1)} s: ${s.measured} measured, ${s.dbHits} from the database`,
    `records    ${s.transfer.exactWorkloads} workloads with records for this target, ${s.transfer.transferredWorkloads} seeded from other `
      + `targets (${s.transfer.transferredSeeds} seeds${s.transfer.medianDistance === null ? '' : `, median distance ${s.transfer.medianDistance}`}), `
      + `${s.transfer.freshWorkloads} searched from scratch`,
    `versions   ${fmtHistogram(s.versionsHistogram)}`,
    `regret     ${fmtRegret(s.perLevelRegret)}`,
  ];
  if (s.sparse) lines.push(...sparseSummaryText(s.sparse));
  if (s.signedBy) lines.push(`signed     manifest.sig, Ed25519 key ${s.signedBy}`);
  if (!built) lines.push('next: veltair db merge SHARD_DBS… -o DB, then veltair compile MODEL -o OUT --db DB (measures nothing)');
  return lines.join('\n');
}

/**
 * Refuse, before any tuning, a model whose one inference cannot fit in this machine's memory: every
 * candidate would fail to allocate its buffers and the layer end as "no working version".
 */
export function checkFitsInMemory(modelPath: string, graph: LayerGraph, memoryBytes = totalmem()): void {
  const need = minimumMemory(graph);
  if (need.bytes <= memoryBytes) return;
  const input = need.largestInput;
  const inputText = input ? `input ${quoteForMessage(input.name)} [${input.shape.join(', ')}] ${input.dtype} alone is ${formatBytes(input.bytes)}; ` : '';
  const layerText = need.layer ? `layer ${need.layer.index} (${need.layer.op} ${quoteForMessage(need.layer.name)}) holds ` : 'running it needs ';
  throw userError('TOO_LARGE',
    `${modelPath}: ${inputText}${layerText}${formatBytes(need.bytes)} at once (its inputs and output), more than this machine's `
      + `${formatBytes(memoryBytes)} of memory`,
    'compile it with smaller input shapes (--input-shape NAME=1x3x224x224), or on a machine with more memory');
}

async function compileAction(modelPath: string, f: CompileFlags): Promise<void> {
  const args = parseArgs(f);
  const sparseArgs = parseSparseArgs(f);
  if (!args.shard && !f.output) {
    throw userError('BAD_ARGUMENT', 'veltair compile needs -o OUT (the bundle directory to write)', 'e.g. veltair compile model.onnx -o model.bundle');
  }
  if (!args.shard) await checkOutput(f.output!, f.force === true);
  if (f.sign !== undefined && args.shard) {
    throw userError('BAD_ARGUMENT', '--sign signs a bundle, and --shard writes none', 'sign the final compile (the one without --shard)');
  }
  const signingKey = f.sign === undefined ? undefined : readSigningKey(f.sign);
  await compilerVersion();

  const inferred = await loadModel(modelPath, { inputShapes: f.inputShape });
  const sparsePlan = planSparse(lowerToLayers(inferred), sparseArgs);
  if (!sparsePlan.split && (f.sparsities !== undefined || f.calibration !== undefined)) note(`note: no sparse output layer: ${sparsePlan.reason}`);
  // With a sparse head, the tuner compiles the layers before it; the head's family is built after the bundle (sparse-compile.ts).
  const graph = sparsePlan.graph;
  const calibration = sparsePlan.split && !args.shard ? await loadCalibration(modelPath, graph, sparsePlan.split, sparseArgs, args.seed) : undefined;
  const totals = summarise(graph);
  const uses = graph.layers.filter((l) => l.tunable).map((l) => ({ workload: l.workload!, count: 1 }));
  if (uses.length === 0) {
    throw userError('BAD_INPUT', `${modelPath} has no tunable layer (conv, dense or matmul): there is nothing for veltair to compile`,
      'veltair compiles models with convolutions or matrix multiplications');
  }
  checkFitsInMemory(modelPath, graph);
  const target = await detectTarget(args.isa);
  for (const guess of await targetNotes()) note(`warning: ${guess}; tuning records and kernels are sized for it`);
  assertRunnable(graph, vectorWidths(target.isa)[0]!, modelPath);
  const dbDir = f.db ?? defaultDatabaseDir();
  const db = await openDatabase(dbDir, { target, onWarning: (m) => note(`warning: ${m}`), ...(f.shippedRecords === false ? { shipped: false } : {}) });
  const profileThreads = args.profileThreads === 'auto' ? powersUpTo(target.cores) : args.profileThreads.filter((t) => t <= target.cores);

  const bar = progressBar(f.json === true);
  let phase: 'compiling' | 'tuning' | undefined;
  let tune: TuneResult;
  try {
    tune = await tuneWorkloads(uses, {
      trials: args.trials, levels: args.levels, maxVersions: args.maxVersions, seed: args.seed, db, target,
      ...(args.transferTrials !== undefined ? { transferTrials: args.transferTrials } : {}),
      ...(args.threads ? { threads: args.threads } : {}),
      ...(args.shard ? { shard: args.shard } : {}),
      profileThreads,
      onCompileProgress: (done, total) => {
        if (phase !== 'compiling') { bar.start(total, `compiling ${total} candidates`); phase = 'compiling'; }
        bar.update(done);
      },
      onProgress: (p) => {
        if (phase !== 'tuning') { bar.stop(); bar.start(p.budget, 'tuning'); phase = 'tuning'; }
        bar.update(p.trialsDone, `workload ${p.taskIndex + 1}/${p.tasks} (${p.taskTrials} trials)`);
      },
    });
  } finally {
    bar.stop();
  }

  let built: BuiltBundle | undefined;
  let signedBy: string | undefined;
  let sparseSummary: SparseSummary | undefined;
  if (!args.shard) {
    const staging = await prepareOutput(f.output!, f.force === true);
    built = await writeBundleAtomically(staging, async (dir) => {
      const b = await buildBundleFiles(dir, {
        modelPath, model: inferred, graph, families: tune.families, target,
        options: { trials: args.trials, levels: [...tune.levels], maxVersions: args.maxVersions, threads: [...tune.threads], profileThreads, seed: args.seed },
      });
      if (sparsePlan.split && calibration) {
        const built = await buildSparseFamily(dir, { modelPath, split: sparsePlan.split, args: sparseArgs, seed: args.seed, threads: 1, graph, calibration,
          levels: tune.levels });
        sparseSummary = built.summary;
        for (const n of built.notes) note(`note: ${n}`);
      }
      if (signingKey) signedBy = (await signBundleDir(dir, signingKey)).keyId;
      return b;
    });
    for (const n of built.notes) note(`note: ${n}`);
  }
  const summary: CompileSummary = {
    bundle: built ? resolve(f.output!) : null,
    layers: totals.layers,
    tunableLayers: totals.tunableLayers,
    versionsHistogram: tune.versionsHistogram,
    measured: tune.measured,
    dbHits: tune.dbHits,
    tuningSeconds: Math.round(tune.seconds * 1000) / 1000,
    perLevelRegret: tune.perLevelRegret,
    transfer: tune.transfer,
    ...(signedBy ? { signedBy } : {}),
    ...(sparseSummary ? { sparse: sparseSummary } : {}),
  };
  if (f.json) printJson(summary);
  else printLine(summaryText(summary, tune, built, tasksOf(uses).length, args.shard, dbDir));
}

export function registerCompileCommand(program: Command): void {
  program
    .command('compile')
    .description('tune every layer once at every interference level and write a bundle of Pareto kernel families')
    .argument('<model>', 'path to an .onnx file')
    .option('-o, --output <dir>', 'bundle directory to write (not needed with --shard)')
    .option('--trials <n>', `measured candidates per unique workload (default ${DEFAULT_TRIALS})`)
    .option('--transfer-trials <n>', 'candidates per workload and thread count when only other machines\' records seed it '
      + '(default max(2, ⌈trials/3⌉); 0: no transfer, search from scratch)')
    .option('--levels <list>', 'interference levels to measure every candidate at (default 0,1,2,3,4)')
    .option('--max-versions <n>', `versions kept per layer and thread count, 1 to ${MAX_VERSIONS_LIMIT} (default ${MAX_VERSIONS_LIMIT})`)
    .option('--isa <level>', 'kernels for this CPU (native, default: fastest) or a portable level any CPU of it runs: x86-64-v3 (AVX2), x86-64-v4 (AVX-512)')
    .option('--threads <list>', 'thread counts to tune at, each with its own --trials and family, e.g. 1 or 1,2 '
      + '(default: every count 1..cores; above 8 cores the powers of two and the core count)')
    .option('--profile-threads <list>', 'thread counts to profile kept versions at (level 0): a list, none, or auto (1, 2, 4 … cores; default)')
    .option('--db <dir>', `tuning database directory (default ${defaultDatabaseDir()})`)
    .option('--no-shipped-records', 'ignore the records shipped in the package\'s tuning-db/: tune from --db alone')
    .option('--shard <i/n>', 'tune only shard i of n of the workloads into the database; write no bundle')
    .option('--seed <n>', 'search seed (default 1)')
    .option('--input-shape <name=dims>', 'pin an input shape, e.g. input=1x3x224x224 (repeatable)', collectInputShape, new Map<string, readonly number[]>())
    .option('--sign <key>', 'sign the bundle\'s manifest with this Ed25519 private key (veltair keygen), into manifest.sig')
    .option('--no-sparse', 'compile a large output layer densely only, with no sparse (LSH) family')
    .option('--sparse-min-outputs <n>', `outputs from which a dense output layer gets a sparse family (default ${DEFAULT_SPARSE_MIN_OUTPUTS})`)
    .option('--sparsities <list>', 'sparsities of the sparse family\'s versions, each in (0, 1] (default 1,0.05,0.01,0.005; 1 = dense)')
    .option('--calibration <file>', 'inputs to measure the sparse versions\' recall on: FILE.npy [rows, width] or an XC-format file with labels')
    .option('--calibration-rows <n>', 'calibration rows used at most (default 500)')
    .option('--top-k <n>', 'classes a sparse output layer returns per input (default 5)')
    .option('--sparse-tables <L>', 'hash tables of a sparse index built at compile time (default: BOLT\'s autotuned L)')
    .option('--sparse-hash <family>', 'hash family of a sparse index built at compile time: dwta (default, as veltair train) or simhash')
    .option('--force', 'replace an existing bundle at -o')
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(compileAction);
}
