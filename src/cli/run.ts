/**
 * `veltair run BUNDLE --input NAME=FILE(.npy|.pb) [--input …] [--output-dir DIR] [--level auto|N]
 *  [--threads N] [--trust KEY…] [--json]`: load and verify the bundle (with --trust: only if one
 *  of the keys signed it, checked before any native code loads), read the inputs, run once, write every
 * output as .npy into DIR (default ./outputs, created if missing; each file written to a temp name
 * and renamed, so a reader never sees half an array).
 *
 * Input conversions (the only ones; anything else is a BAD_INPUT naming the file): float64 files
 * for a float32 input are narrowed (numpy's default dtype is float64), int32 files for an int64
 * input are widened. Output file names come from the model, so they are sanitised to
 * [A-Za-z0-9._-] (and made unique) before they touch the file system.
 *
 * --profile FILE.json: after that run, `--profile-runs` (default 10) more with per-step timing,
 * written as a Chrome trace (Perfetto, chrome://tracing; src/profile/trace.ts), and a table of the
 * time by op kind on stderr (stdout stays machine output with --json).
 */
import type { Command } from 'commander';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeFileAtomicSync } from '../atomic-file.js';
import { isVeltairError, userError, quoteForMessage, VeltairError } from '../errors.js';
import { readTrustedKey } from '../bundle/sign.js';
import { loadBundle, type Session } from '../runtime/session.js';
import { decodeNpy, encodeNpy } from '../runtime/io-npy.js';
import { decodePb } from '../runtime/io-pb.js';
import { tensorStats, type HostTensor } from '../runtime/host-tensor.js';
import { orderFeeds, type TensorInfo } from '../runtime/feeds.js';
import { chooseLevel, type LevelChoice } from './run-level.js';
import { chromeTrace, nonKernelShare, profileSession, summaryByKind, type KindRow } from '../profile/trace.js';
import { median } from '../stats.js';
import { badArgument, parsePositiveInt } from '../terminal/args.js';
import { formatTable, note, printJson, printLine } from '../terminal/output.js';

interface RunFlags {
  input?: string[];
  outputDir?: string;
  level?: string;
  threads?: string;
  trust?: string[];
  profile?: string;
  profileRuns?: string;
  minRecall?: string;
  json?: boolean;
}

export interface RunSummary {
  readonly outputs: { name: string; shape: number[]; dtype: string; path: string }[];
  readonly level: number;
  readonly latencyMs: number;
  /** With --trust: the key id whose signature was verified. */
  readonly signedBy?: string;
  /** A sparse output layer's version that answered, and its calibrated recall@1 against dense. */
  readonly sparseVersion?: { readonly id: string; readonly recallAt1: number };
  /** With --profile: the trace file, profiled runs, median run (ms), time by op kind, share outside kernels. */
  readonly profile?: {
    readonly path: string;
    readonly runs: number;
    readonly medianRunMs: number;
    readonly nonKernelShare: number;
    readonly byKind: readonly KindRow[];
  };
}

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** NAME=FILE pairs (a bare FILE is allowed when the model has exactly one input). */
export function parseInputFlags(values: readonly string[], inputs: readonly TensorInfo[]): Map<string, string> {
  if (values.length === 0) {
    throw userError(
      'BAD_ARGUMENT',
      `veltair run needs --input NAME=FILE for each model input (${inputs.map((i) => quoteForMessage(i.name)).join(', ')})`,
      'e.g. --input input=x.npy (.npy or ONNX TensorProto .pb)',
    );
  }
  const out = new Map<string, string>();
  for (const v of values) {
    const eq = v.indexOf('=');
    let name: string, file: string;
    if (eq > 0) {
      name = v.slice(0, eq);
      file = v.slice(eq + 1);
    } else if (inputs.length === 1 && eq < 0) {
      name = inputs[0]!.name;
      file = v;
    } else
      throw userError(
        'BAD_ARGUMENT',
        `--input ${quoteForMessage(v)} is not NAME=FILE`,
        `the model's inputs are ${inputs.map((i) => quoteForMessage(i.name)).join(', ')}`,
      );
    if (file === '') throw userError('BAD_ARGUMENT', `--input ${quoteForMessage(v)} names no file`, 'e.g. --input input=x.npy');
    if (out.has(name)) throw userError('BAD_ARGUMENT', `input ${quoteForMessage(name)} is given twice`, 'pass one --input per model input');
    out.set(name, file);
  }
  return out;
}

/** Read one input file by its extension. */
export function readInputFile(file: string): HostTensor {
  const ext = extname(file).toLowerCase();
  if (ext !== '.npy' && ext !== '.pb') {
    throw userError(
      'BAD_INPUT',
      `${file}: inputs must be .npy or ONNX TensorProto .pb files`,
      'save the array with numpy.save (.npy) or onnx.numpy_helper (.pb)',
    );
  }
  let bytes: Uint8Array;
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
    bytes = readFileSync(file);
  } catch {
    throw userError('FILE_NOT_FOUND', `input file ${file} does not exist or is not a readable file`, 'check the path given to --input');
  }
  return ext === '.npy' ? decodeNpy(bytes, file) : decodePb(bytes, file);
}

/** The two lossless-enough conversions the CLI allows (see the header comment). */
function conformed(t: HostTensor, want: TensorInfo, file: string, json: boolean): HostTensor {
  if (t.dtype === 'float64' && want.dtype === 'float32') {
    if (!json) note(`note: ${file} is float64; converted to float32 for input ${quoteForMessage(want.name)}`);
    return { dtype: 'float32', shape: t.shape, data: Float32Array.from(t.data as Float64Array) };
  }
  if (t.dtype === 'int32' && want.dtype === 'int64') {
    return { dtype: 'int64', shape: t.shape, data: BigInt64Array.from(t.data as Int32Array, (v) => BigInt(v)) };
  }
  return t;
}

/** A model-supplied output name as a safe, unique file name. */
export function outputFileName(name: string, taken: Set<string>): string {
  const base =
    name
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .replace(/^\.+/, '_')
      .slice(0, 120) || 'output';
  let candidate = `${base}.npy`;
  for (let i = 1; taken.has(candidate.toLowerCase()); i++) candidate = `${base}_${i}.npy`;
  taken.add(candidate.toLowerCase());
  return candidate;
}

function writeAtomically(path: string, bytes: Uint8Array): void {
  writeFileAtomicSync(path, bytes, (p, e) =>
    userError(
      'FILE_UNWRITABLE',
      `cannot write ${p}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      'choose a writable --output-dir',
    ),
  );
}

function prepareOutputDir(dir: string): string {
  const abs = resolve(dir);
  try {
    mkdirSync(abs, { recursive: true });
  } catch (e) {
    throw userError(
      'FILE_UNWRITABLE',
      `cannot create output directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      'choose a writable --output-dir',
    );
  }
  return abs;
}

function readFeeds(session: Session, files: ReadonlyMap<string, string>, json: boolean): Record<string, HostTensor> {
  const byName = new Map(session.inputs.map((i) => [i.name, i]));
  const feeds: Record<string, HostTensor> = {};
  for (const [name, file] of files) {
    const want = byName.get(name);
    if (want === undefined) {
      throw userError(
        'BAD_INPUT',
        `the model has no input ${quoteForMessage(name)} (given as --input ${quoteForMessage(name)}=${file}); ` +
          `its inputs are ${session.inputs.map((i) => `${quoteForMessage(i.name)} (${i.dtype} [${i.shape.join(', ')}])`).join(', ')}`,
        'name each --input after a model input',
      );
    }
    feeds[name] = conformed(readInputFile(file), want, file, json);
  }
  return feeds;
}

const fmt = (x: number) =>
  Number.isNaN(x) ? 'nan' : Math.abs(x) >= 1e5 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : x.toFixed(4);

function summaryText(s: RunSummary, results: Record<string, HostTensor>, choice: LevelChoice): string {
  const rows = s.outputs.map((o) => {
    const st = tensorStats(results[o.name]!.data);
    return [o.name, o.dtype, `[${o.shape.join(', ')}]`, fmt(st.min), fmt(st.max), fmt(st.mean), o.path];
  });
  return [
    formatTable([['output', 'dtype', 'shape', 'min', 'max', 'mean', 'file'], ...rows], new Set([3, 4, 5])),
    `level ${s.level} (${choice.how}); one run took ${s.latencyMs.toFixed(2)} ms`,
    ...(s.signedBy ? [`signature verified: Ed25519 key ${s.signedBy}`] : []),
  ].join('\n');
}

/** --min-recall: a recall@1 floor in [0, 1] for a sparse output layer (runtime/sparse-head.ts). */
function parseRecall(text: string): number {
  const x = Number(text);
  if (text.trim() === '' || !(x >= 0 && x <= 1))
    throw badArgument('--min-recall', text, 'is not a recall between 0 and 1', 'e.g. --min-recall 0.95');
  return x;
}

async function runAction(bundlePath: string, f: RunFlags): Promise<void> {
  const json = f.json === true;
  const threads = f.threads === undefined ? undefined : parsePositiveInt('--threads', f.threads, 4096);
  const levelFlag = parseLevelFlag(f.level ?? '0');
  const trustedKeys = f.trust?.map((k) => readTrustedKey(k));
  const minRecall = f.minRecall === undefined ? undefined : parseRecall(f.minRecall);
  const session = await loadBundle(bundlePath, {
    ...(threads === undefined ? {} : { threads }),
    ...(trustedKeys ? { trustedKeys } : {}),
    ...(minRecall === undefined ? {} : { sparse: { minRecallAt1: minRecall } }),
  });
  try {
    if (!json) for (const w of session.warnings) note(`warning: ${w}`);
    const files = parseInputFlags(f.input ?? [], session.inputs);
    const feeds = readFeeds(session, files, json);
    try {
      orderFeeds(session.inputs, feeds); // refuse bad feeds before anything is created on disk
    } catch (e) {
      throw withInputFiles(e, files);
    }
    const outDir = prepareOutputDir(f.outputDir ?? 'outputs');
    const choice = await chooseLevel(session, levelFlag, feeds);
    if (!json && choice.note) note(`note: ${choice.note}`);
    let results: Record<string, HostTensor>;
    const t0 = performance.now();
    try {
      results = session.runSync(feeds);
    } catch (e) {
      throw withInputFiles(e, files);
    }
    const latencyMs = performance.now() - t0;
    const taken = new Set<string>();
    const outputs = session.outputs.map((o) => {
      const path = join(outDir, outputFileName(o.name, taken));
      writeAtomically(path, encodeNpy(results[o.name]!));
      return { name: o.name, shape: [...o.shape], dtype: o.dtype as string, path };
    });
    const profile =
      f.profile === undefined
        ? undefined
        : writeProfile(
            session,
            feeds,
            f.profile,
            f.profileRuns === undefined ? 10 : parsePositiveInt('--profile-runs', f.profileRuns, 100_000),
            { bundle: bundlePath, threads: threads ?? null, level: choice.level },
          );
    const head = session.sparse;
    const summary: RunSummary = {
      outputs,
      level: choice.level,
      latencyMs: Math.round(latencyMs * 1000) / 1000,
      ...(head ? { sparseVersion: { id: head.versions[head.current]!.id, recallAt1: head.versions[head.current]!.recallAt1 } } : {}),
      ...(session.signedBy ? { signedBy: session.signedBy } : {}),
      ...(profile ? { profile } : {}),
    };
    if (json) printJson(summary);
    else printLine(summaryText(summary, results, choice));
  } finally {
    session.close();
  }
}

function writeProfile(
  session: Session,
  feeds: Record<string, HostTensor>,
  file: string,
  runs: number,
  meta: { bundle: string; threads: number | null; level: number },
): NonNullable<RunSummary['profile']> {
  const path = resolve(file);
  if (extname(path).toLowerCase() !== '.json') {
    throw userError(
      'BAD_ARGUMENT',
      `--profile ${quoteForMessage(file)} must name a .json file`,
      'e.g. --profile trace.json (open it in https://ui.perfetto.dev)',
    );
  }
  const p = profileSession(session, feeds, runs);
  const trace = chromeTrace(p, session.manifest, { ...meta, model: session.manifest.model.path });
  writeAtomically(path, new TextEncoder().encode(JSON.stringify(trace) + '\n'));
  const byKind = summaryByKind(p);
  const total = byKind.reduce((t, r) => t + r.ms, 0);
  const rows = byKind.map((r) => [
    r.kind,
    String(r.steps),
    r.ms.toFixed(3),
    `${(r.share * 100).toFixed(1)}%`,
    ((r.ms * 1000) / r.steps).toFixed(1),
  ]);
  const share = nonKernelShare(p);
  note(
    formatTable(
      [['op kind', 'steps', 'ms', 'share', 'µs/step'], ...rows, ['total', String(p.steps.length), total.toFixed(3), '100%', '']],
      new Set([1, 2, 3, 4]),
    ),
  );
  note(
    `profile: ${runs} runs (median step times; median run ${median(p.runsMs).toFixed(3)} ms), ${(share * 100).toFixed(1)}% outside tuned kernels; ` +
      `trace written to ${path}`,
  );
  return { path, runs, medianRunMs: Math.round(median(p.runsMs) * 1000) / 1000, nonKernelShare: Math.round(share * 10000) / 10000, byKind };
}

/** A feed refusal, with the file that input came from. */
function withInputFiles(e: unknown, files: ReadonlyMap<string, string>): unknown {
  if (!isVeltairError(e) || e.code !== 'BAD_INPUT') return e;
  const named = [...files].find(([name]) => e.message.includes(quoteForMessage(name)));
  return named ? new VeltairError(e.code, `${e.message} (read from ${named[1]})`, e.hint, e.exitCode) : e;
}

export function parseLevelFlag(text: string): number | 'auto' {
  if (text === 'auto') return 'auto';
  if (!/^[0-4]$/.test(text.trim())) {
    throw userError(
      'BAD_ARGUMENT',
      `--level ${quoteForMessage(text)} is not auto or an interference level 0 to 4`,
      'e.g. --level 0 (quiet) or --level auto',
    );
  }
  return Number(text);
}

export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('load a bundle (verifying every file), run the model once on the given inputs, write the outputs as .npy')
    .argument('<bundle>', 'bundle directory written by veltair compile')
    .option(
      '--input <name=file>',
      'a model input from a .npy or ONNX TensorProto .pb file (repeatable; NAME= may be left out for a one-input model)',
      collect,
    )
    .option('--output-dir <dir>', 'where to write <output>.npy files (default ./outputs, created if missing)')
    .option(
      '--level <auto|n>',
      'interference level whose best-profiled versions to run: 0 to 4, or auto (the interference proxy) (default 0)',
    )
    .option('--threads <n>', 'run with n threads and the versions tuned for n (default: the widest tuned count leaving a core free)')
    .option(
      '--trust <key>',
      'run only if this Ed25519 public key (veltair keygen PREFIX.pub) signed the bundle (repeatable: any of them)',
      collect,
    )
    .option(
      '--profile <file.json>',
      'also time every step over --profile-runs runs: a Chrome trace (Perfetto) and a table by op kind on stderr',
    )
    .option('--profile-runs <n>', 'profiled runs for --profile (default 10)')
    .option(
      '--min-recall <r>',
      'a sparse output layer runs its fastest version with recall@1 ≥ r against dense (default: its dense version)',
    )
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(runAction);
}
