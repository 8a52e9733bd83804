/**
 * The Vega-Lite specs rendered headless: well-formed SVG with one symbol per candidate, the kept
 * versions outlined and labelled, axes titled with units, model-supplied names escaped; PNGs with
 * the PNG signature, twice the SVG's size, and visible ink (fonts found, not a blank page).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderPng, renderSvg } from '../src/plot/render.js';
import { layerFigure, logTicks, modelFigure } from '../src/plot/specs.js';
import {
  darkPixels,
  NASTY_NAME,
  plotManifest,
  plotProfiles,
  PNG_SIGNATURE,
  pngSize,
  scatterPoints,
  svgSize,
  xmlProblems,
} from './plot-fixture.js';

/** Every text line (a multi-line text is one <tspan> per line). */
const textOf = (svg: string) =>
  [...svg.matchAll(/<text[^>]*>([\s\S]*?)<\/text>/g)].flatMap((m) =>
    m[1]!.includes('<tspan') ? [...m[1]!.matchAll(/<tspan[^>]*>([^<]*)<\/tspan>/g)].map((t) => t[1]!) : [m[1]!],
  );

test('layer figure: one symbol per measured candidate, kept ones outlined and labelled v1 v2, axes titled with units', async () => {
  const svg = await renderSvg(layerFigure(plotManifest(), plotProfiles(), 0));
  assert.deepEqual(xmlProblems(svg), []);
  const points = scatterPoints(svg);
  assert.equal(points.length, 4, 'every candidate, the crashed one included');
  assert.equal(points.filter((p) => p.includes('stroke="#111"')).length, 2, 'two kept versions drawn outlined');
  const texts = textOf(svg);
  for (const t of [
    'v1',
    'v2',
    'L2 tile footprint (KiB)',
    'parallel chunks (work items)',
    'interference level (0 = quiet)',
    'latency (ms)',
    'oracle (best measured)',
    'v1 (800 KiB, 2 chunks)',
    'v2 (64.0 KiB, 128 chunks)',
  ]) {
    assert.ok(texts.includes(t), `text ${JSON.stringify(t)} in the SVG`);
  }
  assert.ok(
    texts.some((t) => t.startsWith('layer 0: conv2d')),
    'title names the layer',
  );
  assert.ok(texts.some((t) => t.includes('4 measured candidates: 2 kept, 1 dominated, 1 without a quiet latency')));
  for (const size of [...svg.matchAll(/font-size="([\d.]+)px"/g)].map((m) => Number(m[1]))) assert.ok(size >= 11, `font size ${size} ≥ 11`);
  // panel (b): a line per kept version and the oracle (dashed)
  const lines = [...svg.matchAll(/<path [^>]*aria-roledescription="line mark"[^>]*>/g)].map((m) => m[0]);
  assert.equal(lines.length, 3);
  assert.equal(lines.filter((l) => l.includes('stroke-dasharray="7,4"')).length, 1);
});

test('a model-supplied name is escaped text in the SVG, never markup, and control characters are gone', async () => {
  const svg = await renderSvg(layerFigure(plotManifest(), plotProfiles(), 3));
  assert.deepEqual(xmlProblems(svg), []);
  assert.ok(!svg.includes('<b>'), 'no raw markup from the name');
  assert.ok(
    svg.includes('fc, "final" &lt;b&gt;&amp;amp; next\ufffd') || svg.includes('fc, &quot;final&quot; &lt;b&gt;&amp;amp; next\ufffd'),
    'the name, escaped',
  );
  assert.ok(!svg.includes('\u0001'));
  assert.ok(NASTY_NAME.includes('\u0001'));
});

test('without candidate profiles the layer figure shows the kept versions and says the rest are not in the bundle', async () => {
  const svg = await renderSvg(layerFigure(plotManifest(), undefined, 0));
  assert.deepEqual(xmlProblems(svg), []);
  assert.equal(scatterPoints(svg).length, 2);
  assert.ok(textOf(svg).some((t) => t.includes('no candidate profiles')));
});

test('model figure: one bar per tunable layer, adaptive and fixed lines, labelled as sums of profiled layer latencies', async () => {
  const svg = await renderSvg(modelFigure(plotManifest()));
  assert.deepEqual(xmlProblems(svg), []);
  const bars = [...svg.matchAll(/<path [^>]*aria-roledescription="bar"[^>]*>/g)];
  assert.equal(bars.length, 3);
  const texts = textOf(svg);
  for (const t of [
    'kept versions (count)',
    'layer index (network order)',
    'sum of layer latencies (ms)',
    'interference level (0 = quiet)',
    'adaptive (best kept version per level)',
    'fixed (best-quiet version)',
  ]) {
    assert.ok(texts.includes(t), `text ${JSON.stringify(t)} in the SVG`);
  }
  assert.ok(texts.some((t) => t.includes('SUMS OF PROFILED LAYER LATENCIES')));
  assert.equal([...svg.matchAll(/<path [^>]*aria-roledescription="line mark"[^>]*>/g)].length, 2);
});

test('PNG: signature, scale × the SVG size, and ink on the page (text renders with the installed fonts)', async () => {
  const svg = await renderSvg(layerFigure(plotManifest(), plotProfiles(), 0));
  const png = renderPng(svg);
  assert.ok(png.subarray(0, 8).equals(PNG_SIGNATURE));
  const s = svgSize(svg);
  assert.deepEqual(pngSize(png), { width: 2 * s.width, height: 2 * s.height });
  assert.deepEqual(pngSize(renderPng(svg, 1)), s);
  assert.ok(darkPixels(png) > 2000, 'axes, marks and text are drawn');

  const textOnly =
    '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40">' +
    '<text x="4" y="30" font-family="DejaVu Sans, sans-serif" font-size="24">Latency</text></svg>';
  assert.ok(darkPixels(renderPng(textOnly, 1)) > 50, 'a font was found: text leaves ink');
});

test('logTicks: 1-2-5 values inside the domain', () => {
  assert.deepEqual(logTicks([0.6, 250]), [1, 2, 5, 10, 20, 50, 100, 200]);
  assert.deepEqual(logTicks([0.015, 0.06]), [0.02, 0.05]);
});
