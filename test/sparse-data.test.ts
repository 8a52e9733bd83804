/**
 * The data side: the XC reader (optional header, CRLF, samples without labels, trailing blank
 * lines, values exactly as float32), and the Debian-text data set builder on a small corpus
 * (plain text, a gzipped man page whose roff markup is stripped, a binary file skipped, repeated
 * lines dropped, the document-level train/test cut by sha256 of the path, deterministic output).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, test } from 'node:test';
import { buildWordsDataset, stripRoff } from '../src/sparse/words.js';
import { readXc } from '../src/sparse/xc-reader.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-sparse-data-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('XC reader: header optional, CRLF, label-less samples, trailing blank lines; CSR arrays exact', async () => {
  const p = join(root, 'a.txt');
  writeFileSync(p, '3 6 4\r\n0,3 1:0.5 5:2\r\n 2:1.25\r\n2 0:-1e-3 1:3\r\n\r\n\n');
  const d = await readXc(p, { inputDim: 6, outputDim: 4 });
  assert.deepEqual(d.header, { samples: 3, features: 6, labels: 4 });
  assert.equal(d.rows, 3);
  assert.equal(d.unlabelled, 1);
  assert.deepEqual([...d.row], [0, 2, 3, 5]);
  assert.deepEqual([...d.idx], [1, 5, 2, 0, 1]);
  assert.deepEqual([...d.val], [0.5, 2, 1.25, Math.fround(-1e-3), 3]);
  assert.deepEqual([...d.lrow], [0, 2, 2, 3]);
  assert.deepEqual([...d.labels], [0, 3, 2]);
  assert.equal(d.sha256, createHash('sha256').update(readFileSync(p)).digest('hex'));
  const q = join(root, 'b.txt');
  writeFileSync(q, '1 0:1');
  const e = await readXc(q, { inputDim: 6, outputDim: 4 });
  assert.deepEqual([e.rows, e.header, [...e.labels]], [1, null, [1]], 'no header, no final newline');
});

test('roff markup is stripped from man pages, its text kept', () => {
  const t = stripRoff('.TH LS 1\n.\\" a comment\n.SH NAME\nls \\- list \\fBdirectory\\fR contents\n.B \\-a\nshow \\(aqall\\(aq');
  assert.ok(!t.includes('\\'));
  assert.ok(!t.includes('comment'));
  assert.match(t, /NAME/);
  assert.match(t, /list +directory +contents/);
  assert.match(t, /show +all/);
});

test('words: classes and features from the training documents, document-level cut by sha256(path), deterministic', async () => {
  const corpus = join(root, 'corpus');
  mkdirSync(join(corpus, 'doc', 'pkg'), { recursive: true });
  mkdirSync(join(corpus, 'man', 'man1'), { recursive: true });
  // Each file's lines name the file (a letter pair: words are letters only), so every file brings lines of its own. Duplicate
  // lines are dropped corpus-wide, so with lines shared by all files the first file read would hold them all, and whenever
  // sha256 of its (random, temp-dir) path put it in the test split (26 of 256 first bytes), training had no words.
  const sentence = (i: number, f: number) =>
    `the quick brown fox jumps over the lazy dog number ${['one', 'two', 'three', 'four'][i % 4]} ` +
    `again and again line ${'abcdefghij'[i % 10]} of file ${String.fromCharCode(97 + (f % 26), 97 + Math.floor(f / 26))}`;
  const docs: string[] = [];
  for (let f = 0; f < 30; f++) {
    const p = join(corpus, 'doc', 'pkg', `file${f}.txt`);
    writeFileSync(p, Array.from({ length: 40 }, (_, i) => sentence(i + f * 7, f)).join('\n') + '\nthe same licence line in every file\n');
    docs.push(p);
  }
  const man = join(corpus, 'man', 'man1', 'tool.1.gz');
  writeFileSync(man, gzipSync('.TH TOOL 1\n.SH NAME\ntool \\- the quick \\fBbrown\\fR fox tool\n'));
  docs.push(man);
  writeFileSync(join(corpus, 'doc', 'pkg', 'blob.bin'), Buffer.from([1, 2, 0, 3, 4]));
  const build = (out: string) =>
    buildWordsDataset({
      roots: [join(corpus, 'doc'), join(corpus, 'man')],
      outDir: out,
      minClassCount: 5,
      maxClasses: 1000,
      window: 2,
      maxTrain: 100000,
      maxTest: 100000,
      hidden: 16,
    });
  mkdirSync(join(root, 'w1'));
  mkdirSync(join(root, 'w2'));
  const a = await build(join(root, 'w1'));
  const b = await build(join(root, 'w2'));
  assert.equal(a.files, 31);
  assert.equal(a.skippedFiles, 1, 'the binary file');
  assert.equal(
    a.droppedDuplicateLines > 29,
    true,
    'the repeated licence line (and repeated sentences) dropped after their first occurrence',
  );
  const expectedTest = docs.filter((p) => createHash('sha256').update(p).digest()[0]! < 26).length;
  assert.equal(a.testDocuments, expectedTest);
  for (const f of ['train.txt', 'test.txt', 'classes.txt', 'features.txt', 'spec.json']) {
    assert.ok(readFileSync(join(root, 'w1', f)).equals(readFileSync(join(root, 'w2', f))), `${f} is not deterministic`);
  }
  assert.deepEqual(b, { ...a, seconds: b.seconds });
  const spec = JSON.parse(readFileSync(join(root, 'w1', 'spec.json'), 'utf8'));
  assert.equal(spec.input, a.features);
  assert.equal(spec.layers[1].dim, a.classes);
  const classes = readFileSync(join(root, 'w1', 'classes.txt'), 'utf8')
    .trim()
    .split('\n');
  assert.equal(classes.length, a.classes);
  assert.ok(classes.includes('quick') && !classes.includes('licence'), 'a class occurs ≥ 5 times in training documents');
  const train = await readXc(join(root, 'w1', 'train.txt'), { inputDim: spec.input, outputDim: a.classes });
  assert.equal(train.rows, a.trainSamples);
  assert.ok(train.rows > 100);
  assert.ok(train.idx.length / train.rows <= 4, 'at most 2 words on each side');
});
