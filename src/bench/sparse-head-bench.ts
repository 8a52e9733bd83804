/**
 * Sparse output layers against dense: `node dist/src/bench/sparse-head-bench.js [--only trained,words,wordnet,debian-packages,generated]
 *   [--classes 500000] [--rounds 15] [--tables 64] [--keep DIR]`, under the benchmark lock:
 *   flock -x "$BENCH_LOCK" node dist/src/bench/sparse-head-bench.js
 * Models, each compiled by compileModel (the library `veltair compile` calls) into a bundle with a
 * sparse family, then timed here, one input per call, on one pinned core:
 *  - trained: `veltair data planted` (20 000 labels) → `veltair train` (3 epochs) → compile with the
 *    trained index, calibrated on the training run's held-out data;
 *  - words: the same from `veltair data words` (the training issue's real set, built from Debian's
 *    English text: about 56 000 classes), 3 epochs on 2 threads; only with --only words;
 *  - wordnet, debian-packages: the real sets of `veltair data wordnet|debian-packages` (3 / 2 epochs on
 *    2 threads). Their test file is split by row parity: the even rows are the compile's calibration
 *    set (which ranks the always list and chooses each version's share of it), the odd rows are
 *    held out: every recall and precision in their tables is measured on the held-out rows, and the
 *    timed inputs are held-out rows. Each sparse version is also shown with its buckets alone
 *    (always 0: the head before the always list), on the same tables;
 *  - generated: 500 000 random Gaussian class vectors of 128 dims behind an identity layer, queries a
 *    class vector plus noise (label: that class), index built at compile time (--sparse-tables).
 * Per round every version and ONNX Runtime (the same layer as Gemm + TopK, one thread) run one pass
 * over 64 inputs, interleaved; speed-ups are paired per round (median, min–max). Recall and
 * precision are the compile's measurements on its calibration set (head.json), except for the
 * held-out sets above.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import * as ort from 'onnxruntime-node';
import { compileModel } from '../compile/compile-model.js';
import type { CompileOptions } from '../compile/options.js';
import { encodeModel } from '../onnx/encode.js';
import { loadModel } from '../onnx/load.js';
import { seededRng } from '../random.js';
import { readXc } from '../sparse/xc-reader.js';
import { readHead, type HeadMeta, type HeadVersion } from '../sparse-head/format.js';
import { createNativeHead, loadSparseHeadAddon } from '../sparse-head/addon.js';
import type { SparseHeadAddon } from '../sparse-head/native-head.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';
import { pinSelf } from './train-veltair.js';

const BIN = resolve('bin/veltair');
const ROWS = 64;

async function veltair(args: readonly string[], log: (m: string) => void): Promise<void> {
  log(`veltair ${args.join(' ')}`);
  const r = await execa(process.execPath, [BIN, ...args], { reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0) throw new Error(`veltair ${args[0]} failed: ${r.stderr}`);
}

/** A small quiet-level compile (compileModel) replacing `out`; `extra` adds the sparse family's options. */
async function compile(model: string, out: string, db: string, log: (m: string) => void, extra: CompileOptions = {}): Promise<void> {
  log(`compileModel ${model} -> ${out}`);
  await compileModel(model, {
    output: out,
    trials: 2,
    levels: [0],
    threads: [1],
    profileThreads: [],
    db,
    force: true,
    onNote: log,
    ...extra,
  });
}

/** Held-out rows of a trained set: the head's inputs (rows × d) and their labels. */
interface HeldOut {
  readonly hidden: Float32Array;
  readonly rows: number;
  readonly labels: readonly (readonly number[])[];
}

interface Prepared {
  readonly name: string;
  readonly bundle: string;
  readonly hidden: Float32Array;
  readonly note: string;
  readonly heldOut?: HeldOut;
}

interface TrainedSource {
  readonly key: string;
  readonly name: string;
  /** `veltair data …` arguments before `-o DIR`. */
  readonly data: readonly string[];
  readonly epochs: number;
  readonly threads: number;
  /** Split test.txt: even rows calibrate the compile, odd rows are held out for every figure. */
  readonly holdOut?: boolean;
}

const TRAINED: Record<string, TrainedSource> = {
  trained: {
    key: 'trained',
    name: 'trained (planted, 20k labels)',
    epochs: 3,
    threads: 1,
    data: ['data', 'planted', '--labels', '20000', '--features', '5000', '--train', '40000', '--test', '2000'],
  },
  // The training issue's real set (src/sparse/words.ts): the words around a word in Debian's English text, predicting it.
  words: {
    key: 'words',
    name: 'words (Debian text)',
    epochs: 3,
    threads: 2,
    data: ['data', 'words', '--max-train', '100000', '--max-test', '10000'],
  },
  // The real sets of the training issue (src/sparse/wordnet.ts, debian-packages.ts), epochs as in its parity runs.
  wordnet: { key: 'wordnet', name: 'wordnet (WordNet hypernyms)', epochs: 3, threads: 2, holdOut: true, data: ['data', 'wordnet'] },
  'debian-packages': {
    key: 'debian-packages',
    name: 'debian-packages (package dependencies)',
    epochs: 2,
    threads: 2,
    holdOut: true,
    data: ['data', 'debian-packages'],
  },
};

const REAL_SPARSITIES = [1, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005];

/** test.txt's rows split by parity into calibration.txt (even) and heldout.txt (odd), each with its own header. */
async function splitTest(data: string): Promise<{ calibration: string; heldOut: string; rows: number }> {
  const lines = (await readFile(join(data, 'test.txt'), 'utf8')).split('\n').filter((l) => l.trim() !== '');
  const header = lines[0]!.split(' ');
  const body = /^\d+ \d+ \d+$/.test(lines[0]!) ? lines.slice(1) : lines;
  const parts = [body.filter((_, i) => i % 2 === 0), body.filter((_, i) => i % 2 === 1)];
  const [calibration, heldOut] = ['calibration.txt', 'heldout.txt'].map((f) => join(data, f));
  await writeFile(calibration!, [`${parts[0]!.length} ${header[1]} ${header[2]}`, ...parts[0]!].join('\n') + '\n');
  await writeFile(heldOut!, [`${parts[1]!.length} ${header[1]} ${header[2]}`, ...parts[1]!].join('\n') + '\n');
  return { calibration: calibration!, heldOut: heldOut!, rows: parts[0]!.length };
}

async function trained(work: string, src: TrainedSource, log: (m: string) => void): Promise<Prepared> {
  const data = join(work, src.key);
  const run = join(work, `${src.key}-run`);
  // A --keep directory that already holds this set's trained model is reused (its data and run as they are).
  if (existsSync(join(run, 'model.onnx')) && existsSync(join(data, 'test.txt'))) log(`reusing ${run}`);
  else await trainSet(src, data, run, log);
  return compiled(work, src, data, run, log);
}

async function trainSet(src: TrainedSource, data: string, run: string, log: (m: string) => void): Promise<void> {
  await veltair([...src.data, '-o', data], log);
  await veltair(
    [
      'train',
      join(data, 'spec.json'),
      join(data, 'train.txt'),
      '--eval',
      join(data, 'test.txt'),
      '-o',
      run,
      '--epochs',
      String(src.epochs),
      '--threads',
      String(src.threads),
    ],
    log,
  );
}

async function compiled(work: string, src: TrainedSource, data: string, run: string, log: (m: string) => void): Promise<Prepared> {
  const bundle = join(work, `${src.key}.bundle`);
  const split = src.holdOut ? await splitTest(data) : undefined;
  await compile(
    join(run, 'model.onnx'),
    bundle,
    join(work, 'db'),
    log,
    split ? { calibration: split.calibration, calibrationRows: split.rows, sparsities: REAL_SPARSITIES } : {},
  );
  // The head's inputs: relu(x·W0 + b0) of held-out rows, from the exported first layer.
  const m = await loadModel(join(run, 'model.onnx'), { inputShapes: new Map() });
  const w0 = m.model.graph.initializers.get('layers.0.weight')!,
    b0 = m.model.graph.initializers.get('layers.0.bias')!;
  const [inDim, d] = w0.dims as [number, number];
  const classes = m.model.graph.initializers.get('layers.1.bias')!.dims[0]!;
  const test = await readXc(split?.heldOut ?? join(data, 'test.txt'), { inputDim: inDim, outputDim: classes });
  const rows = split ? test.rows : ROWS;
  const hidden = new Float32Array(rows * d);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < d; o++) {
      let s = (b0.data as Float32Array)[o]!;
      for (let p = test.row[r]!; p < test.row[r + 1]!; p++) s += test.val[p]! * (w0.data as Float32Array)[test.idx[p]! * d + o]!;
      hidden[r * d + o] = Math.max(0, s);
    }
  }
  const labels = Array.from({ length: rows }, (_, r) => Array.from(test.labels.subarray(test.lrow[r]!, test.lrow[r + 1]!)));
  const trainNote = `veltair train (${src.epochs} epochs, ${src.threads} thread(s)) on \`veltair ${src.data.join(' ')}\``;
  if (!split) return { name: src.name, bundle, hidden, note: `${trainNote}; timed on its first ${ROWS} held-out rows` };
  return {
    name: src.name,
    bundle,
    hidden: hidden.subarray(0, ROWS * d),
    heldOut: { hidden, rows, labels },
    note:
      `${trainNote}; test.txt split by row parity: ${split.rows} calibration rows (even), ${rows} held-out rows (odd); ` +
      `recall and precision on all held-out rows, timed on the first ${ROWS} of them`,
  };
}

function gaussian(rng: ReturnType<typeof seededRng>): number {
  const u = Math.max(rng.next(), 1e-12),
    v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

async function generated(work: string, classes: number, tables: number, log: (m: string) => void): Promise<Prepared> {
  const d = 128;
  const rng = seededRng(11);
  const w = new Float32Array(classes * d);
  for (let i = 0; i < w.length; i++) w[i] = gaussian(rng) / Math.sqrt(d);
  const eye = new Float32Array(d * d);
  for (let i = 0; i < d; i++) eye[i * d + i] = 1;
  const model = join(work, 'generated.onnx');
  await writeFile(
    model,
    encodeModel({
      inputs: [{ name: 'features', dtype: 'float32', shape: [1, d] }],
      outputs: [{ name: 'scores', dtype: 'float32', shape: [1, classes] }],
      initializers: [
        ['eye', { dtype: 'float32', dims: [d, d], data: eye }],
        ['classes', { dtype: 'float32', dims: [classes, d], data: w }],
        ['bias', { dtype: 'float32', dims: [classes], data: new Float32Array(classes) }],
      ],
      nodes: [
        { op: 'Gemm', inputs: ['features', 'eye'], outputs: ['h'] },
        { op: 'Gemm', inputs: ['h', 'classes', 'bias'], outputs: ['logits'], attrs: { transB: 1 } },
        { op: 'Softmax', inputs: ['logits'], outputs: ['scores'], attrs: { axis: 1 } },
      ],
    }),
  );
  const query = (c: number) => Array.from({ length: d }, (_, j) => w[c * d + j]! + (0.5 * gaussian(rng)) / Math.sqrt(d));
  const lines = ['300 128 ' + classes];
  const hidden = new Float32Array(ROWS * d);
  for (let r = 0; r < 300; r++) {
    const c = Math.floor(rng.next() * classes);
    const q = query(c);
    if (r < ROWS) hidden.set(q, r * d);
    lines.push(`${c} ${q.map((v, j) => `${j}:${v.toPrecision(6)}`).join(' ')}`);
  }
  const calibration = join(work, 'generated-calibration.txt');
  await writeFile(calibration, lines.join('\n') + '\n');
  const bundle = join(work, 'generated.bundle');
  await compile(model, bundle, join(work, 'db'), log, { calibration, sparsities: [1, 0.01, 0.005, 0.002], sparseTables: tables });
  return {
    name: `generated (${classes} classes)`,
    bundle,
    hidden,
    note: `Gaussian class vectors, queries = class + noise; --sparse-tables ${tables}`,
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
};

interface Row {
  readonly label: string;
  readonly scored: string;
  readonly ms: number;
  readonly vsDense: string;
  readonly vsOrt: string;
  readonly r1: string;
  readonly r5: string;
  readonly p1: string;
}

/** One timed configuration of the head: a version, or a version with its buckets alone (always 0). */
interface Arm {
  readonly label: string;
  readonly budget: number;
  readonly always: number;
  readonly tables: number;
  readonly version: HeadVersion;
}

interface HeldOutAccuracy {
  readonly r1: number;
  readonly r5: number;
  readonly p1: number;
  readonly scored: number;
}

/** Recall against veltair dense and precision against the labels, on every held-out row; also the sparse scores' dense check. */
function heldOutAccuracy(
  addon: SparseHeadAddon,
  head: object,
  h: HeldOut,
  kk: number,
  dense: { values: Float32Array; indices: Int32Array },
  arm: Arm,
): HeldOutAccuracy {
  const got = arm.budget === 0 ? dense : addon.headTopK(head, h.hidden, h.rows, kk, arm.budget, arm.always, arm.tables);
  let hit1 = 0,
    hit5 = 0,
    right = 0;
  for (let r = 0; r < h.rows; r++) {
    const base = r * kk;
    const want = new Map<number, number>();
    for (let j = 0; j < 5; j++) want.set(dense.indices[base + j]!, dense.values[base + j]!);
    for (let j = 0; j < 5; j++) {
      const id = got.indices[base + j]!,
        v = want.get(id);
      if (v !== undefined && !Object.is(v, got.values[base + j]!))
        throw new Error(`${arm.label}: neuron ${id} scored ${got.values[base + j]}, dense ${v}`);
      if (v !== undefined) hit5++;
    }
    if (got.indices[base] === dense.indices[base]) hit1++;
    if (h.labels[r]!.includes(got.indices[base]!)) right++;
  }
  return {
    r1: hit1 / h.rows,
    r5: hit5 / (5 * h.rows),
    p1: right / h.rows,
    scored: arm.budget === 0 ? 0 : (got as { scored: number }).scored / h.rows,
  };
}

async function measure(p: Prepared, rounds: number): Promise<{ rows: Row[]; meta: HeadMeta; ortCheck: string }> {
  const { meta, arrays } = await readHead(p.bundle);
  const addon = await loadSparseHeadAddon();
  const native = createNativeHead(addon, meta.hash, meta.layer.n, meta.layer.d, arrays);
  const { n, d, k } = meta.layer;
  // ONNX Runtime: the same layer (weights as stored, transB) and its top-k, one thread.
  const bytes = encodeModel({
    inputs: [{ name: 'h', dtype: 'float32', shape: [1, d] }],
    outputs: [
      { name: 'values', dtype: 'float32', shape: [1, k] },
      { name: 'indices', dtype: 'int64', shape: [1, k] },
    ],
    initializers: [
      ['w', { dtype: 'float32', dims: [n, d], data: arrays.weight }],
      ['b', { dtype: 'float32', dims: [n], data: arrays.bias }],
      ['k', { dtype: 'int64', dims: [1], data: Int32Array.from([k]) }],
    ],
    nodes: [
      { op: 'Gemm', inputs: ['h', 'w', 'b'], outputs: ['z'], attrs: { transB: 1 } },
      { op: 'TopK', inputs: ['z', 'k'], outputs: ['values', 'indices'] },
    ],
  });
  const session = await ort.InferenceSession.create(bytes, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const inputs = Array.from({ length: ROWS }, (_, r) => p.hidden.subarray(r * d, (r + 1) * d));
  // Held-out sets show every measured version (the kept ones marked) and each sparse one with its buckets alone.
  const all = [...meta.versions].sort((a, b) => b.sparsity - a.sparsity);
  const versions = p.heldOut ? all : all.filter((v) => v.kept);
  const arms: Arm[] = versions.flatMap((v) => {
    const own = {
      label:
        `veltair ${v.id}${v.sparsity === 1 ? ' (dense)' : ''}${p.heldOut && v.kept ? ' (kept)' : ''}` +
        (v.always || v.tables ? `, ${v.always} listed + ${v.always && v.always >= v.budget ? 0 : (v.tables ?? meta.hash.L)} tables` : ''),
      budget: v.budget,
      always: v.always ?? 0,
      tables: v.tables ?? 0,
      version: v,
    };
    const alone = { label: `veltair ${v.id}, buckets only (${meta.hash.L} tables)`, budget: v.budget, always: 0, tables: 0, version: v };
    return p.heldOut && (v.always || v.tables) ? [own, alone] : [own];
  });
  const passArm = (a: Arm) => {
    const t0 = performance.now();
    for (const x of inputs) addon.headTopK(native, x, 1, k, a.budget, a.always, a.tables);
    return (performance.now() - t0) / ROWS;
  };
  const passOrt = async () => {
    const t0 = performance.now();
    for (const x of inputs) await session.run({ h: new ort.Tensor('float32', x, [1, d]) });
    return (performance.now() - t0) / ROWS;
  };
  let ortCheck = '';
  const kk = Math.max(k, 5);
  let held: HeldOutAccuracy[] | undefined,
    ortP1 = '';
  if (p.heldOut) {
    const h = p.heldOut;
    const dense = addon.headTopK(native, h.hidden, h.rows, kk, 0, 0, 0);
    held = arms.map((a) => heldOutAccuracy(addon, native, h, kk, dense, a));
    // ONNX Runtime's answers on every held-out row against veltair dense: the top-1 ids, and precision@1.
    let same = 0,
      right = 0;
    for (let r = 0; r < h.rows; r++) {
      const out = await session.run({ h: new ort.Tensor('float32', h.hidden.subarray(r * d, (r + 1) * d), [1, d]) });
      const top = Number((out['indices']!.data as BigInt64Array)[0]!);
      if (top === dense.indices[r * kk]) same++;
      if (h.labels[r]!.includes(top)) right++;
    }
    ortP1 = (right / h.rows).toFixed(3);
    ortCheck = `ONNX Runtime's top-1 equals veltair dense's on ${same} of ${h.rows} held-out rows.`;
  }
  const times = arms.map(() => [] as number[]);
  const ortTimes: number[] = [];
  arms.forEach(passArm);
  await passOrt();
  for (let r = 0; r < rounds; r++) {
    arms.forEach((a, i) => times[i]!.push(passArm(a)));
    ortTimes.push(await passOrt());
  }
  await session.release();
  const pct = (x: number | null) => (x === null ? '-' : x.toFixed(3));
  const ratio = (num: readonly number[], den: readonly number[]) => {
    const rs = num.map((a, i) => a / den[i]!);
    return `${median(rs).toFixed(2)}× (${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)})`;
  };
  const rows: Row[] = arms.map((a, i) => ({
    label: a.label,
    scored: String(Math.round(held ? (a.budget === 0 ? n : held[i]!.scored) : a.version.scoredMean)),
    ms: median(times[i]!),
    vsDense: i === 0 ? '1' : ratio(times[0]!, times[i]!),
    vsOrt: ratio(ortTimes, times[i]!),
    r1: pct(held ? held[i]!.r1 : a.version.recallAt1),
    r5: pct(held ? held[i]!.r5 : a.version.recallAt5),
    p1: pct(held ? held[i]!.p1 : a.version.precisionAt1),
  }));
  rows.push({
    label: 'ONNX Runtime dense (Gemm + TopK, 1 thread)',
    scored: String(n),
    ms: median(ortTimes),
    vsDense: ratio(times[0]!, ortTimes),
    vsOrt: '1',
    r1: '1',
    r5: '1',
    p1: held ? ortP1 : pct(versions[0]!.precisionAt1),
  });
  return { rows, meta, ortCheck };
}

function table(p: Prepared, meta: HeadMeta, rows: readonly Row[], ortCheck: string): string {
  const where = p.heldOut ? 'held-out rows' : 'the calibration set';
  return [
    `### ${p.name}: ${meta.layer.n} classes × ${meta.layer.d} inputs, top-${meta.layer.k}`,
    '',
    `${p.note}. Index: ${meta.index.note}. Calibration: ${meta.calibration.note}.${ortCheck ? ` ${ortCheck}` : ''}`,
    '',
    `| version | neurons scored | ms per input (median) | speed-up vs veltair dense (paired, median (min–max)) | speed-up vs ONNX Runtime dense ` +
      `(paired) | recall@1 (${where}) | recall@5 | precision@1 |`,
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.label} | ${r.scored} | ${r.ms.toFixed(4)} | ${r.vsDense} | ${r.vsOrt} | ${r.r1} | ${r.r5} | ${r.p1} |`),
    '',
    "The ONNX Runtime row's first speed-up column is veltair dense ÷ ONNX Runtime per round (above 1: veltair dense is slower).",
  ].join('\n');
}

export async function sparseHeadBench(o: {
  only: readonly string[];
  classes: number;
  rounds: number;
  tables: number;
  keep?: string;
  log: (m: string) => void;
}): Promise<string> {
  const work = o.keep ?? (await mkdtemp(join(tmpdir(), 'veltair-sparse-bench-')));
  await mkdir(work, { recursive: true });
  try {
    const pinned = await pinSelf([0]);
    const parts = [`Machine: ${machineLine(await machineInfo())}; ${pinned ? 'pinned to core 0' : 'not pinned'}; ${o.rounds} rounds.`, ''];
    for (const which of o.only) {
      const src = TRAINED[which];
      if (!src && which !== 'generated') throw new Error(`--only takes ${[...Object.keys(TRAINED), 'generated'].join(', ')}; not ${which}`);
      const p = src ? await trained(work, src, o.log) : await generated(work, o.classes, o.tables, o.log);
      const { rows, meta, ortCheck } = await measure(p, o.rounds);
      parts.push(table(p, meta, rows, ortCheck), '');
    }
    return parts.join('\n');
  } finally {
    if (!o.keep) await rm(work, { recursive: true, force: true });
  }
}

async function main(argv: readonly string[]): Promise<void> {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const md = await sparseHeadBench({
    only: (arg('--only') ?? 'trained,generated').split(','),
    classes: Number(arg('--classes') ?? 500_000),
    rounds: Number(arg('--rounds') ?? 15),
    tables: Number(arg('--tables') ?? 64),
    ...(arg('--keep') ? { keep: arg('--keep')! } : {}),
    log: (m) => process.stderr.write(`${m}\n`),
  });
  process.stdout.write(md + '\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  });
}
