/**
 * `train` for library users: `veltair train`'s BOLT-style sparse training (src/sparse/) of a
 * network spec on Extreme Classification data, into an output directory (checkpoints, model.onnx,
 * the hash index, training.json), which `compileModel` then compiles. The same steps as the
 * command (src/cli/train.ts): spec, layers, memory and output checked, both data files read in
 * full, then the epochs. Starts a new run (the command's --resume is not offered here).
 */
import { availableParallelism } from 'node:os';
import { stat } from 'node:fs/promises';
import { userError } from '../errors.js';
import { HASH_FAMILIES, resolveLayers, type HashFamily } from '../sparse/layers.js';
import { checkMemory, trainingMemory } from '../sparse/memory.js';
import { prepareOutput, runTraining, type EpochRecord, type EvalMode, type RunSummary } from '../sparse/run.js';
import { defaultTableRefresh } from '../sparse/table-refresh.js';
import { checkNetworkSpec, readNetworkSpec, type NetworkSpec } from '../sparse/spec.js';
import { TRAIN_DEFAULTS, type TrainSettings } from '../sparse/trainer.js';
import { readXc } from '../sparse/xc-reader.js';

/** Options of {@link train}; `veltair train`'s arguments and flags, one field each. */
export interface TrainOptions {
  /** The network: a spec JSON file, or the spec itself, e.g. {input: 5000, layers: [{dim: 128, activation: 'relu'}, {dim: 2000, activation: 'softmax'}]}. */
  readonly spec: string | NetworkSpec;
  /** Training data, XC format (`label,label feat:val …`). */
  readonly train: string;
  /** Evaluation data (same format): precision@1/@5 after every epoch. */
  readonly eval?: string;
  /** Output directory: checkpoints, model.onnx, lsh-index.json/.bin, training.json (created if missing). */
  readonly output: string;
  readonly epochs?: number;
  /** Samples per Adam step. */
  readonly batch?: number;
  /** Adam learning rate. */
  readonly lr?: number;
  /** HOGWILD threads (default: every available core). */
  readonly threads?: number;
  /** Seed of the initial weights, hash functions and sample order. */
  readonly seed?: number;
  /** LSH family of the sparse layers ('dwta' default, or 'simhash'). */
  readonly hash?: HashFamily;
  /** Output layer's sparsity in (0, 1] (default: the spec's, else autotuned from the class count). */
  readonly sparsity?: number;
  /** 'dense', 'sparse' or 'both' (default). */
  readonly evalMode?: EvalMode;
  /** After every epoch. */
  readonly onEpoch?: (record: EpochRecord) => void;
  /** Layer descriptions, warnings and notes. */
  readonly onNote?: (message: string) => void;
}

function check(name: string, x: number, ok: boolean, hint: string): number {
  if (!ok) throw userError('BAD_ARGUMENT', `${name} ${JSON.stringify(x)} is out of range`, hint);
  return x;
}

const size = async (path: string | undefined) => (path ? (await stat(path).catch(() => ({ size: 0 }))).size : 0);

/** Train; resolves with where the model and index were written and every epoch's record. */
export async function train(o: TrainOptions): Promise<RunSummary> {
  const int = (name: string, x: number | undefined, fallback: number, max = 2 ** 31 - 1) =>
    check(
      name,
      x ?? fallback,
      Number.isSafeInteger(x ?? fallback) && (x ?? fallback) >= 1 && (x ?? fallback) <= max,
      `${name}: an integer from 1 to ${max}`,
    );
  const epochs = int('epochs', o.epochs, TRAIN_DEFAULTS.epochs, 100000);
  const batch = int('batch', o.batch, TRAIN_DEFAULTS.batch, 1 << 20);
  const threads = int('threads', o.threads, availableParallelism(), 1024);
  const lr = check(
    'lr',
    o.lr ?? TRAIN_DEFAULTS.lr,
    (o.lr ?? TRAIN_DEFAULTS.lr) > 0 && Number.isFinite(o.lr ?? TRAIN_DEFAULTS.lr),
    'e.g. lr: 0.001',
  );
  const seed = o.seed ?? TRAIN_DEFAULTS.seed;
  check('seed', seed, Number.isSafeInteger(seed) && seed >= 0 && seed <= 2 ** 32 - 1, 'seed: an integer from 0 to 2^32-1');
  const hash = o.hash ?? TRAIN_DEFAULTS.hash;
  if (!HASH_FAMILIES.includes(hash)) {
    throw userError('BAD_ARGUMENT', `hash ${JSON.stringify(hash)} is not a hash family`, `use one of ${HASH_FAMILIES.join(', ')}`);
  }
  if (o.sparsity !== undefined) check('sparsity', o.sparsity, o.sparsity > 0 && o.sparsity <= 1, 'a sparsity in (0, 1], e.g. 0.02');
  const evalMode = o.evalMode ?? 'both';
  if (!['dense', 'sparse', 'both'].includes(evalMode))
    throw userError('BAD_ARGUMENT', `evalMode ${JSON.stringify(evalMode)} is not dense, sparse or both`, "e.g. evalMode: 'both'");
  const note = o.onNote ?? (() => undefined);

  const specName = typeof o.spec === 'string' ? o.spec : 'the spec';
  const spec = typeof o.spec === 'string' ? await readNetworkSpec(o.spec) : checkNetworkSpec(o.spec, specName);
  const layers = resolveLayers(spec, { family: hash, ...(o.sparsity !== undefined ? { outputSparsity: o.sparsity } : {}) });
  checkMemory(trainingMemory(layers, threads), (await size(o.train)) + (await size(o.eval)));
  await prepareOutput(o.output, false, note);
  const out = spec.layers[spec.layers.length - 1]!;
  const limits = {
    inputDim: spec.input,
    outputDim: out.dim,
    inputName: `${specName} "input"`,
    outputName: `${specName} layers[${spec.layers.length - 1}].dim`,
  };
  const trainData = await readXc(o.train, limits);
  const evalData = o.eval ? await readXc(o.eval, limits) : undefined;
  const settings: TrainSettings = {
    epochs,
    batch,
    lr,
    threads,
    seed,
    hash,
    aln: false,
    beta1: TRAIN_DEFAULTS.beta1,
    beta2: TRAIN_DEFAULTS.beta2,
    eps: TRAIN_DEFAULTS.eps,
    schedule: defaultTableRefresh(trainData.rows, batch),
  };
  return runTraining(
    {
      spec,
      layers,
      settings,
      train: trainData,
      eval: evalData,
      evalMode,
      outDir: o.output,
      note,
      ...(o.onEpoch ? { onEpoch: o.onEpoch } : {}),
    },
    null,
  );
}
