/**
 * The one options type of a compile: what `compileModel` takes and what `veltair compile`'s flags
 * parse into (src/cli/compile.ts maps each flag to the field of the same name). Every field is
 * optional; `resolveCompileOptions` fills the defaults and checks each value once, before any
 * tuning, naming the flag and the field in its error.
 */
import type { KeyObject } from 'node:crypto';
import { userError } from '../errors.js';
import type { HashFamily } from '../sparse/layers.js';
import { DEFAULT_SPARSITIES } from '../sparse/head-versions.js';
import { ISA_LEVELS, missingForLevel, type IsaLevel } from '../toolchain/isa.js';
import type { Shard, TuneProgress } from '../tune/tune-model.js';
import { SEARCH_MODES, type SearchMode } from '../tune/race.js';

/** The tuner's timing window per measurement, ms (`--window-ms`), and the range it accepts. */
export const DEFAULT_WINDOW_MS = 100;
export const MIN_WINDOW_MS = 5;
export const MAX_WINDOW_MS = 10_000;

/**
 * Trials per unique workload when `trials` is not given. A budget choice: the search is seeded with
 * the two ends of the space and a balanced default, and 8 trials × 5 levels keep a ResNet-50
 * compile from an empty database within the issue's 20-minute budget on the 2-core development
 * machine: 691 s wall from an empty database and a cold kernel cache, 285 candidates measured
 * (bench/RESULTS.md, "Tuning: ResNet-50 compile", 1 Dec 2026). Raise it when time allows.
 */
export const DEFAULT_TRIALS = 8;
/** Most versions kept per layer and thread count. */
export const MAX_VERSIONS_LIMIT = 5;
export const DEFAULT_SPARSE_MIN_OUTPUTS = 10_000;
export const DEFAULT_TOP_K = 5;
export const DEFAULT_CALIBRATION_ROWS = 500;

/** Options of {@link compileModel}; `veltair compile`'s flags, one field each (named after the flag). */
export interface CompileOptions {
  /** Bundle directory to write (`-o`). Required unless `shard` is given. */
  readonly output?: string;
  /** Replace an existing bundle at `output` (`--force`); never an arbitrary folder. */
  readonly force?: boolean;
  /** Measured candidates per unique workload (`--trials`, default {@link DEFAULT_TRIALS}). */
  readonly trials?: number;
  /**
   * Candidates per workload and thread count when other machines' records cover it, on every
   * compile (`--transfer-trials`; default max(2, ⌈trials/4⌉); 0: no transfer, the full `trials`).
   */
  readonly transferTrials?: number;
  /** Interference levels (0 quiet … 4) every candidate is measured at (`--levels`, default 0–4). */
  readonly levels?: readonly number[];
  /** Versions kept per layer and thread count, 1 to {@link MAX_VERSIONS_LIMIT} (`--max-versions`, default 5). */
  readonly maxVersions?: number;
  /** Thread counts to tune at, each its own search and family (`--threads`; default: every count the runtime may use). */
  readonly threads?: readonly number[];
  /** Thread counts to profile kept versions at (`--profile-threads`): a list, `[]` for none, or 'auto' (1, 2, 4 … cores; default). */
  readonly profileThreads?: readonly number[] | 'auto';
  /** Kernels for this CPU ('native', default) or a portable level this CPU runs (`--isa`). */
  readonly isa?: IsaLevel;
  /**
   * How candidates are judged (`--search`): 'race' (default) times each at level 0 with a short
   * window and measures in full only those that can still reach the family (tune/race.ts);
   * 'exhaustive' measures every candidate at every level with full windows.
   */
  readonly search?: SearchMode;
  /**
   * Timing window of one measurement of a candidate at one level, in ms (`--window-ms`, default
   * 100): the kernel is called until this much time is timed (at least 3 repeats).
   * Most of a default-budget compile is these windows; a shorter one compiles faster and ranks less surely.
   */
  readonly windowMs?: number;
  /**
   * Winograd F(4×4, 3×3) candidates for ungrouped stride-1 3×3 convs (default true; `--no-winograd`
   * sets false: direct versions only, and Winograd records in the database are left out).
   */
  readonly winograd?: boolean;
  /** Tuning database directory (`--db`; default: the user's, see `defaultDatabaseDir`). */
  readonly db?: string;
  /** Use the records shipped in the package's tuning-db/ (default true; `--no-shipped-records` sets false). */
  readonly shippedRecords?: boolean;
  /** Tune only shard `index` of `count` of the workloads into the database, and write no bundle (`--shard i/n`). */
  readonly shard?: Shard;
  /** Search seed (`--seed`, default 1). */
  readonly seed?: number;
  /** Pinned shapes of inputs with symbolic dimensions (`--input-shape NAME=DIMS`), by input name. */
  readonly inputShapes?: ReadonlyMap<string, readonly number[]> | Readonly<Record<string, readonly number[]>>;
  /** Sign the manifest (`--sign`): an Ed25519 private key, or the path of its PEM file (veltair keygen). */
  readonly sign?: string | KeyObject;
  /** Give a large dense output layer a sparse (LSH) family (default true; `--no-sparse` sets false). */
  readonly sparse?: boolean;
  /** Outputs from which a dense output layer gets a sparse family (`--sparse-min-outputs`, default 10 000). */
  readonly sparseMinOutputs?: number;
  /** Sparsities of the sparse family's versions, each in (0, 1] (`--sparsities`; 1 = dense, always included). */
  readonly sparsities?: readonly number[];
  /** Inputs to measure the sparse versions' recall on (`--calibration`): FILE.npy [rows, width] or an XC-format file. */
  readonly calibration?: string;
  /** Calibration rows used at most (`--calibration-rows`, default 500). */
  readonly calibrationRows?: number;
  /** Classes a sparse output layer returns per input (`--top-k`, default 5). */
  readonly topK?: number;
  /** Hash family of a sparse index built at compile time (`--sparse-hash`, default 'dwta'). */
  readonly sparseHash?: HashFamily;
  /** Hash tables of a sparse index built at compile time (`--sparse-tables`; default: BOLT's autotuned L). */
  readonly sparseTables?: number;
  /** Warnings and notes as they happen (the CLI prints them on stderr); they are also in the result. */
  readonly onNote?: (message: string) => void;
  /** While the warm-up batches compile: kernels compiled of those to compile. */
  readonly onCompileProgress?: (done: number, total: number) => void;
  /** While candidates are measured. */
  readonly onProgress?: (p: TuneProgress) => void;
}

type Callbacks = 'onNote' | 'onCompileProgress' | 'onProgress';
type Optional = 'output' | 'transferTrials' | 'threads' | 'db' | 'shard' | 'sign' | 'calibration' | 'sparseTables' | Callbacks;

/** The options with every default filled in and every value checked: the same fields, nothing renamed. */
export type ResolvedCompileOptions = Required<Omit<CompileOptions, Optional | 'inputShapes'>> &
  Pick<CompileOptions, Optional> & {
    readonly inputShapes: ReadonlyMap<string, readonly number[]>;
  };

const bad = (field: string, flag: string, value: unknown, why: string, hint: string) =>
  userError('BAD_ARGUMENT', `${flag} (options.${field}) ${JSON.stringify(value)} ${why}`, hint);

function integer(field: string, flag: string, v: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw bad(
      field,
      flag,
      v,
      `is not an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}`,
      `e.g. ${flag} ${Math.max(min, 1)}`,
    );
  }
  return v;
}

function list(field: string, flag: string, v: readonly number[], min: number, max: number): number[] {
  if (v.length === 0) throw bad(field, flag, v, 'is empty', `e.g. ${flag} ${min}`);
  for (const x of v) integer(field, flag, x, min, max);
  return [...new Set(v)].sort((a, b) => a - b);
}

/** A search mode (tune/race.ts), or the flag's error. */
export function checkSearch(mode: string): SearchMode {
  if (!(SEARCH_MODES as readonly string[]).includes(mode)) {
    throw bad('search', '--search', mode, `is not one of ${SEARCH_MODES.join(', ')}`, 'race (default) or exhaustive: --search exhaustive');
  }
  return mode as SearchMode;
}

/** An ISA level this CPU runs: veltair measures every kernel it keeps, so there is no cross-compilation. */
export function checkIsa(level: string): IsaLevel {
  if (!(ISA_LEVELS as readonly string[]).includes(level)) {
    throw bad(
      'isa',
      '--isa',
      level,
      `is not one of ${ISA_LEVELS.join(', ')}`,
      'native (fastest here), a portable level (--isa x86-64-v3), or one with VNNI for INT8 models (--isa x86-64-v4-vnni)',
    );
  }
  const missing = missingForLevel(level as IsaLevel);
  if (missing.length > 0) {
    throw userError(
      'BAD_ARGUMENT',
      `--isa ${level} needs ${missing.join(', ')}, which this CPU lacks: veltair measures every kernel it keeps, ` +
        'so it builds for an ISA level only on a CPU that runs it (no cross-compilation)',
      'compile on a machine of that level, or use --isa native',
    );
  }
  return level as IsaLevel;
}

function sparsities(v: readonly number[]): number[] {
  const badOne = v.find((s) => !Number.isFinite(s) || s <= 0 || s > 1);
  if (badOne !== undefined || v.length === 0) {
    throw bad('sparsities', '--sparsities', badOne ?? v, 'is not a sparsity in (0, 1]', 'e.g. --sparsities 1,0.05,0.01,0.005 (1 = dense)');
  }
  const unique = [...new Set(v)].sort((a, b) => b - a);
  return unique[0] === 1 ? unique : [1, ...unique];
}

/** Defaults filled and every value checked (BAD_ARGUMENT naming the flag and the field), before anything is loaded. */
export function resolveCompileOptions(o: CompileOptions): ResolvedCompileOptions {
  if (!o.shard && !o.output) {
    throw userError(
      'BAD_ARGUMENT',
      'veltair compile needs -o OUT (options.output: the bundle directory to write)',
      'e.g. veltair compile model.onnx -o model.bundle',
    );
  }
  if (o.sign !== undefined && o.shard) {
    throw userError('BAD_ARGUMENT', '--sign signs a bundle, and --shard writes none', 'sign the final compile (the one without --shard)');
  }
  if (
    o.shard &&
    (!Number.isSafeInteger(o.shard.count) ||
      !Number.isSafeInteger(o.shard.index) ||
      o.shard.count < 1 ||
      o.shard.index < 0 ||
      o.shard.index >= o.shard.count)
  ) {
    throw bad('shard', '--shard', o.shard, 'is not a shard i/n with 0 ≤ i < n', 'shards count from 0: --shard 0/4 … --shard 3/4');
  }
  const shapes = o.inputShapes instanceof Map ? o.inputShapes : new Map(Object.entries(o.inputShapes ?? {}));
  return {
    ...o,
    force: o.force === true,
    trials: integer('trials', '--trials', o.trials ?? DEFAULT_TRIALS, 1),
    ...(o.transferTrials !== undefined ? { transferTrials: integer('transferTrials', '--transfer-trials', o.transferTrials, 0) } : {}),
    levels: list('levels', '--levels', o.levels ?? [0, 1, 2, 3, 4], 0, 4),
    maxVersions: integer('maxVersions', '--max-versions', o.maxVersions ?? MAX_VERSIONS_LIMIT, 1, MAX_VERSIONS_LIMIT),
    ...(o.threads !== undefined ? { threads: list('threads', '--threads', o.threads, 1, Number.MAX_SAFE_INTEGER) } : {}),
    profileThreads:
      o.profileThreads === undefined || o.profileThreads === 'auto'
        ? 'auto'
        : o.profileThreads.length === 0
          ? []
          : list('profileThreads', '--profile-threads', o.profileThreads, 1, Number.MAX_SAFE_INTEGER),
    isa: checkIsa(o.isa ?? 'native'),
    search: checkSearch(o.search ?? 'race'),
    windowMs: integer('windowMs', '--window-ms', o.windowMs ?? DEFAULT_WINDOW_MS, MIN_WINDOW_MS, MAX_WINDOW_MS),
    shippedRecords: o.shippedRecords !== false,
    winograd: o.winograd !== false,
    seed: o.seed === undefined ? 1 : integer('seed', '--seed', o.seed, Number.MIN_SAFE_INTEGER),
    inputShapes: shapes,
    sparse: o.sparse !== false,
    sparseMinOutputs: integer('sparseMinOutputs', '--sparse-min-outputs', o.sparseMinOutputs ?? DEFAULT_SPARSE_MIN_OUTPUTS, 1),
    sparsities: o.sparsities === undefined ? DEFAULT_SPARSITIES : sparsities(o.sparsities),
    calibrationRows: integer('calibrationRows', '--calibration-rows', o.calibrationRows ?? DEFAULT_CALIBRATION_ROWS, 1),
    topK: integer('topK', '--top-k', o.topK ?? DEFAULT_TOP_K, 1, 1024),
    sparseHash: checkHash(o.sparseHash ?? 'dwta'),
    ...(o.sparseTables !== undefined ? { sparseTables: integer('sparseTables', '--sparse-tables', o.sparseTables, 1, 4096) } : {}),
  };
}

function checkHash(h: string): HashFamily {
  if (h !== 'dwta' && h !== 'simhash') throw bad('sparseHash', '--sparse-hash', h, 'is not dwta or simhash', 'e.g. --sparse-hash simhash');
  return h;
}
