/**
 * The report in a real browser: headless Chromium (no network) parses it into a DOM with every
 * section and every figure's SVG, logs nothing to the console (no error, no blocked load, no CSP
 * violation), and paints a page that is not blank: text, tables and coloured plot marks.
 * Chromium must be installed (`.ci/install-deps.sh`); without it this test fails, it never skips.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { veltair } from './compile-fixture.js';
import { findChromium, runChromium } from './report-chromium.js';
import { compileReportBundle, HOSTILE_NAME } from './report-fixture.js';
import { decodePng, pixelStats } from './report-png.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-report-chromium-'));
after(() => rmSync(root, { recursive: true, force: true }));
const report = join(root, 'report.html');
let figures = 0;

before(async () => {
  findChromium();
  const bundle = await compileReportBundle(root);
  const r = await veltair(['report', bundle, '-o', report, '--json']);
  assert.equal(r.exitCode, 0, r.stderr);
  figures = JSON.parse(r.stdout).figures;
});

test('the console check sees what a page logs (a script blocked by the same policy the report carries)', { timeout: 120_000 }, async () => {
  const control = join(root, 'control.html');
  writeFileSync(
    control,
    '<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" ' +
      'content="default-src \'none\'"></head><body><p>control</p><script>document.title = "ran"</script></body></html>',
  );
  const r = await runChromium(findChromium(), control, ['--dump-dom']);
  assert.match(r.stdout, /<p>control<\/p>/);
  assert.ok(
    r.console.some((l) => /Content Security Policy/.test(l)),
    `the blocked script is logged:\n${r.stderr.slice(-2000)}`,
  );
});

test(
  'Chromium parses the report into every section and every figure, hostile names as text, with a silent console',
  { timeout: 120_000 },
  async () => {
    const r = await runChromium(findChromium(), report, ['--dump-dom']);
    assert.deepEqual(r.console, [], 'no console message');
    const dom = r.stdout;
    for (const id of ['model', 'target', 'tuning-cost', 'versions', 'layers', 'figures'])
      assert.ok(dom.includes(`<section id="${id}">`), `section ${id}`);
    assert.ok(figures >= 3);
    assert.equal((dom.match(/<svg[\s>]/g) ?? []).length, figures, 'one SVG element per figure');
    assert.equal((dom.match(/<script/gi) ?? []).length, 0, 'the hostile name did not become a script element');
    // The DOM serialiser escapes < > & in text: the name is a text node inside the layer row.
    const asText = HOSTILE_NAME.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    assert.match(dom, new RegExp(`<tr id="layer-0"><td class="num">0</td><td>${asText.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}</td>`));
  },
);

test('the screenshot shows text, tables and coloured plot marks', { timeout: 120_000 }, async () => {
  const shot = join(root, 'report.png');
  const r = await runChromium(findChromium(), report, [`--screenshot=${shot}`, '--window-size=1200,4000']);
  assert.deepEqual(r.console, [], 'no console message');
  const img = decodePng(readFileSync(shot));
  assert.equal(img.width, 1200);
  const all = pixelStats(img);
  // Measured on this fixture: ink ≈ 5%, colour ≈ 1.1%, ~270 colours; without the SVGs colour is ≈ 0.03%.
  assert.ok(all.inkFraction > 0.02, `the page has text and rules (${(all.inkFraction * 100).toFixed(2)}% ink)`);
  assert.ok(all.colourFraction > 0.003, `the plots are painted (${(all.colourFraction * 100).toFixed(3)}% strongly coloured pixels)`);
  assert.ok(all.distinctColours >= 32, `${all.distinctColours} distinct colours`);
  const lower = pixelStats(img, [Math.floor(img.height / 2), img.height]);
  assert.ok(lower.colourFraction > 0.002, `the layer figures in the lower half are painted (${(lower.colourFraction * 100).toFixed(3)}%)`);
});
