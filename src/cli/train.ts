/**
 * `veltair train SPEC.json TRAIN.txt [--eval TEST.txt] -o OUT_DIR [--epochs N] [--batch N] [--lr X]
 *  [--threads N] [--seed N] [--hash simhash|dwta] [--aln] [--K k] [--L l] [--R r] [--sparsity s]
 *  [--eval-sparsity s] [--eval-mode dense|sparse|both] [--rehash-every N] [--rebuild-every N]
 *  [--resume] [--json]`
 * BOLT-style sparse training (src/sparse/). Everything is checked — flags, spec, memory, output
 * directory, then both data files in full — before the first batch runs.
 */
import type { Command } from 'commander';
import { availableParallelism } from 'node:os';
import { stat } from 'node:fs/promises';
import { userError } from '../errors.js';
import { describeLayer, HASH_FAMILIES, resolveLayers, type HashFamily } from '../sparse/layers.js';
import { checkMemory, trainingMemory } from '../sparse/memory.js';
import { checkResume, prepareOutput, runTraining, type EpochRecord, type EvalMode } from '../sparse/run.js';
import { defaultTableRefresh } from '../sparse/table-refresh.js';
import { readNetworkSpec } from '../sparse/spec.js';
import { TRAIN_DEFAULTS, type TrainSettings } from '../sparse/trainer.js';
import { readXc } from '../sparse/xc-reader.js';
import { note, printLine, progressBar } from '../terminal/output.js';

interface TrainFlags {
  eval?: string;
  output?: string;
  epochs?: string;
  batch?: string;
  lr?: string;
  threads?: string;
  seed?: string;
  hash?: string;
  aln?: boolean;
  K?: string;
  L?: string;
  R?: string;
  sparsity?: string;
  evalSparsity?: string;
  evalMode?: string;
  rehashEvery?: string;
  rebuildEvery?: string;
  resume?: boolean;
  json?: boolean;
}

function int(flag: string, text: string, min: number, max = 2 ** 31 - 1): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw userError(
      'BAD_ARGUMENT',
      `${flag} ${JSON.stringify(text)} is not an integer from ${min} to ${max}`,
      `e.g. ${flag} ${Math.max(min, 4)}`,
    );
  }
  return Number(text);
}

function positive(flag: string, text: string): number {
  const x = Number(text);
  if (text.trim() === '' || !Number.isFinite(x) || x <= 0)
    throw userError('BAD_ARGUMENT', `${flag} ${JSON.stringify(text)} is not a positive number`, `e.g. ${flag} 0.001`);
  return x;
}

export function parseSparsity(flag: string, text: string): number {
  const x = Number(text);
  if (text.trim() === '' || !Number.isFinite(x) || x <= 0 || x > 1) {
    throw userError(
      'BAD_ARGUMENT',
      `${flag} ${JSON.stringify(text)} is outside (0, 1]`,
      `the sparsity is the fraction of neurons computed per input, e.g. ${flag} 0.02`,
    );
  }
  return x;
}

function fixed(x: number | null, d = 4): string {
  return x === null ? '-' : x.toFixed(d);
}

function humanEpoch(r: EpochRecord, epochs: number): string {
  const sparse = r.sparse
    ? `; sparse@${r.sparse.sparsity}: P@1 ${fixed(r.sparse['precision@1'])} P@5 ${fixed(r.sparse['precision@5'])}`
    : '';
  const lsh = r.lsh
    ? `; lsh: ${r.lsh.meanCandidates.toFixed(0)} candidates, ${r.lsh.meanFilled.toFixed(0)} filled, ${r.lsh.meanActive.toFixed(0)} active per query`
    : '';
  return (
    `epoch ${r.epoch}/${epochs}: loss ${r.loss.toFixed(4)}, P@1 ${fixed(r['precision@1'])} P@5 ${fixed(r['precision@5'])}${sparse}, ` +
    `${r.epochSeconds.toFixed(2)} s (${r.samplesPerSecond.toFixed(0)} samples/s, ${r.threads} threads), eval ${r.evalSeconds.toFixed(2)} s${lsh}`
  );
}

async function fileBytes(path: string | undefined): Promise<number> {
  return path ? (await stat(path).catch(() => ({ size: 0 }))).size : 0;
}

export async function trainCommand(specPath: string, trainPath: string, f: TrainFlags): Promise<void> {
  if (!f.output) throw userError('BAD_ARGUMENT', 'veltair train needs -o OUT_DIR', 'e.g. veltair train spec.json train.txt -o runs/first');
  const explicit = new Set<string>();
  const given = <T>(key: string, text: string | undefined, parse: (t: string) => T, fallback: T): T => {
    if (text === undefined) return fallback;
    explicit.add(key);
    return parse(text);
  };
  const epochs = given('epochs', f.epochs, (t) => int('--epochs', t, 1, 100000), TRAIN_DEFAULTS.epochs);
  const batch = given('batch', f.batch, (t) => int('--batch', t, 1, 1 << 20), TRAIN_DEFAULTS.batch);
  const lr = given('lr', f.lr, (t) => positive('--lr', t), TRAIN_DEFAULTS.lr);
  const threads = given('threads', f.threads, (t) => int('--threads', t, 1, 1024), availableParallelism());
  const seed = given('seed', f.seed, (t) => int('--seed', t, 0, 2 ** 32 - 1), TRAIN_DEFAULTS.seed);
  const hash = given(
    'hash',
    f.hash,
    (t) => {
      if (!(HASH_FAMILIES as readonly string[]).includes(t))
        throw userError('BAD_ARGUMENT', `--hash ${JSON.stringify(t)} is not a hash family`, `use one of ${HASH_FAMILIES.join(', ')}`);
      return t as HashFamily;
    },
    TRAIN_DEFAULTS.hash,
  );
  if (f.aln) explicit.add('aln');
  const K = f.K === undefined ? undefined : int('--K', f.K, 1, 30);
  const L = f.L === undefined ? undefined : int('--L', f.L, 1, 4096);
  const R = f.R === undefined ? undefined : int('--R', f.R, 1, 1 << 20);
  const sparsity = f.sparsity === undefined ? undefined : parseSparsity('--sparsity', f.sparsity);
  const evalSparsity = f.evalSparsity === undefined ? undefined : parseSparsity('--eval-sparsity', f.evalSparsity);
  const evalMode = (f.evalMode ?? 'both') as EvalMode;
  if (!['dense', 'sparse', 'both'].includes(evalMode))
    throw userError('BAD_ARGUMENT', `--eval-mode ${JSON.stringify(f.evalMode)} is not dense, sparse or both`, 'e.g. --eval-mode both');
  const rehashEvery = f.rehashEvery === undefined ? undefined : int('--rehash-every', f.rehashEvery, 0);
  const rebuildEvery = f.rebuildEvery === undefined ? undefined : int('--rebuild-every', f.rebuildEvery, 0);
  if (rehashEvery !== undefined) explicit.add('rehashEvery');
  if (rebuildEvery !== undefined) explicit.add('rebuildEvery');

  const spec = await readNetworkSpec(specPath);
  let layers = resolveLayers(spec, { family: hash, K, L, R, outputSparsity: sparsity });
  checkMemory(trainingMemory(layers, threads), (await fileBytes(trainPath)) + (await fileBytes(f.eval)));
  const resumeFrom = await prepareOutput(f.output, f.resume === true, note);
  const out = spec.layers[spec.layers.length - 1]!;
  const limits = {
    inputDim: spec.input,
    outputDim: out.dim,
    inputName: `${specPath} "input"`,
    outputName: `${specPath} layers[${spec.layers.length - 1}].dim`,
  };
  const train = await readXc(trainPath, limits);
  const evalData = f.eval ? await readXc(f.eval, limits) : undefined;
  const schedule = {
    ...defaultTableRefresh(train.rows, batch),
    ...(rehashEvery !== undefined ? { rehashEvery } : {}),
    ...(rebuildEvery !== undefined ? { rebuildEvery } : {}),
  };
  let settings: TrainSettings = {
    epochs,
    batch,
    lr,
    threads,
    seed,
    hash,
    aln: f.aln === true,
    beta1: TRAIN_DEFAULTS.beta1,
    beta2: TRAIN_DEFAULTS.beta2,
    eps: TRAIN_DEFAULTS.eps,
    schedule,
  };
  if (resumeFrom) {
    const state = resumeFrom.header.state;
    checkResume(state, spec, train, settings, explicit, resumeFrom.path);
    if (K !== undefined || L !== undefined || R !== undefined || sparsity !== undefined) {
      if (JSON.stringify(state.layers) !== JSON.stringify(layers)) {
        throw userError(
          'BAD_ARGUMENT',
          `--K/--L/--R/--sparsity differ from the layers ${resumeFrom.path} was trained with`,
          'a resumed run keeps its layers; drop these flags or start a new run',
        );
      }
    }
    layers = [...state.layers];
    settings = { ...state.settings, epochs, threads };
  }
  for (const l of layers) note(`veltair train: ${describeLayer(l)}`);
  if (train.unlabelled) note(`veltair train: ${train.unlabelled} of ${train.rows} training samples have no labels; they are skipped`);
  if (!evalData) note('veltair train: no --eval file, so precision@k is not measured (null in --json)');
  const bar = progressBar(f.json === true);
  let barEpoch = 0;
  const summary = await runTraining(
    {
      spec,
      layers,
      settings,
      train,
      eval: evalData,
      evalMode,
      evalSparsity,
      outDir: f.output,
      note,
      onBatch: (epoch, done, total) => {
        if (epoch !== barEpoch) {
          bar.stop();
          bar.start(total, `epoch ${epoch}/${settings.epochs}`);
          barEpoch = epoch;
        }
        bar.update(done);
      },
      onEpoch: (r) => {
        bar.stop();
        barEpoch = 0;
        if (f.json) printLine(JSON.stringify(r));
        else printLine(humanEpoch(r, settings.epochs));
      },
    },
    resumeFrom,
  );
  bar.stop();
  note(`veltair train: ${summary.isa} kernels; model ${summary.model}${summary.index ? `, hash index ${summary.index}` : ''}`);
}

export function registerTrainCommand(program: Command): void {
  program
    .command('train')
    .description('train a network with LSH-sampled sparse layers (BOLT) on Extreme Classification data; exports ONNX + hash index')
    .argument(
      '<spec>',
      'network spec JSON, e.g. {"input": 5000, "layers": [{"dim": 128, "activation": "relu"}, {"dim": 2000, "activation": "softmax"}]}',
    )
    .argument('<train>', 'training data, XC format (label,label feat:val …; optional header "samples features labels")')
    .option('--eval <file>', 'evaluation data (same format): precision@1/@5 and recall@5 after every epoch')
    .option('-o, --output <dir>', 'output directory: checkpoints, model.onnx, lsh-index.json/.bin, training.json')
    .option('--epochs <n>', `epochs (default ${TRAIN_DEFAULTS.epochs})`)
    .option('--batch <n>', `samples per Adam step (default ${TRAIN_DEFAULTS.batch})`)
    .option('--lr <x>', `Adam learning rate (default ${TRAIN_DEFAULTS.lr})`)
    .option('--threads <n>', 'HOGWILD threads (default: every available core)')
    .option('--seed <n>', `seed of the initial weights, hash functions and sample order (default ${TRAIN_DEFAULTS.seed})`)
    .option('--hash <family>', `LSH family of the sparse layers: ${HASH_FAMILIES.join(' or ')} (default ${TRAIN_DEFAULTS.hash})`)
    .option('--aln', 'insert a label neuron the tables missed into the buckets its input selected')
    .option('--K <k>', 'hash bits per table of every sparse layer (default: autotuned)')
    .option('--L <l>', 'hash tables of every sparse layer (default: autotuned)')
    .option('--R <r>', 'bucket cap of every sparse layer (default: autotuned, 2·d/2^K)')
    .option('--sparsity <s>', "output layer's sparsity in (0, 1] (default: the spec's, else autotuned from the class count)")
    .option('--eval-sparsity <s>', 'sparsity of sparse evaluation (default: the training sparsity)')
    .option('--eval-mode <mode>', 'dense, sparse or both (default both)')
    .option('--rehash-every <samples>', 'rehash the updated neurons every N training samples (0: never; default: once per epoch)')
    .option('--rebuild-every <samples>', 'rebuild the tables every N training samples (0: only at epoch starts, the default)')
    .option('--resume', 'continue the run in -o from its newest checkpoint')
    .option('--json', 'one JSON object per epoch on stdout, nothing else there')
    .action((specPath: string, trainPath: string, flags: TrainFlags) => trainCommand(specPath, trainPath, flags));
}
