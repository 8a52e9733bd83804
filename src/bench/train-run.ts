/**
 * The training section of `npm run bench`, also runnable alone:
 *   node dist/src/bench/train-run.js [--sections compare,grid,threads,sparsity,passes] [--datasets planted,words,wordnet,debian-packages]
 *     [--epochs N] [--grid-epochs N] [--threads N] [--sparsities S,S,…] [--optimizer adam|lazy-adam|dense-adam]
 *     [--frequent-labels N] [--uniform F] [--logq 0|1] [--json-out FILE]
 * (sparsity: the output sparsity sweep, not in the default sections; with no --sparsities, veltair alone at the autotuned one.
 * passes: the per-sample and the neuron-major batch paired, --epochs epochs, not in the default sections.
 * --optimizer, --frequent-labels, --uniform (the output layer's share of uniformly random negatives), --logq (their
 * sampled-softmax correction): the sweep's, for comparison; every other section trains with the defaults.)
 * Run it under the benchmark lock: `flock -x "$BENCH_LOCK" node dist/src/bench/train-run.js`.
 */
import { writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { OPTIMIZER_CODE, type Optimizer } from '../sparse/native.js';
import { benchDataset } from './train-data.js';
import { compareWithTorch, type CompareReport } from './train-compare.js';
import { klrGrid, type GridReport } from './train-grid.js';
import { compareMarkdown, gridMarkdown, threadsMarkdown } from './train-report.js';
import { sparsityMarkdown, sparsitySweep, type SparsityReport } from './train-sparsity.js';
import { threadScaling, type ThreadsReport } from './train-threads.js';
import { passComparison, passesMarkdown, type PassesReport } from './train-passes.js';
import { pinSelf } from './train-veltair.js';

export interface TrainBenchOptions {
  readonly sections: readonly string[];
  readonly datasets: readonly string[];
  readonly epochs: number;
  readonly gridEpochs: number;
  readonly threads: number;
  /** Output sparsities of the sparsity sweep, beside the autotuned one. */
  readonly sparsities?: readonly number[];
  /** The sparsity sweep's optimizer (default adam). */
  readonly optimizer?: Optimizer;
  readonly frequentLabels?: number;
  /** The sparsity sweep's uniformly random negatives (fraction of the active set) and logQ correction (trainer defaults). */
  readonly uniformNegatives?: number;
  readonly logQ?: boolean;
  readonly log: (m: string) => void;
}

export interface TrainBenchResult {
  readonly markdown: string;
  readonly compare: CompareReport[];
  readonly grid: GridReport[];
  readonly threads: ThreadsReport[];
  readonly sparsity: SparsityReport[];
  readonly passes: PassesReport[];
}

export async function runTrainBench(o: TrainBenchOptions): Promise<TrainBenchResult> {
  const cores = Array.from({ length: o.threads }, (_, i) => i);
  const pinned = await pinSelf(cores);
  const out: string[] = [
    `### Sparse training`,
    '',
    `veltair ${pinned ? 'pinned' : 'NOT pinned (no taskset)'} to cores ${cores.join(',')}; PyTorch runs under \`taskset -c ${cores.join(',')}\`.`,
    '',
  ];
  const result: TrainBenchResult = { markdown: '', compare: [], grid: [], threads: [], sparsity: [], passes: [] };
  for (const name of o.datasets) {
    const ds = await benchDataset(name, o.log);
    if (o.sections.includes('compare')) {
      const r = await compareWithTorch(ds, o.epochs, o.threads, cores, o.log);
      result.compare.push(r);
      out.push(compareMarkdown(r));
    }
    if (o.sections.includes('grid')) {
      const g = await klrGrid(ds, o.gridEpochs, o.threads, o.log);
      result.grid.push(g);
      out.push(gridMarkdown(g));
    }
    if (o.sections.includes('threads') && o.threads > 1) {
      const t = await threadScaling(ds, o.threads, 4, o.log);
      result.threads.push(t);
      out.push(threadsMarkdown(t));
    }
    if (o.sections.includes('passes')) {
      const p = await passComparison(ds, o.epochs, o.threads, o.log);
      result.passes.push(p);
      out.push(passesMarkdown(p));
    }
    if (o.sections.includes('sparsity')) {
      const s = await sparsitySweep(ds, o.gridEpochs, o.threads, o.sparsities ?? [], o.log, o.optimizer, o.frequentLabels, {
        ...(o.uniformNegatives === undefined ? {} : { uniformNegatives: o.uniformNegatives }),
        ...(o.logQ === undefined ? {} : { logQ: o.logQ }),
      });
      result.sparsity.push(s);
      out.push(sparsityMarkdown(s));
    }
  }
  return { ...result, markdown: out.join('\n') };
}

function optimizerArg(v: string): Optimizer {
  if (!(v in OPTIMIZER_CODE)) throw new Error(`--optimizer ${JSON.stringify(v)} is not one of ${Object.keys(OPTIMIZER_CODE).join(', ')}`);
  return v as Optimizer;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const USAGE = `usage: node dist/src/bench/train-run.js [--sections compare,grid,threads,sparsity,passes]
  [--datasets planted,words,wordnet,debian-packages] [--epochs N] [--grid-epochs N] [--threads N] [--sparsities S,S,…]
  [--optimizer adam|lazy-adam|dense-adam] [--frequent-labels N] [--uniform F] [--logq 0|1] [--json-out FILE]
A run takes minutes to hours (a PyTorch epoch is minutes): run it under the benchmark lock.`;
const FLAGS = new Set([
  '--sections',
  '--datasets',
  '--epochs',
  '--grid-epochs',
  '--threads',
  '--sparsities',
  '--optimizer',
  '--frequent-labels',
  '--uniform',
  '--logq',
  '--json-out',
]);

/** A flag this script does not know (a typo would otherwise start a long run on the defaults): its name, or undefined. */
export function unknownFlag(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i += 2)
    if (!FLAGS.has(argv[i]!) || argv[i + 1] === undefined || argv[i + 1]!.startsWith('--')) return argv[i];
  return undefined;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const unknown = unknownFlag(argv);
  if (unknown !== undefined) {
    process.stderr.write(`error[BAD_ARGUMENT]: unknown option or missing value near "${unknown}"\n  hint: ${USAGE.split('\n')[0]} …\n`);
    process.exit(1);
  }
  const t0 = Date.now();
  const { machineInfo, machineLine } = await import('../toolchain/machine-info.js');
  const machine = await machineInfo();
  const r = await runTrainBench({
    sections: (arg('--sections') ?? 'compare,grid,threads').split(','),
    datasets: (arg('--datasets') ?? 'planted,words').split(','),
    epochs: Number(arg('--epochs') ?? 3),
    gridEpochs: Number(arg('--grid-epochs') ?? 2),
    threads: Number(arg('--threads') ?? availableParallelism()),
    sparsities: (arg('--sparsities') ?? '')
      .split(',')
      .filter((x) => x !== '')
      .map(Number),
    optimizer: optimizerArg(arg('--optimizer') ?? 'adam'),
    ...(arg('--frequent-labels') === undefined ? {} : { frequentLabels: Number(arg('--frequent-labels')) }),
    ...(arg('--uniform') === undefined ? {} : { uniformNegatives: Number(arg('--uniform')) }),
    ...(arg('--logq') === undefined ? {} : { logQ: arg('--logq') !== '0' }),
    log: (m) => process.stderr.write(`bench train [${((Date.now() - t0) / 1000).toFixed(0)} s]: ${m}\n`),
  });
  const command = `node dist/src/bench/train-run.js${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
  process.stdout.write(
    [
      `### Run of ${machine.dateUtc}`,
      '',
      `- machine: ${machineLine(machine)}`,
      `- command: \`${command}\``,
      '',
      r.markdown,
      `(took ${((Date.now() - t0) / 60000).toFixed(1)} min; load average at the end ${(await machineInfo()).loadAvg.join(' ')})`,
      '',
    ].join('\n') + '\n',
  );
  const jsonOut = arg('--json-out');
  if (jsonOut) await writeFile(jsonOut, JSON.stringify({ machine, command, ...r }, null, 2) + '\n');
}
