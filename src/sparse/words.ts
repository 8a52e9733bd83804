/**
 * A real extreme-classification data set that nobody on this team wrote, built offline from the
 * English text Debian packages install: predict a word from the bag of words around it.
 *
 * Where the text comes from: every regular file under the roots (default /usr/share/doc, the info
 * manuals in /usr/share/info and the English man-page sections /usr/share/man/man1…man9),
 * gzip-decompressed when named *.gz, binary
 * files skipped, roff markup stripped from man pages. Files are read in sorted path order.
 * Cleaning: lower-cased words [a-z]+('[a-z]+)?; a line whose word sequence already appeared
 * earlier in the corpus is dropped (licence texts, changelog boilerplate), so repeated text does
 * not leak between train and test.
 * The cut, deterministic: a document (file) is a test document when the first byte of the sha256
 * of its path is below 26 (≈ 10%); all other documents train. Vocabularies come from the training
 * documents only: a class is a word seen ≥ minClassCount (5) times (most frequent first, at most
 * maxClasses), a feature any word seen ≥ 3 times.
 * A sample: a position whose word is a class, its label that class, its features the bag of the
 * feature-words within `window` positions on each side (value = count). Frequent words are
 * subsampled (kept with probability min(1, sqrt(10 / count)), as word2vec does, so the classes are
 * not all "the"), then positions are kept at one uniform rate so the train and test files hold at
 * most maxTrain / maxTest samples; every keep decision is a hash of (document, position).
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { userError } from '../errors.js';
import { lineChunks, writeFileAtomic, writeTextAtomic } from '../atomic-file.js';

export const DEFAULT_WORD_ROOTS = [
  '/usr/share/doc',
  '/usr/share/info',
  ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((s) => `/usr/share/man/man${s}`),
];
export const WORDS_DEFAULTS = { minClassCount: 5, maxClasses: 100000, window: 4, maxTrain: 200000, maxTest: 10000 };
const FEATURE_MIN_COUNT = 3;
const SUBSAMPLE = 10;
const TEST_BYTE = 26;
const MAX_FILE_BYTES = 64 << 20;

export interface WordsOptions {
  readonly roots: readonly string[];
  readonly outDir: string;
  readonly minClassCount: number;
  readonly maxClasses: number;
  readonly window: number;
  readonly maxTrain: number;
  readonly maxTest: number;
  readonly hidden: number;
  readonly onProgress?: (m: string) => void;
}

export interface WordsSummary {
  readonly roots: readonly string[];
  readonly files: number;
  readonly skippedFiles: number;
  readonly testDocuments: number;
  readonly tokens: number;
  readonly droppedDuplicateLines: number;
  readonly classes: number;
  readonly features: number;
  readonly trainSamples: number;
  readonly testSamples: number;
  readonly corpusSha256: string;
  readonly seconds: number;
}

async function listFiles(root: string, out: string[]): Promise<void> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return;
  }
  for (const n of names.sort()) {
    const p = join(root, n);
    const st = await lstat(p).catch(() => undefined);
    if (!st || st.isSymbolicLink()) continue;
    if (st.isDirectory()) await listFiles(p, out);
    else if (st.isFile() && st.size > 0 && st.size <= MAX_FILE_BYTES) out.push(p);
  }
}

const ROFF_ESCAPES = /\\(?:f(?:\[[^\]]*\]|\(..|.)|\*(?:\[[^\]]*\]|\(..|.)|\(..|\[[^\]]*\]|s[+-]?\d+|.)/g;

/** Man-page source to plain text: macro names and escapes go, their text stays. */
export function stripRoff(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (/^[.'][ \t]*\\"/.test(line)) return '';
      const body = /^[.']/.test(line) ? line.replace(/^[.'][ \t]*\S*[ \t]*/, '') : line;
      return body.replace(ROFF_ESCAPES, ' ');
    })
    .join('\n');
}

const WORD = /[a-z]+(?:'[a-z]+)?/g;

/** 53-bit FNV-style hash of a string (line dedupe; collisions only drop a line). */
function hash53(s: string): number {
  let h1 = 0x811c9dc5,
    h2 = 0x01000193;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  return (h2 >>> 11) * 4294967296 + (h1 >>> 0);
}

/** Uniform in [0, 1) from (document, position, salt). */
function unit(doc: number, pos: number, salt: number): number {
  let h = Math.imul(doc ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(pos + salt * 0x27d4eb2f, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

class IntStream {
  data = new Int32Array(1 << 20);
  length = 0;
  push(x: number) {
    if (this.length === this.data.length) {
      const d = new Int32Array(this.data.length * 2);
      d.set(this.data);
      this.data = d;
    }
    this.data[this.length++] = x;
  }
}

export async function buildWordsDataset(o: WordsOptions): Promise<WordsSummary> {
  const t0 = performance.now();
  const files: string[] = [];
  for (const r of o.roots) await listFiles(r, files);
  if (files.length === 0)
    throw userError(
      'FILE_NOT_FOUND',
      `no readable files under ${o.roots.join(', ')}`,
      'pass --root DIR with text files (default: Debian documentation and man pages)',
    );
  const ids = new Map<string, number>();
  const words: string[] = [];
  const tokens = new IntStream();
  const docStart: number[] = [],
    docTest: boolean[] = [];
  const seenLines = new Set<number>();
  const corpus = createHash('sha256');
  let skipped = 0,
    dropped = 0;
  for (const [k, path] of files.entries()) {
    if (o.onProgress && k % 2000 === 0)
      o.onProgress(`veltair data words: reading ${k}/${files.length} files, ${tokens.length} words so far`);
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
      if (path.endsWith('.gz')) bytes = gunzipSync(bytes);
    } catch {
      skipped++;
      continue;
    }
    if (bytes.subarray(0, 8192).includes(0)) {
      skipped++;
      continue;
    }
    corpus.update(path).update('\0').update(createHash('sha256').update(bytes).digest());
    let text = bytes.toString('utf8').toLowerCase();
    if (/\/man\d?\//.test(path) || /^(\.|'\\")/.test(text)) text = stripRoff(text);
    docStart.push(tokens.length);
    docTest.push(createHash('sha256').update(path).digest()[0]! < TEST_BYTE);
    for (const line of text.split('\n')) {
      const ws = line.match(WORD);
      if (!ws) continue;
      const key = hash53(ws.join(' '));
      if (seenLines.has(key)) {
        dropped++;
        continue;
      }
      seenLines.add(key);
      for (const w of ws) {
        let id = ids.get(w);
        if (id === undefined) {
          id = words.length;
          ids.set(w, id);
          words.push(w);
        }
        tokens.push(id);
      }
    }
  }
  docStart.push(tokens.length);
  seenLines.clear();
  const docs = docStart.length - 1;
  // Vocabularies from the training documents.
  const counts = new Float64Array(words.length);
  for (let d = 0; d < docs; d++) if (!docTest[d]) for (let i = docStart[d]!; i < docStart[d + 1]!; i++) counts[tokens.data[i]!]!++;
  const byCount = [...words.keys()]
    .filter((w) => counts[w]! > 0)
    .sort((a, b) => counts[b]! - counts[a]! || (words[a]! < words[b]! ? -1 : 1));
  const classOf = new Int32Array(words.length).fill(-1);
  const featureOf = new Int32Array(words.length).fill(-1);
  const classWords: string[] = [],
    featureWords: string[] = [];
  for (const w of byCount) {
    if (counts[w]! >= o.minClassCount && classWords.length < o.maxClasses) {
      classOf[w] = classWords.length;
      classWords.push(words[w]!);
    }
    if (counts[w]! >= FEATURE_MIN_COUNT) {
      featureOf[w] = featureWords.length;
      featureWords.push(words[w]!);
    }
  }
  if (classWords.length === 0)
    throw userError(
      'BAD_DATA',
      `no word occurs ${o.minClassCount} times in the training documents`,
      'add text with --root, or lower --min-count',
    );
  const keepFrequent = (w: number) => Math.min(1, Math.sqrt(SUBSAMPLE / counts[w]!));
  // Expected samples per split, for the uniform rate that caps them.
  const expected = [0, 0];
  for (let d = 0; d < docs; d++) {
    for (let i = docStart[d]!; i < docStart[d + 1]!; i++) {
      const w = tokens.data[i]!;
      if (classOf[w]! >= 0) expected[docTest[d] ? 1 : 0]! += keepFrequent(w);
    }
  }
  const rate = [Math.min(1, o.maxTrain / Math.max(1, expected[0]!)), Math.min(1, o.maxTest / Math.max(1, expected[1]!))];
  const lines: [string[], string[]] = [[], []];
  for (let d = 0; d < docs; d++) {
    const split = docTest[d] ? 1 : 0;
    const a = docStart[d]!,
      b = docStart[d + 1]!;
    for (let i = a; i < b; i++) {
      const w = tokens.data[i]!;
      const c = classOf[w]!;
      if (c < 0 || lines[split].length >= (split ? o.maxTest : o.maxTrain)) continue;
      if (unit(d, i - a, 1) >= keepFrequent(w) * rate[split]!) continue;
      const bag = new Map<number, number>();
      for (let j = Math.max(a, i - o.window); j < Math.min(b, i + o.window + 1); j++) {
        const f = j === i ? -1 : featureOf[tokens.data[j]!]!;
        if (f >= 0) bag.set(f, (bag.get(f) ?? 0) + 1);
      }
      if (bag.size === 0) continue;
      lines[split].push(
        `${c} ${[...bag]
          .sort((x, y) => x[0] - y[0])
          .map(([f, v]) => `${f}:${v}`)
          .join(' ')}`,
      );
    }
  }
  for (const [split, name] of [
    [0, 'train.txt'],
    [1, 'test.txt'],
  ] as const) {
    await writeFileAtomic(
      join(o.outDir, name),
      lineChunks(`${lines[split].length} ${featureWords.length} ${classWords.length}`, lines[split]),
    );
  }
  await writeTextAtomic(join(o.outDir, 'classes.txt'), classWords.join('\n') + '\n');
  await writeTextAtomic(join(o.outDir, 'features.txt'), featureWords.join('\n') + '\n');
  await writeTextAtomic(
    join(o.outDir, 'spec.json'),
    JSON.stringify(
      {
        input: featureWords.length,
        layers: [
          { dim: o.hidden, activation: 'relu' },
          { dim: classWords.length, activation: 'softmax' },
        ],
      },
      null,
      2,
    ) + '\n',
  );
  const summary: WordsSummary = {
    roots: o.roots,
    files: files.length - skipped,
    skippedFiles: skipped,
    testDocuments: docTest.filter(Boolean).length,
    tokens: tokens.length,
    droppedDuplicateLines: dropped,
    classes: classWords.length,
    features: featureWords.length,
    trainSamples: lines[0].length,
    testSamples: lines[1].length,
    corpusSha256: corpus.digest('hex'),
    seconds: (performance.now() - t0) / 1000,
  };
  await writeTextAtomic(
    join(o.outDir, 'dataset.json'),
    JSON.stringify(
      {
        kind: 'words',
        ...summary,
        method: {
          task: 'predict the middle word from the bag of feature-words within the window',
          window: o.window,
          split: `document is test when sha256(path)[0] < ${TEST_BYTE} (about ${((TEST_BYTE / 256) * 100).toFixed(0)}%)`,
          classes: `training-document words with count >= ${o.minClassCount}, most frequent first, at most ${o.maxClasses}`,
          features: `training-document words with count >= ${FEATURE_MIN_COUNT}`,
          subsampling:
            `keep a position with probability min(1, sqrt(${SUBSAMPLE}/count)) x a uniform rate ` +
            `(train ${rate[0]!.toFixed(4)}, test ${rate[1]!.toFixed(4)})`,
          dedupe: 'a line whose word sequence appeared earlier (sorted path order) is dropped',
        },
      },
      null,
      2,
    ) + '\n',
  );
  return summary;
}
