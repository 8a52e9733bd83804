/**
 * The real data sets' builders (wordnet, debian-packages) on hand-written fixtures: the wndb(5)
 * and deb822 parsers (pointers @ and @i, verb frames, alternatives and versions stripped), bad input
 * as a BAD_DATA error naming file:line, the seeded split, the vocabularies, the frequency floor and
 * deterministic output. When the real source files exist on this machine (wordnet-base's data files,
 * dpkg's status file), a capped slice of each is built too; nothing is installed.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { VeltairError } from '../src/errors.js';
import { buildDebianDataset, dependencyNames, packageRecords, parsePackageStanzas } from '../src/sparse/debian-packages.js';
import { buildWordnetDataset, parseWordnetData, parseWordnetLine, synsetFeatures } from '../src/sparse/wordnet.js';
import { frequencyFloor, isTestRecord, vocabulary, writeXcDataset } from '../src/sparse/xc-build.js';
import { readXc } from '../src/sparse/xc-reader.js';
import { assertOneClearError, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-sparse-data-real-'));
after(() => rmSync(root, { recursive: true, force: true }));

// Hand-written in wndb(5) form (not copied from WordNet): a licence line, a root, hyponyms by @ and @i, a verb with a frame.
const NOUNS =
  [
    '  1 This is a licence header line in the data file.  ',
    '00000100 03 n 01 thing 0 002 ~ 00000200 n 0000 ~ 00000300 n 0000 | a root with no hypernym  ',
    '00000200 03 n 02 tool 0 implement 0 002 @ 00000100 n 0000 ~ 00000400 n 0000 | a thing used to make or fix other things  ',
    '00000300 03 n 01 place 0 001 @ 00000100 n 0000 | a thing where you can be; "a nice place"  ',
    '00000400 06 n 01 hammer 0 002 @ 00000200 n 0000 + 00000900 v 0101 | a tool with a heavy head for driving nails  ',
    '00000500 15 n 02 Springfield 0 Shelbyville 1 001 @i 00000300 n 0000 | a place in a story with a nice town hall  ',
  ].join('\n') + '\n';
const VERBS =
  '00000900 35 v 01 hammer 0 002 @ 00000950 v 0000 + 00000400 n 0101 01 + 08 00 | hit with a tool  \n' +
  '00000950 35 v 01 hit 0 000 01 + 02 00 | deal a blow  \n';

function badData(f: () => unknown, where: RegExp): void {
  assert.throws(
    f,
    (e: unknown) => e instanceof VeltairError && e.code === 'BAD_DATA' && where.test(e.message),
    `expected BAD_DATA at ${where}`,
  );
}

test('wordnet: wndb lines parse to synsets with @ and @i hypernyms of the same part of speech; frames skipped', () => {
  const n = parseWordnetData(NOUNS, 'data.noun', 'n');
  assert.deepEqual(
    n.map((s) => s.id),
    ['n00000100', 'n00000200', 'n00000300', 'n00000400', 'n00000500'],
  );
  assert.deepEqual(
    n.map((s) => s.hypernyms),
    [[], ['n00000100'], ['n00000100'], ['n00000200'], ['n00000300']],
  );
  assert.deepEqual(n[4]!.lemmas, ['Springfield', 'Shelbyville']);
  assert.equal(n[2]!.gloss, 'a thing where you can be; "a nice place"');
  const v = parseWordnetData(VERBS, 'data.verb', 'v');
  assert.deepEqual(
    v.map((s) => [s.id, s.hypernyms]),
    [
      ['v00000900', ['v00000950']],
      ['v00000950', []],
    ],
  );
  const f = synsetFeatures(n[1]!);
  assert.ok(f.includes('w:used') && f.includes('l:tool') && f.includes('l:implement') && f.includes('w:things'));
  assert.equal(new Set(f).size, f.length, 'features are distinct');
});

test('wordnet: malformed lines are BAD_DATA naming the file and line', () => {
  const line = '00000200 03 n 02 tool 0 implement 0 002 @ 00000100 n 0000 ~ 00000400 n 0000 | gloss';
  badData(() => parseWordnetLine(line.replace(' | ', ' '), 'data.noun', 7, 'n'), /^data\.noun:7: no " \| "/);
  badData(() => parseWordnetLine(line.replace('002 @', '003 @'), 'data.noun', 8, 'n'), /^data\.noun:8: the line ends before pointer/);
  badData(() => parseWordnetLine(line.replace('@ 00000100 n', '@ 0000010x n'), 'data.noun', 9, 'n'), /^data\.noun:9: pointer 1/);
  badData(() => parseWordnetLine(line, 'data.verb', 3, 'v'), /^data\.verb:3: ss_type "n"/);
  badData(() => parseWordnetLine(line.replace(' 02 tool', ' zz tool'), 'f', 1, 'n'), /^f:1: w_cnt/);
  badData(() => parseWordnetLine(line.replace('0000 | gloss', '0000 extra | gloss'), 'f', 2, 'n'), /^f:2: 1 unexpected field/);
  badData(() => parseWordnetData(NOUNS + 'garbage\n', 'data.noun', 'n'), /^data\.noun:7: /);
});

test('xc-build: seeded split independent of order, vocabularies most frequent first, floor of the most frequent labels', () => {
  assert.equal(isTestRecord(1, 'a', 0.5), isTestRecord(1, 'a', 0.5));
  const ids = Array.from({ length: 2000 }, (_, i) => `r${i}`);
  const share = ids.filter((id) => isTestRecord(1, id, 0.1)).length / ids.length;
  assert.ok(share > 0.07 && share < 0.13, `about 10% held out, got ${share}`);
  assert.notDeepEqual(
    ids.map((id) => isTestRecord(1, id, 0.1)),
    ids.map((id) => isTestRecord(2, id, 0.1)),
    'the seed changes the cut',
  );
  assert.deepEqual(
    [
      ...vocabulary(
        new Map([
          ['b', 2],
          ['a', 2],
          ['c', 5],
          ['d', 1],
        ]),
        2,
      ),
    ],
    [
      ['c', 0],
      ['a', 1],
      ['b', 2],
    ],
  );
  const test = [
    { labels: [0], features: [1] },
    { labels: [1, 7], features: [1] },
    { labels: [3], features: [1] },
    { labels: [9], features: [1] },
  ];
  assert.equal(frequencyFloor(test, 1), 1 / 4);
  assert.equal(frequencyFloor(test, 5), 3 / 20);
});

test("wordnet: the data set from a fixture directory is XC-readable, deterministic, and records the sources' sha256", async () => {
  const dir = join(root, 'wn');
  mkdirSync(dir);
  writeFileSync(join(dir, 'data.noun'), NOUNS);
  writeFileSync(join(dir, 'data.verb'), VERBS);
  const build = async (out: string) => {
    mkdirSync(out);
    return buildWordnetDataset({ dir, outDir: out, seed: 1, testFraction: 0.2, minFeatureCount: 1, minLabelCount: 1, hidden: 8 });
  };
  const a = await build(join(root, 'wn1'));
  const b = await build(join(root, 'wn2'));
  assert.deepEqual(b, { ...a, seconds: b.seconds });
  for (const f of ['train.txt', 'test.txt', 'classes.txt', 'features.txt', 'spec.json']) {
    assert.ok(readFileSync(join(root, 'wn1', f)).equals(readFileSync(join(root, 'wn2', f))), `${f} is not deterministic`);
  }
  assert.equal(a.synsets, 7);
  assert.equal(a.roots, 2, 'thing and hit have no hypernym');
  assert.equal(a.records, 5);
  assert.equal(a.trainSamples + a.testSamples + a.droppedNoLabel + a.droppedNoFeature, a.records);
  const info = JSON.parse(readFileSync(join(root, 'wn1', 'dataset.json'), 'utf8'));
  const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
  assert.deepEqual(
    info.source.files.map((f: { sha256: string }) => f.sha256),
    [sha(join(dir, 'data.noun')), sha(join(dir, 'data.verb'))],
  );
  assert.match(info.source.sha256, /^[0-9a-f]{64}$/);
  const classes = readFileSync(join(root, 'wn1', 'classes.txt'), 'utf8')
    .trim()
    .split('\n');
  assert.equal(classes.length, a.labels);
  assert.ok(
    classes.every((c) => /^[nv]\d{8} \S+$/.test(c)),
    'each class is a synset id and its first lemma',
  );
  const train = await readXc(join(root, 'wn1', 'train.txt'), { inputDim: a.features, outputDim: a.labels });
  assert.equal(train.rows, a.trainSamples);
});

// Hand-written deb822 stanzas (not copied from the archive).
const STANZAS = `Package: zed-tool
Version: 1.0-1
Depends: libfoo1 (>= 1.2), libbar2:any | libbar-alt, python3:any (>= 3.11~) [amd64], zed-tool
Pre-Depends: dpkg (>= 1.15.6~)
Description: Tool for editing zed files
Tag: role::program, scope::utility,
 use::editing
Section: editors

Package: libfoo1
Version: 1.2
Depends: libc6 (>= 2.34)
Description: Library for foo files
Tag: role::shared-lib
Section: libs

Package: foo-doc
Description: Documentation for foo
Section: doc

Package: libfoo1
Version: 0.9
Depends: libold
Description: an older stanza of the same package
Section: oldlibs
`;

test('debian-packages: stanzas parse; first alternative, no versions or :arch or [arch]; no self-dependency; first stanza of a name wins', () => {
  assert.deepEqual(dependencyNames('a (>= 1) | b, c:any [amd64] <!nocheck>, d:i386', 'f:1'), ['a', 'c', 'd']);
  const p = parsePackageStanzas(STANZAS, 'fixture');
  assert.deepEqual(
    p.map((x) => [x.name, x.line]),
    [
      ['zed-tool', 1],
      ['libfoo1', 10],
      ['foo-doc', 17],
      ['libfoo1', 21],
    ],
  );
  assert.deepEqual(p[0]!.depends, ['libfoo1', 'libbar2', 'python3', 'dpkg']);
  assert.deepEqual(p[0]!.tags, ['role::program', 'scope::utility', 'use::editing']);
  const { records, duplicates } = packageRecords(p);
  assert.equal(duplicates, 1);
  assert.deepEqual(
    records.map((r) => r.id),
    ['libfoo1', 'zed-tool'],
    'sorted by name; foo-doc has no dependency',
  );
  assert.deepEqual(records[0]!.labels, ['libc6']);
  assert.deepEqual([...records[1]!.features].sort(), [
    's:editors',
    't:role::program',
    't:scope::utility',
    't:use::editing',
    'w:editing',
    'w:files',
    'w:for',
    'w:tool',
    'w:zed',
  ]);
});

test('debian-packages: malformed stanzas are BAD_DATA naming the file and line', () => {
  badData(() => parsePackageStanzas('Package: a\nnot a field\n', 'in.txt'), /^in\.txt:2: "not a field" is not a "Field: value" line/);
  badData(() => parsePackageStanzas(' continued\n', 'in.txt'), /^in\.txt:1: continuation line outside a field/);
  badData(() => parsePackageStanzas('Package: a\n\nVersion: 1\nSection: x\n', 'in.txt'), /^in\.txt:3: stanza without a Package field/);
  badData(() => parsePackageStanzas('Package: a\nDepends: b c (>= 1)\n', 'in.txt'), /^in\.txt:2: dependency "b c/);
  badData(() => parsePackageStanzas('Package: a\nSection: x\nSection: y\n', 'in.txt'), /^in\.txt:3: field Section appears twice/);
  badData(() => parsePackageStanzas('Package: A_B\n', 'in.txt'), /^in\.txt:1: stanza with Package "A_B"/);
});

test("debian-packages: --input builds a deterministic XC data set whose dataset.json holds the input's sha256", async () => {
  const input = join(root, 'stanzas.txt');
  writeFileSync(input, STANZAS);
  const run = async (out: string) => {
    mkdirSync(out);
    return buildDebianDataset({ input, outDir: out, seed: 3, testFraction: 0.3, minFeatureCount: 1, minLabelCount: 1, hidden: 8 });
  };
  const a = await run(join(root, 'deb1'));
  const b = await run(join(root, 'deb2'));
  assert.deepEqual(b, { ...a, seconds: b.seconds });
  assert.equal(a.sourceSha256, createHash('sha256').update(STANZAS).digest('hex'));
  assert.equal(JSON.parse(readFileSync(join(root, 'deb1', 'dataset.json'), 'utf8')).source.sha256, a.sourceSha256);
  assert.deepEqual([a.packages, a.duplicateStanzas, a.withoutDependencies, a.records], [4, 1, 1, 2]);
  assert.equal(a.trainSamples + a.testSamples + a.droppedNoLabel + a.droppedNoFeature, 2);
});

/** The first `lines` lines of a real file (whole lines only). */
function head(path: string, lines: number): string {
  const text = readFileSync(path)
    .subarray(0, lines * 400)
    .toString('utf8')
    .split('\n');
  return text.slice(0, Math.min(lines, text.length - 1)).join('\n') + '\n';
}

/** A record-set builder's output read back: every line within the header's dimensions. */
async function checkXc(out: string, s: { trainSamples: number; testSamples: number; features: number; labels: number }): Promise<void> {
  for (const [name, rows] of [
    ['train.txt', s.trainSamples],
    ['test.txt', s.testSamples],
  ] as const) {
    const d = await readXc(join(out, name), { inputDim: s.features, outputDim: s.labels });
    assert.equal(d.rows, rows);
    assert.equal(d.unlabelled, 0);
  }
}

test("real files when installed: a capped slice of WordNet's data files and of dpkg's status file build", async (t) => {
  const wn = '/usr/share/wordnet';
  if (existsSync(join(wn, 'data.noun')) && existsSync(join(wn, 'data.verb'))) {
    const dir = join(root, 'wn-real');
    mkdirSync(dir);
    writeFileSync(join(dir, 'data.noun'), head(join(wn, 'data.noun'), 3000));
    writeFileSync(join(dir, 'data.verb'), head(join(wn, 'data.verb'), 1000));
    const out = join(root, 'wn-real-out');
    mkdirSync(out);
    const s = await buildWordnetDataset({ dir, outDir: out, seed: 1, testFraction: 0.1, minFeatureCount: 2, minLabelCount: 1, hidden: 8 });
    assert.ok(s.trainSamples > 1000 && s.labels > 100, `${s.trainSamples} samples, ${s.labels} labels`);
    await checkXc(out, s);
  } else t.diagnostic('no /usr/share/wordnet: the real WordNet slice was not built');
  const status = '/var/lib/dpkg/status';
  if (existsSync(status)) {
    const stanzas =
      readFileSync(status, 'utf8')
        .split(/\n\s*\n/)
        .slice(0, 400)
        .join('\n\n') + '\n';
    const input = join(root, 'status-slice');
    writeFileSync(input, stanzas);
    const { records } = packageRecords(parsePackageStanzas(stanzas, input));
    if (records.length >= 10) {
      const out = join(root, 'deb-real-out');
      mkdirSync(out);
      const s = await buildDebianDataset({
        input,
        outDir: out,
        seed: 1,
        testFraction: 0.1,
        minFeatureCount: 1,
        minLabelCount: 1,
        hidden: 8,
      });
      assert.equal(s.records, records.length);
      await checkXc(out, s);
    } else t.diagnostic(`${status} holds ${records.length} packages with dependencies: too few to build a slice`);
  } else t.diagnostic('no /var/lib/dpkg/status: the real package slice was not built');
});

test('xc-build: no training label at all is BAD_DATA, not an empty data set', async () => {
  const out = join(root, 'empty');
  mkdirSync(out);
  await assert.rejects(
    writeXcDataset([{ id: 'x', features: ['a'], labels: [] }], {
      kind: 'k',
      outDir: out,
      hidden: 4,
      seed: 1,
      testFraction: 0.1,
      minFeatureCount: 1,
      minLabelCount: 1,
      source: {},
      method: {},
    }),
    (e: unknown) => e instanceof VeltairError && e.code === 'BAD_DATA',
  );
});

test('CLI: bad input to `veltair data` is one BAD_DATA error naming file:line, exit 1; a missing WordNet is FILE_NOT_FOUND', async () => {
  const bad = join(root, 'bad-stanzas.txt');
  writeFileSync(bad, 'Package: a\nDepends: b (>= 1\n');
  assertOneClearError(await veltair(['data', 'debian-packages', '--input', bad, '-o', join(root, 'cli-deb')]), 'BAD_DATA', [`${bad}:2`]);
  const wn = join(root, 'cli-wn-src');
  mkdirSync(wn);
  writeFileSync(join(wn, 'data.noun'), NOUNS.replace('002 @ 00000100 n 0000 ~', '002 @ 00000100 x 0000 ~'));
  writeFileSync(join(wn, 'data.verb'), VERBS);
  assertOneClearError(await veltair(['data', 'wordnet', '--wordnet-dir', wn, '-o', join(root, 'cli-wn')]), 'BAD_DATA', [
    `${join(wn, 'data.noun')}:3`,
  ]);
  assertOneClearError(
    await veltair(['data', 'wordnet', '--wordnet-dir', join(root, 'nowhere'), '-o', join(root, 'cli-wn2')]),
    'FILE_NOT_FOUND',
  );
});
