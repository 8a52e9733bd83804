/**
 * The `wordnet` data set: WordNet 3.0 as Debian's wordnet-base installs it (/usr/share/wordnet).
 * Each noun and verb synset is a sample: its features the words of its gloss (`w:word`) and the
 * words of its lemmas (`l:word`), its labels its hypernym synsets (pointer `@`) and instance
 * hypernyms (`@i`). Synsets without a hypernym (the roots) carry no label and are dropped.
 *
 * Parsing follows wndb(5), one synset a line:
 *   offset lex_filenum ss_type w_cnt word lex_id … p_cnt [ptr_symbol offset pos source/target]… [frames] | gloss
 * (w_cnt two hex digits, p_cnt three decimal digits, verbs add `f_cnt + f_num w_num …`). Lines that
 * begin with a space are the licence header. Any other line that does not fit is an error naming
 * the file and line: a truncated or foreign file must not turn silently into a smaller data set.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { userError } from '../errors.js';
import { writeXcDataset, type XcBuildSummary, type XcRecord, type XcSplitOptions } from './xc-build.js';

export const DEFAULT_WORDNET_DIR = '/usr/share/wordnet';
export const WORDNET_FILES = [
  ['data.noun', 'n'],
  ['data.verb', 'v'],
] as const;

export interface Synset {
  /** `n00001930`: part of speech and byte offset, WordNet's own synset key. */
  readonly id: string;
  readonly lemmas: readonly string[];
  /** Ids of the hypernym and instance-hypernym synsets. */
  readonly hypernyms: readonly string[];
  readonly gloss: string;
}

const HINT =
  'a WordNet 3.0 data file (wndb(5)): `offset lex_filenum ss_type w_cnt word lex_id … p_cnt pointers… | gloss`; ' +
  'reinstall the package (apt-get install --reinstall wordnet-base) or pass --wordnet-dir DIR';

/** One data-file line to a synset; null for the licence header. Throws BAD_DATA naming file:line. */
export function parseWordnetLine(line: string, file: string, lineNo: number, pos: 'n' | 'v'): Synset | null {
  if (line.startsWith(' ') || line.trim() === '') return null;
  const bad = (why: string) => userError('BAD_DATA', `${file}:${lineNo}: ${why}`, HINT);
  const bar = line.indexOf(' | ');
  if (bar < 0) throw bad('no " | " before the gloss');
  const t = line.slice(0, bar).trim().split(/ +/);
  let k = 0;
  const take = (what: string) => {
    const x = t[k++];
    if (x === undefined) throw bad(`the line ends before ${what}`);
    return x;
  };
  const offset = take('the synset offset');
  if (!/^\d{8}$/.test(offset)) throw bad(`synset offset ${JSON.stringify(offset)} is not 8 digits`);
  if (!/^\d{2}$/.test(take('lex_filenum'))) throw bad('lex_filenum is not 2 digits');
  const ssType = take('ss_type');
  if (ssType !== pos) throw bad(`ss_type ${JSON.stringify(ssType)} in a file of ${pos === 'n' ? 'nouns' : 'verbs'} (expected ${pos})`);
  const wCnt = take('w_cnt');
  if (!/^[0-9a-f]{2}$/i.test(wCnt) || parseInt(wCnt, 16) === 0)
    throw bad(`w_cnt ${JSON.stringify(wCnt)} is not a positive 2-digit hex count`);
  const lemmas: string[] = [];
  for (let w = 0; w < parseInt(wCnt, 16); w++) {
    lemmas.push(take(`word ${w + 1} of ${parseInt(wCnt, 16)}`));
    if (!/^[0-9a-f]$/i.test(take('a lex_id'))) throw bad(`lex_id of ${JSON.stringify(lemmas[w])} is not 1 hex digit`);
  }
  const pCnt = take('p_cnt');
  if (!/^\d{3}$/.test(pCnt)) throw bad(`p_cnt ${JSON.stringify(pCnt)} is not 3 digits`);
  const hypernyms: string[] = [];
  for (let p = 0; p < Number(pCnt); p++) {
    const sym = take(`pointer ${p + 1} of ${Number(pCnt)}`),
      target = take('a pointer offset'),
      tpos = take('a pointer pos'),
      st = take('a source/target');
    if (!/^\d{8}$/.test(target) || !/^[nvasr]$/.test(tpos) || !/^[0-9a-f]{4}$/i.test(st)) {
      throw bad(`pointer ${p + 1} "${sym} ${target} ${tpos} ${st}" is not "symbol offset pos source/target"`);
    }
    if ((sym === '@' || sym === '@i') && tpos === pos) hypernyms.push(`${tpos}${target}`);
  }
  if (pos === 'v' && k < t.length) {
    const fCnt = take('f_cnt');
    if (!/^\d{2}$/.test(fCnt)) throw bad(`f_cnt ${JSON.stringify(fCnt)} is not 2 digits`);
    for (let f = 0; f < Number(fCnt); f++) {
      const plus = take('a frame'),
        fNum = take('f_num'),
        wNum = take('w_num');
      if (plus !== '+' || !/^\d{2}$/.test(fNum) || !/^[0-9a-f]{2}$/i.test(wNum)) throw bad(`frame ${f + 1} is not "+ f_num w_num"`);
    }
  }
  if (k !== t.length) throw bad(`${t.length - k} unexpected fields before the gloss`);
  return { id: `${pos}${offset}`, lemmas, hypernyms: [...new Set(hypernyms)], gloss: line.slice(bar + 3).trim() };
}

export function parseWordnetData(text: string, file: string, pos: 'n' | 'v'): Synset[] {
  const out: Synset[] = [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  lines.forEach((l, i) => {
    const s = parseWordnetLine(l.endsWith('\r') ? l.slice(0, -1) : l, file, i + 1, pos);
    if (s) out.push(s);
  });
  return out;
}

const WORD = /[a-z]+(?:'[a-z]+)?/g;

/** A synset's features: its gloss words and its lemmas' words, each kind in its own namespace. */
export function synsetFeatures(s: Synset): string[] {
  const gloss = s.gloss.toLowerCase().match(WORD) ?? [];
  const lemma = s.lemmas.flatMap((l) => l.toLowerCase().match(WORD) ?? []);
  return [...new Set([...gloss.map((w) => `w:${w}`), ...lemma.map((w) => `l:${w}`)])];
}

export function wordnetRecords(synsets: readonly Synset[]): XcRecord[] {
  return synsets.filter((s) => s.hypernyms.length > 0).map((s) => ({ id: s.id, features: synsetFeatures(s), labels: s.hypernyms }));
}

export interface WordnetOptions extends XcSplitOptions {
  readonly dir: string;
}

export interface WordnetSummary extends XcBuildSummary {
  readonly synsets: number;
  readonly roots: number;
  readonly sourceSha256: string;
  readonly seconds: number;
}

export async function buildWordnetDataset(o: WordnetOptions): Promise<WordnetSummary> {
  const t0 = performance.now();
  const all: Synset[] = [];
  const files: { path: string; sha256: string; bytes: number }[] = [];
  const source = createHash('sha256');
  for (const [name, pos] of WORDNET_FILES) {
    const path = join(o.dir, name);
    const bytes = await readFile(path).catch((e: NodeJS.ErrnoException) => {
      throw userError(
        e.code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE',
        `cannot read ${path} (${e.code ?? String(e)})`,
        'install WordNet (apt-get install wordnet-base, or bash .ci/install-deps.sh), or pass --wordnet-dir DIR',
      );
    });
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    files.push({ path, sha256, bytes: bytes.length });
    source.update(`${name}\0${sha256}\n`);
    all.push(...parseWordnetData(bytes.toString('utf8'), path, pos));
  }
  const lemmaOf = new Map(all.map((s) => [s.id, s.lemmas[0]!]));
  const records = wordnetRecords(all);
  const sourceSha256 = source.digest('hex');
  const summary = await writeXcDataset(records, {
    kind: 'wordnet',
    outDir: o.outDir,
    hidden: o.hidden,
    seed: o.seed,
    testFraction: o.testFraction,
    minFeatureCount: o.minFeatureCount,
    minLabelCount: o.minLabelCount,
    source: {
      package: 'wordnet-base',
      files,
      sha256: sourceSha256,
      sha256Of: 'sha256 of the lines "NAME\\0SHA256(file)\\n" for data.noun, data.verb',
    },
    method: {
      samples: 'noun and verb synsets with at least one hypernym (wndb pointers @ and @i of the same part of speech)',
      sampleFeatures: 'lower-cased gloss words [a-z]+ as w:WORD and lemma words as l:WORD (distinct)',
      sampleLabels: 'the hypernym and instance-hypernym synsets (classes.txt: id and first lemma)',
    },
    labelText: (id) => (lemmaOf.has(id) ? `${id} ${lemmaOf.get(id)}` : undefined),
  });
  return { ...summary, synsets: all.length, roots: all.length - records.length, sourceSha256, seconds: (performance.now() - t0) / 1000 };
}
