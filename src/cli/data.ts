/**
 * `veltair data planted -o DIR [--labels N] [--features N] [--train N] [--test N] [--seed N]
 *   [--prototype N] [--noise N] [--zipf A] [--hidden N] [--force] [--json]`
 * `veltair data words -o DIR [--root DIR]… [--classes N] [--min-count N] [--window W]
 *   [--max-train N] [--max-test N] [--force] [--json]`
 * `veltair data wordnet -o DIR [--wordnet-dir DIR] [--seed N] [--test-fraction F] [--min-feature-count N] [--hidden N] [--force] [--json]`
 * `veltair data debian-packages -o DIR [--input FILE] [--seed N] [--test-fraction F] [--min-feature-count N] [--hidden N] [--force] [--json]`
 * Data sets for `veltair train`, in the XC format, each with a matching spec.json and a
 * dataset.json that says how it was made.
 */
import type { Command } from 'commander';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { userError } from '../errors.js';
import { writeTextAtomic } from '../atomic-file.js';
import { PLANTED_DEFAULTS, plantedModel, writePlantedFile, type PlantedOptions } from '../sparse/planted.js';
import { buildWordsDataset, DEFAULT_WORD_ROOTS, WORDS_DEFAULTS } from '../sparse/words.js';
import { buildDebianDataset } from '../sparse/debian-packages.js';
import { buildWordnetDataset, DEFAULT_WORDNET_DIR } from '../sparse/wordnet.js';
import { XC_DEFAULTS } from '../sparse/xc-build.js';
import type { XcBuildSummary } from '../sparse/xc-build.js';
import { note, printJson, printLine } from '../terminal/output.js';

const DATA_FILES = ['train.txt', 'test.txt', 'spec.json', 'dataset.json'];

function int(flag: string, text: string | undefined, fallback: number, min = 1): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > 2 ** 31 - 1) {
    throw userError(
      'BAD_ARGUMENT',
      `${flag} ${JSON.stringify(text)} is not an integer ≥ ${min}`,
      `e.g. ${flag} ${Math.max(min, fallback)}`,
    );
  }
  return Number(text);
}

function num(flag: string, text: string | undefined, fallback: number, lo: number, hi: number): number {
  if (text === undefined) return fallback;
  const x = Number(text);
  if (text.trim() === '' || !(x >= lo && x <= hi))
    throw userError('BAD_ARGUMENT', `${flag} ${JSON.stringify(text)} is not a number in [${lo}, ${hi}]`, `e.g. ${flag} ${fallback}`);
  return x;
}

/** The output directory may be new or empty; files of an earlier data set are replaced only with --force. */
async function prepareDir(dir: string | undefined, force: boolean): Promise<string> {
  if (!dir) throw userError('BAD_ARGUMENT', 'veltair data needs -o DIR', 'e.g. veltair data planted -o data/planted');
  const st = await stat(dir).catch(() => undefined);
  if (st && !st.isDirectory()) throw userError('OUTPUT_EXISTS', `${dir} is a file, not a directory`, 'pass -o DIR naming a directory');
  if (st && !force) {
    const present = (await readdir(dir)).filter((n) => DATA_FILES.includes(n));
    if (present.length)
      throw userError(
        'OUTPUT_EXISTS',
        `${dir} already holds a data set (${present.join(', ')})`,
        'pass --force to replace it, or choose another -o',
      );
  }
  await mkdir(dir, { recursive: true }).catch((e: NodeJS.ErrnoException) => {
    throw userError('FILE_UNWRITABLE', `cannot create ${dir} (${e.code ?? e.message})`, 'choose a directory you can write to');
  });
  return dir;
}

export function trainSpec(input: number, hidden: number, classes: number) {
  return {
    input,
    layers: [
      { dim: hidden, activation: 'relu' },
      { dim: classes, activation: 'softmax' },
    ],
  };
}

interface PlantedFlags {
  output?: string;
  labels?: string;
  features?: string;
  train?: string;
  test?: string;
  seed?: string;
  prototype?: string;
  noise?: string;
  zipf?: string;
  keep?: string;
  hidden?: string;
  force?: boolean;
  json?: boolean;
}

async function planted(f: PlantedFlags): Promise<void> {
  const o: PlantedOptions = {
    labels: int('--labels', f.labels, 10000),
    features: int('--features', f.features, 20000),
    train: int('--train', f.train, 50000),
    test: int('--test', f.test, 5000),
    seed: int('--seed', f.seed, PLANTED_DEFAULTS.seed, 0),
    prototype: int('--prototype', f.prototype, PLANTED_DEFAULTS.prototype),
    noise: int('--noise', f.noise, PLANTED_DEFAULTS.noise, 0),
    zipf: num('--zipf', f.zipf, PLANTED_DEFAULTS.zipf, 0, 4),
    keep: num('--keep', f.keep, PLANTED_DEFAULTS.keep, 0.01, 1),
    maxLabels: PLANTED_DEFAULTS.maxLabels,
  };
  const hidden = int('--hidden', f.hidden, 128);
  const dir = await prepareDir(f.output, f.force === true);
  const t0 = performance.now();
  const m = plantedModel(o);
  await writePlantedFile(m, join(dir, 'train.txt'), o.train, 1);
  await writePlantedFile(m, join(dir, 'test.txt'), o.test, 2);
  const spec = trainSpec(o.features, hidden, o.labels);
  await writeTextAtomic(join(dir, 'spec.json'), JSON.stringify(spec, null, 2) + '\n');
  const info = {
    kind: 'planted',
    options: m.options,
    files: { train: 'train.txt', test: 'test.txt', spec: 'spec.json' },
    seconds: (performance.now() - t0) / 1000,
  };
  await writeTextAtomic(join(dir, 'dataset.json'), JSON.stringify(info, null, 2) + '\n');
  if (f.json) printJson({ dir, ...info });
  else
    printLine(
      `wrote ${o.train} training and ${o.test} test samples (${o.labels} labels, ${o.features} features) to ${dir}; ` +
        `train with: veltair train ${join(dir, 'spec.json')} ${join(dir, 'train.txt')} --eval ${join(dir, 'test.txt')} -o RUN_DIR`,
    );
}

interface WordsFlags {
  output?: string;
  root?: string[];
  classes?: string;
  minCount?: string;
  window?: string;
  maxTrain?: string;
  maxTest?: string;
  hidden?: string;
  force?: boolean;
  json?: boolean;
}

async function words(f: WordsFlags): Promise<void> {
  const dir = await prepareDir(f.output, f.force === true);
  const r = await buildWordsDataset({
    roots: f.root && f.root.length ? f.root : DEFAULT_WORD_ROOTS,
    outDir: dir,
    minClassCount: int('--min-count', f.minCount, WORDS_DEFAULTS.minClassCount),
    maxClasses: int('--classes', f.classes, WORDS_DEFAULTS.maxClasses),
    window: int('--window', f.window, WORDS_DEFAULTS.window),
    maxTrain: int('--max-train', f.maxTrain, WORDS_DEFAULTS.maxTrain),
    maxTest: int('--max-test', f.maxTest, WORDS_DEFAULTS.maxTest),
    hidden: int('--hidden', f.hidden, 128),
    onProgress: f.json || !process.stderr.isTTY ? undefined : note,
  });
  if (f.json) printJson({ dir, ...r });
  else
    printLine(
      `wrote ${r.trainSamples} training and ${r.testSamples} test samples (${r.classes} classes, ${r.features} features) from ${r.files} files ` +
        `(${r.tokens} tokens) to ${dir}; train with: ` +
        `veltair train ${join(dir, 'spec.json')} ${join(dir, 'train.txt')} --eval ${join(dir, 'test.txt')} -o RUN_DIR`,
    );
}

interface RealFlags {
  output?: string;
  wordnetDir?: string;
  input?: string;
  seed?: string;
  testFraction?: string;
  minFeatureCount?: string;
  minLabelCount?: string;
  hidden?: string;
  force?: boolean;
  json?: boolean;
}

function realOptions(f: RealFlags, d: typeof XC_DEFAULTS) {
  return {
    seed: int('--seed', f.seed, d.seed, 0),
    testFraction: num('--test-fraction', f.testFraction, d.testFraction, 0.001, 0.5),
    minFeatureCount: int('--min-feature-count', f.minFeatureCount, d.minFeatureCount),
    minLabelCount: int('--min-label-count', f.minLabelCount, d.minLabelCount),
    hidden: int('--hidden', f.hidden, d.hidden),
  };
}

function printReal(f: RealFlags, dir: string, what: string, r: XcBuildSummary & { sourceSha256: string }): void {
  if (f.json) {
    printJson({ dir, ...r });
    return;
  }
  const pc = (x: number) => `${(100 * x).toFixed(2)}%`;
  printLine(
    `wrote ${r.trainSamples} training and ${r.testSamples} test samples (${r.labels} labels, ${r.features} features) from ${what} ` +
      `(sha256 ${r.sourceSha256.slice(0, 16)}…) to ${dir}; labels seen once ${r.profile.count1}, 2–4 ${r.profile.count2to4}, ` +
      `5–19 ${r.profile.count5to19}, ≥20 ${r.profile.count20up} (max ${r.profile.maxCount}); ` +
      `floor (most frequent labels) P@1 ${pc(r.floor['precision@1'])}, P@5 ${pc(r.floor['precision@5'])}; train with: ` +
      `veltair train ${join(dir, 'spec.json')} ${join(dir, 'train.txt')} --eval ${join(dir, 'test.txt')} -o RUN_DIR`,
  );
}

async function wordnet(f: RealFlags): Promise<void> {
  const o = realOptions(f, XC_DEFAULTS);
  const dir = await prepareDir(f.output, f.force === true);
  const r = await buildWordnetDataset({ ...o, dir: f.wordnetDir ?? DEFAULT_WORDNET_DIR, outDir: dir });
  printReal(f, dir, `${r.synsets} WordNet synsets`, r);
}

async function debianPackages(f: RealFlags): Promise<void> {
  const o = realOptions(f, XC_DEFAULTS);
  const dir = await prepareDir(f.output, f.force === true);
  const r = await buildDebianDataset({ ...o, input: f.input, outDir: dir });
  printReal(f, dir, `${r.packages} package stanzas of ${f.input ?? 'apt-cache dumpavail'}`, r);
}

function realFlags(c: Command, d: typeof XC_DEFAULTS): Command {
  return c
    .option('-o, --output <dir>', 'output directory (train.txt, test.txt, spec.json, dataset.json, classes.txt, features.txt)')
    .option('--seed <n>', `seed of the train/test cut (default ${d.seed})`)
    .option('--test-fraction <f>', `share of samples held out for test (default ${d.testFraction})`)
    .option('--min-feature-count <n>', `a feature occurs in at least N training samples (default ${d.minFeatureCount})`)
    .option('--min-label-count <n>', `a label occurs in at least N training samples (default ${d.minLabelCount})`)
    .option('--hidden <n>', `hidden width of the spec.json written beside the data (default ${d.hidden})`)
    .option('--force', 'replace an earlier data set in the directory')
    .option('--json', 'machine-readable summary on stdout');
}

export function registerDataCommand(program: Command): void {
  const data = program.command('data').description('make XC-format data sets for veltair train');
  data
    .command('planted')
    .description('synthetic data with planted structure: sparse label prototypes, Zipfian label frequencies, 1–3 labels per sample')
    .option('-o, --output <dir>', 'output directory (train.txt, test.txt, spec.json, dataset.json)')
    .option('--labels <n>', 'classes (default 10000)')
    .option('--features <n>', 'input features (default 20000)')
    .option('--train <n>', 'training samples (default 50000)')
    .option('--test <n>', 'test samples (default 5000)')
    .option('--seed <n>', `seed (default ${PLANTED_DEFAULTS.seed})`)
    .option('--prototype <n>', `features per label prototype (default ${PLANTED_DEFAULTS.prototype})`)
    .option('--keep <p>', `probability a prototype feature appears in a sample (default ${PLANTED_DEFAULTS.keep})`)
    .option('--noise <n>', `random features per sample (default ${PLANTED_DEFAULTS.noise})`)
    .option('--zipf <a>', `Zipf exponent of the label frequencies (default ${PLANTED_DEFAULTS.zipf})`)
    .option('--hidden <n>', 'hidden width of the spec.json written beside the data (default 128)')
    .option('--force', 'replace an earlier data set in the directory')
    .option('--json', 'machine-readable summary on stdout')
    .action((flags: PlantedFlags) => planted(flags));
  data
    .command('words')
    .description('middle-word prediction from the bag of surrounding words, over the English text Debian packages install')
    .option('-o, --output <dir>', 'output directory (train.txt, test.txt, spec.json, dataset.json, classes.txt, features.txt)')
    .option(
      '--root <dir>',
      `a directory of text to read (repeatable; default ${DEFAULT_WORD_ROOTS.join(', ')})`,
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--classes <n>', `most classes to keep (default ${WORDS_DEFAULTS.maxClasses})`)
    .option(
      '--min-count <n>',
      `a word is a class when it occurs at least N times in the training documents (default ${WORDS_DEFAULTS.minClassCount})`,
    )
    .option('--window <w>', `context words on each side (default ${WORDS_DEFAULTS.window})`)
    .option('--max-train <n>', `training samples (default ${WORDS_DEFAULTS.maxTrain})`)
    .option('--max-test <n>', `test samples (default ${WORDS_DEFAULTS.maxTest})`)
    .option('--hidden <n>', 'hidden width of the spec.json written beside the data (default 128)')
    .option('--force', 'replace an earlier data set in the directory')
    .option('--json', 'machine-readable summary on stdout')
    .action((flags: WordsFlags) => words(flags));
  realFlags(
    data
      .command('wordnet')
      .description('WordNet noun and verb synsets (Debian package wordnet-base): gloss and lemma words → hypernym synsets'),
    XC_DEFAULTS,
  )
    .option('--wordnet-dir <dir>', `directory of WordNet's data.noun and data.verb (default ${DEFAULT_WORDNET_DIR})`)
    .action((flags: RealFlags) => wordnet(flags));
  realFlags(
    data
      .command('debian-packages')
      .description('Debian packages (apt-cache dumpavail): short-description words, section and debtags → the packages each depends on'),
    XC_DEFAULTS,
  )
    .option('--input <file>', 'read deb822 package stanzas from FILE instead of `apt-cache dumpavail`')
    .action((flags: RealFlags) => debianPackages(flags));
}
