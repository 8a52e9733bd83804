/**
 * `veltair report` on a real (tiny) bundle: the page has every section, one inline SVG per figure
 * and a figure anchor for every tunable layer, loads nothing from anywhere, shows hostile node
 * names as text, is the same bytes every time, and is written like every other veltair output
 * (refused when it exists, replaced with --force, never half-written).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { readBundle } from '../src/bundle/read.js';
import { escapeHtml, el } from '../src/plot/report-html.js';
import { scopeSvgIds } from '../src/plot/report-figures.js';
import { msText } from '../src/plot/report-layers.js';
import { assertOneClearError, veltair } from './compile-fixture.js';
import { ATTRIBUTE_NAME, compileReportBundle, HOSTILE_NAME, HOSTILE_NAME_ESCAPED } from './report-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-report-'));
after(() => rmSync(root, { recursive: true, force: true }));
let bundle = '';
before(async () => {
  bundle = await compileReportBundle(root);
});

const count = (text: string, re: RegExp) => (text.match(re) ?? []).length;

test('escapeHtml makes markup, entities and both quotes inert, in text and in attributes', () => {
  assert.equal(escapeHtml(HOSTILE_NAME), HOSTILE_NAME_ESCAPED);
  assert.equal(escapeHtml('layer1.0.conv1'), 'layer1.0.conv1');
  const cell = el('td', { title: ATTRIBUTE_NAME }, HOSTILE_NAME).html;
  assert.equal(cell, `<td title="fc&quot; onmouseover=&quot;alert(2)">${HOSTILE_NAME_ESCAPED}</td>`);
  assert.equal(el('p', {}, 'a', el('br', {}), 'b').html, '<p>a<br>b</p>', 'a void element gets no end tag');
});

test('scopeSvgIds prefixes every id and reference in the markup, and no text', () => {
  const svg =
    '<svg><defs><clipPath id="clip1"><rect/></clipPath></defs><g clip-path="url(#clip1)"><use href="#clip1"/>' +
    '<text>id="clip1" url(#clip1)</text></g></svg>';
  assert.equal(
    scopeSvgIds(svg, 'fig-a'),
    '<svg><defs><clipPath id="fig-a-clip1"><rect/></clipPath></defs><g clip-path="url(#fig-a-clip1)">' +
      '<use href="#fig-a-clip1"/><text>id="clip1" url(#clip1)</text></g></svg>',
  );
});

test('the report has every section, one inline SVG per figure and a figure for every tunable layer', async () => {
  const out = join(root, 'report.html');
  const r = await veltair(['report', bundle, '-o', out, '--json']);
  assert.equal(r.exitCode, 0, r.stderr);
  const summary = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(summary), ['output', 'layers', 'figures', 'bytes']);
  assert.equal(summary.output, out);
  assert.equal(summary.bytes, statSync(out).size);
  const html = readFileSync(out, 'utf8');
  const { manifest } = await readBundle(bundle);
  const tunable = manifest.layers.filter((l) => l.tunable);
  assert.equal(summary.layers, manifest.layers.length);
  assert.equal(summary.figures, 1 + new Set(tunable.map((l) => l.workload)).size, 'the model figure and one per workload');

  for (const id of ['model', 'target', 'tuning-cost', 'versions', 'layers', 'figures']) {
    assert.ok(html.includes(`<section id="${id}">`), `section ${id}`);
  }
  assert.equal(count(html, /<svg[\s>]/g), summary.figures, 'one inline <svg> per figure');
  assert.equal(count(html, /<\/svg>/g), summary.figures);
  assert.equal(count(html, /<figure id="/g), summary.figures);
  assert.ok(!html.includes('<?xml'), 'no XML declaration inside HTML');
  for (const l of manifest.layers) assert.equal(count(html, new RegExp(`<tr id="layer-${l.index}"`, 'g')), 1, `row of layer ${l.index}`);
  for (const l of tunable) {
    const row = html.slice(html.indexOf(`<tr id="layer-${l.index}"`)).split('</tr>')[0]!;
    const link = /href="#(fig-[^"]+)"/.exec(row);
    assert.ok(link, `layer ${l.index} links to its figure`);
    assert.ok(html.includes(`<figure id="${link[1]}">`), `the figure ${link[1]} exists`);
    assert.ok(html.includes(`href="#layer-${l.index}"`), `a figure caption links back to layer ${l.index}`);
  }
  for (const text of [
    manifest.model.sha256,
    manifest.target.spec.cpuModel,
    manifest.target.spec.cc,
    'Timed kernel seconds',
    'Measured candidates',
  ]) {
    assert.ok(html.includes(escapeHtml(text)), `mentions ${text}`);
  }
  const dense = tunable.find((l) => l.op === 'dense')!;
  assert.ok(html.includes(`>${msText(dense.family!.bestMs['1'])}<`), 'the best level-1 latency of the dense layer is in the table');
});

test('the report loads nothing and runs nothing: no script, no remote URL to load, hostile names are text', async () => {
  const html = readFileSync(join(root, 'report.html'), 'utf8');
  assert.equal(count(html, /<script/gi), 0, 'no script element at all');
  assert.equal(count(html, /<(link|iframe|object|embed|img|image|use|foreignObject)[\s>]/gi), 0, 'nothing that fetches');
  assert.doesNotMatch(
    html,
    /\s(src|href|xlink:href|action|srcset|poster|data)\s*=\s*["']?\s*(https?:|\/\/|ftp:|data:text)/i,
    'no remote reference',
  );
  assert.doesNotMatch(html, /url\(\s*["']?\s*(https?:|\/\/)/i, 'no remote CSS url()');
  assert.doesNotMatch(html, /@import/i);
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;/);
  assert.ok(!html.includes(HOSTILE_NAME), 'the raw hostile name never appears');
  assert.ok(html.includes(HOSTILE_NAME_ESCAPED), 'it appears escaped');
  // Quotes are inert in text (the SVG titles carry the name as text); inside a tag they must not be.
  const tags = html.match(/<[^>]*>/g) ?? [];
  assert.ok(tags.length > 100);
  assert.deepEqual(
    tags.filter((t) => /onmouseover/i.test(t) && !t.includes('onmouseover=&quot;')),
    [],
    'no tag gained an attribute',
  );
});

test('the same bundle gives the same bytes', async () => {
  const again = join(root, 'again.html');
  const r = await veltair(['report', bundle, '-o', again]);
  assert.equal(r.exitCode, 0, r.stderr);
  assert.match(r.stdout, /^report {2}.*again\.html \(\d+ KiB\): \d+ layers, \d+ figures$/);
  assert.ok(readFileSync(again).equals(readFileSync(join(root, 'report.html'))));
});

test('an existing output is refused without --force and replaced with it; no temp file is left behind', async () => {
  const dir = join(root, 'out');
  mkdirSync(dir);
  const out = join(dir, 'r.html');
  writeFileSync(out, 'keep me');
  const refused = await veltair(['report', bundle, '-o', out]);
  assertOneClearError(refused, 'OUTPUT_EXISTS', [out]);
  assert.equal(readFileSync(out, 'utf8'), 'keep me');
  const forced = await veltair(['report', bundle, '-o', out, '--force', '--json']);
  assert.equal(forced.exitCode, 0, forced.stderr);
  assert.match(readFileSync(out, 'utf8'), /^<!DOCTYPE html>/);
  assert.deepEqual(readdirSync(dir), ['r.html']);

  const folder = join(dir, 'folder.html');
  mkdirSync(folder);
  assertOneClearError(await veltair(['report', bundle, '-o', folder, '--force']), 'OUTPUT_EXISTS', ['not a regular file']);
});

test('bad arguments are one clear error each', async () => {
  const [noOutput, notHtml, noBundle] = await Promise.all([
    veltair(['report', bundle]),
    veltair(['report', bundle, '-o', join(root, 'r.svg')]),
    veltair(['report', join(root, 'missing.bundle'), '-o', join(root, 'x.html')]),
  ]);
  assertOneClearError(noOutput, 'BAD_ARGUMENT', ['-o']);
  assertOneClearError(notHtml, 'BAD_ARGUMENT', ['.html']);
  assertOneClearError(noBundle, 'FILE_NOT_FOUND');
});
