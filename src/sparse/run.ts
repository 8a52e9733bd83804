/**
 * `veltair train` end to end, minus the argument parsing: the output directory, resume from the
 * newest intact checkpoint (same spec, same training data, same result-affecting settings), the
 * epoch loop with evaluation and an atomic checkpoint after every epoch, and the export of the
 * trained model (model.onnx, the hash index, training.json).
 *
 * Output directory contract: a directory that already holds a run (checkpoints or a model) is
 * only ever continued with --resume, never overwritten; everything written into it is atomic.
 */
import { readdir, rm, stat, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { userError } from '../errors.js';
import { writeFileAtomic, writeTextAtomic, isTempName } from '../atomic-file.js';
import { listCheckpoints, readLatestCheckpoint, writeCheckpoint, type LoadedCheckpoint } from './checkpoint.js';
import { writeHashIndex } from './hash-index.js';
import type { SparseLayer } from './layers.js';
import type { NetworkSpec } from './spec.js';
import { createTrainer, type EpochTraining, type EvalResult, type TrainSettings, type Trainer } from './trainer.js';
import type { XcDataset } from './xc-reader.js';

export type EvalMode = 'dense' | 'sparse' | 'both';

export interface EpochRecord {
  readonly epoch: number;
  readonly loss: number;
  readonly 'precision@1': number | null;
  readonly 'precision@5': number | null;
  readonly 'recall@5': number | null;
  readonly evalLoss: number | null;
  readonly sparse: {
    readonly sparsity: number;
    readonly 'precision@1': number;
    readonly 'precision@5': number;
    readonly 'recall@5': number;
    readonly meanActive: number;
  } | null;
  readonly epochSeconds: number;
  readonly evalSeconds: number;
  readonly samples: number;
  readonly samplesPerSecond: number;
  readonly threads: number;
  readonly lsh: EpochTraining['lsh'];
  /** Where the epoch's time went (src/sparse/epoch-breakdown.ts). */
  readonly profile?: EpochTraining['profile'];
  readonly checkpoint: string;
}

/** What a checkpoint remembers about the run, to resume it exactly. */
export interface RunState {
  readonly spec: NetworkSpec;
  readonly layers: readonly SparseLayer[];
  readonly settings: TrainSettings;
  readonly train: { readonly path: string; readonly sha256: string; readonly rows: number };
  readonly history: readonly EpochRecord[];
}

export interface RunOptions {
  readonly spec: NetworkSpec;
  readonly layers: readonly SparseLayer[];
  readonly settings: TrainSettings;
  readonly train: XcDataset;
  readonly eval?: XcDataset;
  readonly evalMode: EvalMode;
  readonly evalSparsity?: number;
  readonly outDir: string;
  readonly onEpoch?: (r: EpochRecord) => void;
  readonly onBatch?: (epoch: number, done: number, total: number) => void;
  readonly note?: (m: string) => void;
}

export interface RunSummary {
  readonly outDir: string;
  readonly model: string;
  readonly index: string | null;
  readonly history: readonly EpochRecord[];
  readonly isa: string;
  readonly resumedFrom: number | null;
}

const MODEL_FILE = 'model.onnx';
const SUMMARY_FILE = 'training.json';

/** Settings whose change would make a resumed run differ from an uninterrupted one. */
export const RESULT_SETTINGS = ['batch', 'lr', 'seed', 'hash', 'aln', 'beta1', 'beta2', 'eps', 'schedule'] as const;

/** Check the output directory and load what to resume from (null: start fresh). */
export async function prepareOutput(
  outDir: string,
  resume: boolean,
  note: (m: string) => void,
): Promise<LoadedCheckpoint<RunState> | null> {
  const st = await stat(outDir).catch(() => undefined);
  if (st && !st.isDirectory())
    throw userError(
      'OUTPUT_EXISTS',
      `${outDir} is a file, not an output directory`,
      'pass -o DIR naming a directory (it is created if missing)',
    );
  if (!st) {
    if (resume) note(`veltair train: ${outDir} does not exist; nothing to resume, starting a new run`);
    await mkdir(outDir, { recursive: true }).catch((e: NodeJS.ErrnoException) => {
      throw userError('FILE_UNWRITABLE', `cannot create ${outDir} (${e.code ?? e.message})`, 'choose an output directory you can write to');
    });
    return null;
  }
  const names = await readdir(outDir);
  for (const n of names.filter(isTempName)) {
    const pid = Number(/tmp-(\d+)-/.exec(n)?.[1]);
    if (!pidAlive(pid)) await rm(join(outDir, n), { force: true }); // left by a killed run
  }
  const epochs = await listCheckpoints(outDir);
  if (!resume) {
    if (epochs.length > 0 || names.includes(MODEL_FILE)) {
      throw userError(
        'OUTPUT_EXISTS',
        `${outDir} already holds a training run${epochs.length ? ` (checkpoint of epoch ${epochs[0]})` : ''}`,
        'pass --resume to continue it, or choose another -o directory (a run is never overwritten)',
      );
    }
    return null;
  }
  const loaded = await readLatestCheckpoint<RunState>(outDir, note);
  if (!loaded) note(`veltair train: no checkpoint in ${outDir}; starting from epoch 1`);
  return loaded;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The resumed run's state must match this invocation; `explicit` names the flags the user gave. */
export function checkResume(
  state: RunState,
  spec: NetworkSpec,
  train: XcDataset,
  settings: TrainSettings,
  explicit: ReadonlySet<string>,
  path: string,
): void {
  if (JSON.stringify(state.spec) !== JSON.stringify(spec)) {
    throw userError(
      'BAD_ARGUMENT',
      `the spec differs from the one ${path} was trained with`,
      'resume with the same SPEC.json, or start a new run in another -o directory',
    );
  }
  if (state.train.sha256 !== train.sha256) {
    throw userError(
      'BAD_ARGUMENT',
      `${train.path} is not the training file ${path} was trained on (${state.train.path}, sha256 ${state.train.sha256.slice(0, 12)}…)`,
      'resume with the same TRAIN file, or start a new run in another -o directory',
    );
  }
  for (const k of RESULT_SETTINGS) {
    const flag = k === 'schedule' ? '--rehash-every/--rebuild-every' : `--${k}`;
    const differs = JSON.stringify(state.settings[k]) !== JSON.stringify(settings[k]);
    if (differs && (explicit.has(k) || (k === 'schedule' && (explicit.has('rehashEvery') || explicit.has('rebuildEvery'))))) {
      throw userError(
        'BAD_ARGUMENT',
        `${flag} ${JSON.stringify(settings[k])} differs from the checkpoint's ${JSON.stringify(state.settings[k])}`,
        'a resumed run keeps the settings it started with (only --epochs, --threads and the evaluation flags may change); drop the flag or start a new run',
      );
    }
  }
}

function record(t: EpochTraining, dense: EvalResult | null, sparse: EvalResult | null, threads: number, checkpoint: string): EpochRecord {
  const main = dense ?? sparse;
  return {
    epoch: t.epoch,
    loss: t.loss,
    'precision@1': main ? main['precision@1'] : null,
    'precision@5': main ? main['precision@5'] : null,
    'recall@5': main ? main['recall@5'] : null,
    evalLoss: dense?.loss ?? null,
    sparse:
      sparse && sparse.mode === 'sparse'
        ? {
            sparsity: sparse.sparsity,
            'precision@1': sparse['precision@1'],
            'precision@5': sparse['precision@5'],
            'recall@5': sparse['recall@5'],
            meanActive: sparse.meanActive,
          }
        : null,
    epochSeconds: t.seconds,
    evalSeconds: (dense?.seconds ?? 0) + (sparse?.seconds ?? 0),
    samples: t.samples,
    samplesPerSecond: t.seconds > 0 ? t.samples / t.seconds : 0,
    threads,
    lsh: t.lsh,
    profile: t.profile,
    checkpoint,
  };
}

export async function exportTrained(trainer: Trainer, outDir: string): Promise<{ model: string; index: string | null }> {
  const model = join(outDir, MODEL_FILE);
  const dump = trainer.indexDump();
  await writeFileAtomic(model, [trainer.onnx()]);
  if (dump.length === 0) return { model, index: null };
  const weights = trainer.weights();
  await writeHashIndex(
    outDir,
    MODEL_FILE,
    dump.map((d) => ({ ...d, weights: weights[d.layer.index]! })),
  );
  return { model, index: join(outDir, 'lsh-index.json') };
}

export async function runTraining(o: RunOptions, resumeFrom: LoadedCheckpoint<RunState> | null): Promise<RunSummary> {
  const trainer = await createTrainer(o.layers, o.settings, o.train);
  let history: EpochRecord[] = [];
  if (resumeFrom) {
    trainer.restore(resumeFrom.tensors, resumeFrom.header.epochsDone, resumeFrom.header.adamStep);
    history = [...resumeFrom.header.state.history];
    o.note?.(`veltair train: resuming ${o.outDir} after epoch ${resumeFrom.header.epochsDone}`);
  }
  const evalOne = (mode: 'dense' | 'sparse') =>
    o.eval && (o.evalMode === mode || o.evalMode === 'both') ? trainer.evaluate(o.eval, mode, o.evalSparsity) : null;
  while (trainer.epochsDone() < o.settings.epochs) {
    const epoch = trainer.epochsDone() + 1;
    const t = await trainer.trainEpoch((done, total) => o.onBatch?.(epoch, done, total));
    const dense = evalOne('dense');
    const sparse = o.layers[o.layers.length - 1]!.hash ? evalOne('sparse') : null;
    const state: RunState = {
      spec: o.spec,
      layers: o.layers,
      settings: o.settings,
      train: { path: o.train.path, sha256: o.train.sha256, rows: o.train.rows },
      history,
    };
    const pending = record(t, dense, sparse, o.settings.threads, '');
    const path = await writeCheckpoint(
      o.outDir,
      t.epoch,
      trainer.adamStep(),
      { ...state, history: [...history, { ...pending, checkpoint: '' }] },
      trainer.tensors(),
    );
    const r = { ...pending, checkpoint: path };
    history.push(r);
    o.onEpoch?.(r);
  }
  const { model, index } = await exportTrained(trainer, o.outDir);
  await writeTextAtomic(
    join(o.outDir, SUMMARY_FILE),
    JSON.stringify(
      {
        spec: o.spec,
        layers: o.layers,
        settings: o.settings,
        isa: trainer.isa,
        train: { path: o.train.path, sha256: o.train.sha256, rows: o.train.rows },
        eval: o.eval ? { path: o.eval.path, sha256: o.eval.sha256, rows: o.eval.rows } : null,
        model: MODEL_FILE,
        index: index ? 'lsh-index.json' : null,
        history,
      },
      null,
      2,
    ) + '\n',
  );
  return { outDir: o.outDir, model, index, history, isa: trainer.isa, resumedFrom: resumeFrom?.header.epochsDone ?? null };
}
