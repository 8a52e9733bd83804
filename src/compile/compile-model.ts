/**
 * Compiling a model: load → lower → tune the unique workloads (one pass, every level, at every
 * thread count) → families → bundle. Every option and the output location are checked, and a C
 * compiler is found, before the first candidate is measured. With `shard` only that shard's
 * workloads are tuned into the database (its own records file) and no bundle is written. With
 * `sign` the manifest is signed (Ed25519, src/bundle/sign.ts) inside the staging directory, so the
 * bundle appears signed or not at all. `veltair compile` is this call after its flags are parsed.
 */
import type { KeyObject } from 'node:crypto';
import { totalmem } from 'node:os';
import { resolve } from 'node:path';
import { buildBundleFiles, type BuiltBundle } from '../bundle/build.js';
import { readSigningKey, signBundleDir } from '../bundle/sign.js';
import { checkOutput, prepareOutput, writeBundleAtomically } from '../bundle/write.js';
import { openDatabase, defaultDatabaseDir } from '../db/store.js';
import { quoteForMessage, userError } from '../errors.js';
import { lowerToLayers, summarise } from '../ir/lower.js';
import { int8LayersOf, int8Summary, refuseUncompilableQuantized, tuneInt8Families, type Int8Summary } from './int8-families.js';
import type { Int8LayerFamily } from '../tune/int8-tune.js';
import { formatBytes, minimumMemory } from '../ir/memory.js';
import type { LayerGraph } from '../ir/layer.js';
import { compilerVersion } from '../toolchain/compiler.js';
import { powersUpTo } from '../space/knobs.js';
import { detectTarget, targetNotes } from '../toolchain/target.js';
import { vectorWidths } from '../toolchain/isa.js';
import { assertRunnable } from '../runtime/preflight.js';
import { tasksOf, tuneWorkloads, type LevelRegret, type TransferSummary, type TunePhases, type TuneResult } from '../tune/tune-model.js';
import { resolveCompileOptions, type CompileOptions, type ResolvedCompileOptions } from './options.js';
import { inferSource, modelSource, type ModelInput, type ModelSource } from './model-source.js';
import { buildSparseFamily, loadCalibration, planSparse, type SparseSummary } from './sparse-family.js';

/** What a compile did: `veltair compile --json` prints these fields but `notes`, `db`, `uniqueWorkloads`, `tunedWorkloads` and `bytes`. */
export interface CompileResult {
  /** Absolute path of the bundle written; null with `shard` (no bundle). */
  readonly bundle: string | null;
  readonly layers: number;
  readonly tunableLayers: number;
  /** Versions kept per layer → how many layers kept that many. */
  readonly versionsHistogram: Record<string, number>;
  /** Candidates measured by this compile. */
  readonly measured: number;
  /** Candidates taken from the tuning database instead. */
  readonly dbHits: number;
  /** Of `measured`, the candidates a racing search dropped after its short level-0 round (tune/race.ts). */
  readonly raced: number;
  readonly tuningSeconds: number;
  /** Where the tuning seconds went, by phase (tune-model.ts, TunePhases). */
  readonly tuningPhases: TunePhases;
  /** The chosen family's regret against the best version, per interference level. */
  readonly perLevelRegret: Record<string, LevelRegret>;
  /** How each workload started: exact records, seeds transferred from the nearest other targets, or nothing. */
  readonly transfer: TransferSummary;
  /** Key id of the signing key (`sign`), else absent. */
  readonly signedBy?: string;
  /** The large output layer's sparse family (sparse-family.ts), when the model has one. */
  readonly sparse?: SparseSummary;
  /** INT8 layers (qconv2d / qmatmul), when the model has them: how many, their families' sizes, candidates timed and failed. */
  readonly int8?: Int8Summary;
  /** Warnings and notes, in order (also given to `onNote` as they happen). */
  readonly notes: readonly string[];
  /** The tuning database directory used. */
  readonly db: string;
  /** Unique workloads of the tunable layers. */
  readonly uniqueWorkloads: number;
  /** Workloads tuned by this compile (with `shard`: this shard's). */
  readonly tunedWorkloads: number;
  /** Total bytes of the bundle's files; null with `shard`. */
  readonly bytes: number | null;
}

/**
 * Refuse, before any tuning, a model whose one inference cannot fit in this machine's memory: every
 * candidate would fail to allocate its buffers and the layer end as "no working version".
 */
export function checkFitsInMemory(modelPath: string, graph: LayerGraph, memoryBytes = totalmem()): void {
  const need = minimumMemory(graph);
  if (need.bytes <= memoryBytes) return;
  const input = need.largestInput;
  const inputText = input
    ? `input ${quoteForMessage(input.name)} [${input.shape.join(', ')}] ${input.dtype} alone is ${formatBytes(input.bytes)}; `
    : '';
  const layerText = need.layer
    ? `layer ${need.layer.index} (${need.layer.op} ${quoteForMessage(need.layer.name)}) holds `
    : 'running it needs ';
  throw userError(
    'TOO_LARGE',
    `${modelPath}: ${inputText}${layerText}${formatBytes(need.bytes)} at once (its inputs and output), more than this machine's ` +
      `${formatBytes(memoryBytes)} of memory`,
    'compile it with smaller input shapes (--input-shape NAME=1x3x224x224), or on a machine with more memory',
  );
}

const signingKeyOf = (sign: string | KeyObject | undefined): KeyObject | undefined =>
  sign === undefined ? undefined : typeof sign === 'string' ? readSigningKey(sign) : sign;

/**
 * Compile an ONNX model (a path to an .onnx file, or its bytes) into a bundle of Pareto kernel
 * families at `options.output`, or, with `options.shard`, tune one shard into the database only.
 * Errors are {@link VeltairError}s with a code and a hint, thrown before any tuning where the
 * options or the model are at fault.
 */
export async function compileModel(model: ModelInput, options: CompileOptions): Promise<CompileResult> {
  const o = resolveCompileOptions(options);
  const notes: string[] = [];
  const say = (m: string) => {
    notes.push(m);
    o.onNote?.(m);
  };
  if (!o.shard) await checkOutput(o.output!, o.force);
  const signingKey = signingKeyOf(o.sign);
  await compilerVersion();

  const source = modelSource(model);
  const inferred = inferSource(source, o.inputShapes);
  const sparsePlan = planSparse(lowerToLayers(inferred), o);
  if (!sparsePlan.split && (options.sparsities !== undefined || o.calibration !== undefined))
    say(`note: no sparse output layer: ${sparsePlan.reason}`);
  // With a sparse head, the tuner compiles the layers before it; the head's family is built after the bundle (sparse-family.ts).
  const graph = sparsePlan.graph;
  refuseUncompilableQuantized(graph);
  const calibration = sparsePlan.split && !o.shard ? await loadCalibration(source, graph, sparsePlan.split, o) : undefined;
  const uses = graph.layers.filter((l) => l.tunable).map((l) => ({ workload: l.workload!, count: 1 }));
  if (uses.length === 0 && int8LayersOf(graph).length === 0) {
    throw userError(
      'BAD_INPUT',
      `${source.path} has no tunable layer (conv, dense or matmul): there is nothing for veltair to compile`,
      'veltair compiles models with convolutions or matrix multiplications',
    );
  }
  checkFitsInMemory(source.path, graph);
  const target = await detectTarget(o.isa);
  for (const guess of await targetNotes()) say(`warning: ${guess}; tuning records and kernels are sized for it`);
  assertRunnable(graph, vectorWidths(target.isa)[0]!, source.path);
  const dbDir = o.db ?? defaultDatabaseDir();
  const db = await openDatabase(dbDir, { target, onWarning: (m) => say(`warning: ${m}`), ...(o.shippedRecords ? {} : { shipped: false }) });
  const profileThreads = o.profileThreads === 'auto' ? powersUpTo(target.cores) : o.profileThreads.filter((t) => t <= target.cores);

  const tune = await tuneWorkloads(uses, {
    trials: o.trials,
    levels: o.levels,
    maxVersions: o.maxVersions,
    seed: o.seed,
    db,
    target,
    profileThreads,
    ...(o.transferTrials !== undefined ? { transferTrials: o.transferTrials } : {}),
    search: o.search,
    minTimeMs: o.windowMs,
    winograd: o.winograd,
    ...(o.threads ? { threads: o.threads } : {}),
    ...(o.shard ? { shard: o.shard } : {}),
    ...(o.onCompileProgress ? { onCompileProgress: o.onCompileProgress } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
  // INT8 layers are timed at one thread count: the widest tuned count that leaves a core free (the session's default)
  const int8Threads = Math.max(1, ...tune.threads.filter((t) => t < target.cores));
  if (o.shard && int8LayersOf(graph).length > 0)
    say('note: a sharded compile tunes FP32 workloads only; INT8 layers are tuned by the final compile');
  const int8 = o.shard
    ? undefined
    : {
        families: await tuneInt8Families(graph, target, {
          trials: o.trials,
          maxVersions: o.maxVersions,
          levels: o.levels,
          threads: int8Threads,
          seed: o.seed,
          minTimeMs: o.windowMs,
          say,
        }),
        threads: int8Threads,
      };
  const written = o.shard
    ? undefined
    : await writeBundle(o, { source, inferred, graph, tune, target, profileThreads, signingKey, sparsePlan, calibration, say, int8 });
  const totals = summarise(graph);
  return {
    bundle: written ? resolve(o.output!) : null,
    layers: totals.layers,
    tunableLayers: totals.tunableLayers,
    versionsHistogram: tune.versionsHistogram,
    measured: tune.measured,
    dbHits: tune.dbHits,
    raced: tune.raced,
    tuningSeconds: Math.round(tune.seconds * 1000) / 1000,
    tuningPhases: tune.phases,
    perLevelRegret: tune.perLevelRegret,
    transfer: tune.transfer,
    ...(written?.signedBy ? { signedBy: written.signedBy } : {}),
    ...(written?.sparse ? { sparse: written.sparse } : {}),
    ...(int8 && int8.families.size > 0 ? { int8: int8Summary(int8.families, int8.threads) } : {}),
    notes,
    db: dbDir,
    uniqueWorkloads: tasksOf(uses).length,
    tunedWorkloads: tune.families.size,
    bytes: written ? written.built.bytes : null,
  };
}

interface Tuned {
  readonly source: ModelSource;
  readonly inferred: ReturnType<typeof inferSource>;
  readonly graph: LayerGraph;
  readonly tune: TuneResult;
  readonly target: Awaited<ReturnType<typeof detectTarget>>;
  readonly profileThreads: readonly number[];
  readonly signingKey: KeyObject | undefined;
  readonly sparsePlan: ReturnType<typeof planSparse>;
  readonly calibration: Awaited<ReturnType<typeof loadCalibration>> | undefined;
  readonly say: (m: string) => void;
  readonly int8: { readonly families: ReadonlyMap<number, Int8LayerFamily>; readonly threads: number } | undefined;
}

/** The bundle, its sparse family and its signature, all in the staging directory, renamed into place together. */
async function writeBundle(
  o: ResolvedCompileOptions,
  t: Tuned,
): Promise<{ built: BuiltBundle; signedBy?: string; sparse?: SparseSummary }> {
  const staging = await prepareOutput(o.output!, o.force);
  let signedBy: string | undefined;
  let sparse: SparseSummary | undefined;
  const built = await writeBundleAtomically(staging, async (dir) => {
    const b = await buildBundleFiles(dir, {
      modelPath: t.source.path,
      model: t.inferred,
      graph: t.graph,
      families: t.tune.families,
      target: t.target,
      ...(t.int8 ? { int8: t.int8 } : {}),
      options: {
        trials: o.trials,
        levels: [...t.tune.levels],
        maxVersions: o.maxVersions,
        threads: [...t.tune.threads],
        profileThreads: [...t.profileThreads],
        seed: o.seed,
      },
    });
    if (t.sparsePlan.split && t.calibration) {
      const family = await buildSparseFamily(dir, {
        model: t.source,
        split: t.sparsePlan.split,
        args: o,
        threads: 1,
        graph: t.graph,
        calibration: t.calibration,
        levels: t.tune.levels,
      });
      sparse = family.summary;
      for (const n of family.notes) t.say(`note: ${n}`);
    }
    if (t.signingKey) signedBy = (await signBundleDir(dir, t.signingKey)).keyId;
    return b;
  });
  for (const n of built.notes) t.say(`note: ${n}`);
  return { built, ...(signedBy ? { signedBy } : {}), ...(sparse ? { sparse } : {}) };
}
