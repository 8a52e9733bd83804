/**
 * A compile's sparse output layer: the split of the model into the layers the
 * tuner compiles and the head (src/ir/sparse-head.ts), and — inside the staging directory, once the
 * prefix bundle is built — the head's family: its index (the trained one beside the model when it
 * indexes these very weights, else built from them), the calibration inputs run through the
 * staged prefix, every sparsity measured against dense, the frontier kept, and the head's files
 * added to the manifest (hashed like every other file) before the bundle is signed and renamed.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { addFilesToManifest } from '../bundle/extra-files.js';
import { userError } from '../errors.js';
import { findSparseHead, type SparseHeadSplit } from '../ir/sparse-head.js';
import type { LayerGraph } from '../ir/layer.js';
import { loadBundle } from '../runtime/session.js';
import { INDEX_JSON, readHashIndex } from '../sparse/hash-index.js';
import { HEAD_BIN, HEAD_FORMAT, HEAD_JSON, HEAD_VERSION, headWeightsSha256, writeHead, type HeadVersion } from '../sparse-head/format.js';
import { buildHeadIndex, headIndexFromTrained, trainedLayerFor, type HeadIndex } from '../sparse/head-index.js';
import { budgetFor, measureVersions, median, timeBudgets, type Calibration } from '../sparse/head-versions.js';
import { choosePlans, rankAlways } from '../sparse/head-always.js';
import { noiseCores, startNoise } from '../interference/generator.js';
import { availableCores } from '../toolchain/cpu.js';
import { createNativeHead, loadSparseHeadAddon } from '../sparse-head/addon.js';
import type { SparseHeadAddon } from '../sparse-head/native-head.js';
import { calibrationInputs, type CalibrationInputs } from './sparse-calibration.js';
import type { ResolvedCompileOptions } from './options.js';
import type { ModelSource } from './model-source.js';

/** The options the sparse family reads. */
type SparseOptions = Pick<
  ResolvedCompileOptions,
  'sparse' | 'sparseMinOutputs' | 'sparsities' | 'calibration' | 'calibrationRows' | 'topK' | 'sparseHash' | 'sparseTables' | 'seed'
>;

export interface SparsePlan {
  /** What the tuner compiles: the whole graph, or the layers before the head. */
  readonly graph: LayerGraph;
  readonly split: SparseHeadSplit | undefined;
  /** Why no head, when none (shown only when the user asked for one). */
  readonly reason: string | undefined;
}

export function planSparse(graph: LayerGraph, a: SparseOptions): SparsePlan {
  if (!a.sparse) return { graph, split: undefined, reason: '--no-sparse' };
  const search = findSparseHead(graph, a.sparseMinOutputs);
  if ('reason' in search) return { graph, split: undefined, reason: search.reason };
  if (a.topK > search.found.head.n) {
    throw userError('BAD_ARGUMENT', `--top-k ${a.topK} is more than the output layer's ${search.found.head.n} classes`, 'e.g. --top-k 5');
  }
  return { graph: search.found.prefix, split: search.found, reason: undefined };
}

export interface SparseSummary {
  readonly layer: string;
  readonly classes: number;
  readonly index: string;
  readonly calibration: string;
  readonly versions: readonly Pick<
    HeadVersion,
    'id' | 'sparsity' | 'latencyMs' | 'recallAt1' | 'recallAt5' | 'precisionAt1' | 'scoredMean' | 'kept'
  >[];
}

async function chooseIndex(
  model: ModelSource,
  split: SparseHeadSplit,
  args: SparseOptions,
  threads: number,
  notes: string[],
): Promise<HeadIndex> {
  const sparsities = args.sparsities;
  const { weight, bias, n, d } = split.head;
  const sha = headWeightsSha256(weight, bias);
  const dir = model.dir;
  if (dir !== undefined && existsSync(join(dir, INDEX_JSON))) {
    const loaded = await readHashIndex(dir); // a damaged index beside the model is an error, not a silent rebuild
    const layer = trainedLayerFor(loaded, sha, n, d);
    if (layer) return headIndexFromTrained(loaded, layer, weight, bias, join(dir, INDEX_JSON));
    notes.push(
      `${join(dir, INDEX_JSON)} indexes other weights than this model's output layer (sha256 differs): building the index from the weights`,
    );
  }
  const densestSparse = Math.max(...sparsities.filter((s) => s < 1), 0.005);
  return buildHeadIndex(await loadSparseHeadAddon(), weight, bias, n, d, {
    sparsity: densestSparse,
    family: args.sparseHash,
    seed: BigInt(args.seed),
    threads,
    ...(args.sparseTables ? { tables: args.sparseTables } : {}),
  });
}

/** Calibration inputs through the staged prefix: the head's inputs, rows × d. */
async function hiddenRows(dir: string, inputs: Float32Array, rows: number, width: number, split: SparseHeadSplit): Promise<Float32Array> {
  const session = await loadBundle(dir, { threads: 1, read: { skipHashes: true } });
  try {
    const input = session.inputs[0]!;
    const batch = split.head.batch;
    const d = split.head.d;
    const hidden = new Float32Array(rows * d);
    for (let r = 0; r < rows; r += batch) {
      const feed = new Float32Array(batch * width);
      for (let b = 0; b < batch; b++)
        feed.set(inputs.subarray(Math.min(r + b, rows - 1) * width, (Math.min(r + b, rows - 1) + 1) * width), b * width);
      const out = session.runSync({ [input.name]: { dtype: 'float32', shape: input.shape, data: feed } })[split.head.input]!;
      const data = out.data as Float32Array;
      for (let b = 0; b < batch && r + b < rows; b++) hidden.set(data.subarray(b * d, (b + 1) * d), (r + b) * d);
    }
    return hidden;
  } finally {
    session.close();
  }
}

/**
 * Each version's latency at the compile's interference levels above 0, like every kernel's: the
 * co-runner (src/interference) on every core but one, the timing thread pinned to that one. On a
 * one-core machine, or when the co-runner cannot start, the versions keep their quiet figure only
 * (a note says so). The family is chosen on the quiet latency.
 */
async function timeUnderNoise(
  addon: SparseHeadAddon,
  head: object,
  c: Calibration,
  d: number,
  k: number,
  versions: HeadVersion[],
  levels: readonly number[],
  n: number,
  notes: string[],
): Promise<{ versions: HeadVersion[]; levels: number[] }> {
  const noisy = levels.filter((l) => l > 0);
  const cores = availableCores();
  if (noisy.length === 0) return { versions, levels: [0] };
  const core = cores[0]!;
  const others = noiseCores([core], cores);
  if (others.length === 0) {
    notes.push('one core: the sparse versions are timed quiet only');
    return { versions, levels: [0] };
  }
  const budgets = versions.map((v) => budgetFor(v.sparsity, n, k));
  const plans = versions.map((v) => ({ always: v.always ?? 0, tables: v.tables ?? 0 }));
  const byLevel = new Map<number, number[]>();
  for (const level of noisy) {
    let noise;
    try {
      noise = await startNoise({ level, cores: others }); // before pinning: the generator checks its cores against this thread's
    } catch (e) {
      notes.push(`the co-runner for level ${level} did not start (${(e as Error).message}): the sparse versions are not timed at it`);
      continue;
    }
    try {
      if (!addon.pinCallingThread(core)) {
        notes.push(`could not pin the timing thread: the sparse versions are not timed at level ${level}`);
        continue;
      }
      try {
        byLevel.set(level, timeBudgets(addon, head, c, d, k, budgets, plans).map(median));
      } finally {
        addon.pinCallingThread(-1);
      }
    } finally {
      await noise.stop();
    }
  }
  const measured = [0, ...byLevel.keys()].sort((a, b) => a - b);
  return {
    versions: versions.map((v, i) => ({
      ...v,
      latencyMs: Object.fromEntries(measured.map((l) => [String(l), l === 0 ? v.latencyMs['0']! : byLevel.get(l)![i]!])),
    })),
    levels: measured,
  };
}

/** The calibration inputs, read and checked before any tuning (a wrong width fails at once). */
export async function loadCalibration(
  model: ModelSource,
  graph: LayerGraph,
  split: SparseHeadSplit,
  args: SparseOptions,
): Promise<CalibrationInputs> {
  if (graph.inputs.length !== 1) {
    throw userError(
      'BAD_INPUT',
      `${model.path} has ${graph.inputs.length} inputs; a sparse head is compiled for one`,
      'compile it with --no-sparse',
    );
  }
  const width = graph.inputs[0]!.shape.slice(1).reduce((a, b) => a * b, 1);
  return calibrationInputs({
    file: args.calibration,
    modelDir: model.dir,
    width,
    classes: split.head.n,
    rows: args.calibrationRows,
    seed: args.seed,
  });
}

/**
 * The always list and each sparse version's query plan (head-always.ts): share of the list and
 * tables read, chosen by cross-validation on the calibration rows; the list itself ranked from all
 * of them and cut to the longest share used.
 */
function alwaysList(
  addon: SparseHeadAddon,
  index: HeadIndex,
  c: Calibration,
  n: number,
  d: number,
  k: number,
  sparsities: readonly number[],
) {
  const budgets = sparsities.map((s) => budgetFor(s, n, k));
  const kk = Math.max(k, 5);
  const dense = addon.headTopK(createNativeHead(addon, index.hash, n, d, index.arrays), c.hidden, c.rows, kk, 0, 0, 0);
  const make = (list: Uint32Array) => createNativeHead(addon, index.hash, n, d, { ...index.arrays, always: list });
  const choice = choosePlans(addon, make, c.hidden, c.rows, d, dense, kk, budgets, index.hash.L);
  const full = rankAlways(
    dense,
    kk,
    Array.from({ length: c.rows }, (_, r) => r),
  );
  const plans = choice.plans.map((p) => ({ always: Math.min(p.always, full.length), tables: p.tables }));
  const longest = Math.max(0, ...plans.map((p) => p.always));
  const what = (p: { always: number; tables: number }) => `${p.always} listed + ${p.tables || index.hash.L} of ${index.hash.L} tables`;
  return {
    arrays: longest > 0 ? { ...index.arrays, always: full.slice(0, longest) } : index.arrays,
    plans,
    note:
      `query plans (always-scored neurons: the calibration rows' most frequent dense answers; share of each version's budget and ` +
      `tables read chosen by 2-fold cross-validation, recall@1 ${sparsities
        .map((s, i) => `${s}: ${what(plans[i]!)}, ` + `${choice.recallAt1[i]!.toFixed(3)}`)
        .join('; ')}); the recall figures of the versions themselves are measured on the rows the list was ranked from`,
  };
}

/** Build, measure and write the head's family into the staged bundle `dir`; returns the summary and notes. */
export async function buildSparseFamily(
  dir: string,
  o: {
    model: ModelSource;
    split: SparseHeadSplit;
    args: SparseOptions;
    threads: number;
    graph: LayerGraph;
    calibration: CalibrationInputs;
    levels: readonly number[];
  },
): Promise<{ summary: SparseSummary; notes: string[] }> {
  const { split, args } = o;
  const { n, d } = split.head;
  const width = o.graph.inputs[0]!.shape.slice(1).reduce((a, b) => a * b, 1);
  const notes: string[] = [];
  const cal = o.calibration;
  if (cal.source === 'generated') notes.push(cal.note);
  const index = await chooseIndex(o.model, split, args, o.threads, notes);
  const addon = await loadSparseHeadAddon();
  const calibration: Calibration = {
    hidden: await hiddenRows(dir, cal.inputs, cal.rows, width, split),
    rows: cal.rows,
    labels: cal.labels,
  };
  const { arrays, plans, note } = alwaysList(addon, index, calibration, n, d, args.topK, args.sparsities);
  notes.push(note);
  const head = createNativeHead(addon, index.hash, n, d, arrays);
  const quiet = measureVersions(addon, head, calibration, n, d, args.topK, args.sparsities, plans);
  const { versions, levels } = await timeUnderNoise(addon, head, calibration, d, args.topK, quiet, o.levels, n, notes);
  await mkdir(join(dir, 'sparse'), { recursive: true });
  const out = split.head.output;
  await writeHead(
    dir,
    {
      format: HEAD_FORMAT,
      version: HEAD_VERSION,
      layer: {
        index: split.head.layer.index,
        name: split.head.layer.name,
        input: split.head.input,
        output: out,
        activation: split.head.activation,
        n,
        d,
        k: args.topK,
        outputs: { values: `${out}_topk_values`, indices: `${out}_topk_indices` },
      },
      weightsSha256: headWeightsSha256(split.head.weight, split.head.bias),
      hash: index.hash,
      index: index.index,
      calibration: { source: cal.source, path: cal.path, rows: cal.rows, labelled: cal.labels !== null, note: `${cal.note}; ${note}` },
      latencyLevels: levels,
      versions,
    },
    arrays,
  );
  await addFilesToManifest(dir, [HEAD_BIN, HEAD_JSON]);
  return {
    summary: {
      layer: split.head.layer.name,
      classes: n,
      index: index.index.note,
      calibration: cal.note,
      versions: versions.map(({ id, sparsity, latencyMs, recallAt1, recallAt5, precisionAt1, scoredMean, kept }) => ({
        id,
        sparsity,
        latencyMs,
        recallAt1,
        recallAt5,
        precisionAt1,
        scoredMean,
        kept,
      })),
    },
    notes,
  };
}
