/**
 * The rows behind the figures, on a hand-built manifest whose every number is known: candidate
 * points with their labels, latency per level with the oracle, versions per layer, adaptive vs
 * fixed sums; `--layer` resolution; and the CSV/JSON export round-tripping awkward node names.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isVeltairError } from '../src/errors.js';
import {
  ADAPTIVE_POLICY,
  candidatePoints,
  FIXED_POLICY,
  levelLatencies,
  modelLatencyPerLevel,
  modelVersionsPerLayer,
  ORACLE_SERIES,
} from '../src/plot/data.js';
import { csvField, figureDataCsv, figureDataJson, layerFigureData, modelFigureData } from '../src/plot/figure-data.js';
import { figureText } from '../src/plot/label.js';
import { resolveLayer } from '../src/plot/layer-id.js';
import type { Manifest } from '../src/bundle/manifest.js';
import { NASTY_NAME, parseCsv, plotManifest, plotProfiles } from './plot-fixture.js';

const id = (n: number) => n.toString(16).padStart(2, '0').repeat(6);

test('candidatePoints: every measured candidate of the workload, locality-heavy first, kept ones labelled in manifest order', () => {
  const rows = candidatePoints(plotManifest(), plotProfiles(), 0);
  assert.deepEqual(
    rows.map((r) => [r.candidate, r.status, r.footprintKiB, r.parallelChunks, r.latencyQuietMs, r.kept, r.versionLabel, r.dominated]),
    [
      [id(1), 'ok', 800, 2, 1.0, true, 'v1', false],
      [id(3), 'ok', 300, 16, 1.8, false, '', true],
      [id(4), 'crash', 100, 32, null, false, '', false],
      [id(2), 'ok', 64, 128, 0.9, true, 'v2', false],
    ],
  );
  assert.equal(rows[0]!.footprintL2Bytes, 800 * 1024);
  assert.equal(rows[0]!.threads, 1);
  assert.deepEqual(candidatePoints(plotManifest(), plotProfiles(), 2), rows, 'layers sharing a workload share its candidates');
});

test('candidatePoints without profiles: the kept versions only', () => {
  const rows = candidatePoints(plotManifest(), undefined, 0);
  assert.deepEqual(
    rows.map((r) => [r.candidate, r.versionLabel, r.kept, r.latencyQuietMs]),
    [
      [id(1), 'v1', true, 1.0],
      [id(2), 'v2', true, 0.9],
    ],
  );
});

test('levelLatencies: one series per kept version at every measured level, plus the oracle from family.bestMs', () => {
  const rows = levelLatencies(plotManifest(), 0);
  const series = (s: string) => rows.filter((r) => r.series === s).map((r) => [r.level, r.latencyMs]);
  assert.deepEqual([...new Set(rows.map((r) => r.series))], ['v1 (800 KiB, 2 chunks)', 'v2 (64.0 KiB, 128 chunks)', ORACLE_SERIES]);
  assert.deepEqual(series('v1 (800 KiB, 2 chunks)'), [
    [0, 1.0],
    [1, 1.2],
    [2, 4.0],
  ]);
  assert.deepEqual(series(ORACLE_SERIES), [
    [0, 0.9],
    [1, 1.2],
    [2, 1.7],
  ]);
});

test('modelVersionsPerLayer: tunable layers in network order with their version counts', () => {
  assert.deepEqual(modelVersionsPerLayer(plotManifest()), [
    { layer: 0, name: 'conv_a', op: 'conv2d', versions: 2 },
    { layer: 2, name: 'conv,b', op: 'conv2d', versions: 2 },
    { layer: 3, name: NASTY_NAME, op: 'dense', versions: 1 },
  ]);
});

test("modelLatencyPerLevel: adaptive takes each layer's fastest runnable version per level, fixed its best-quiet one", () => {
  const table = (m: Manifest) =>
    modelLatencyPerLevel(m).map((r) => [r.level, r.policy === ADAPTIVE_POLICY ? 'a' : r.policy === FIXED_POLICY ? 'f' : '?', r.latencyMs]);
  // conv layers ×2: adaptive min(v1, v2) = 0.9, 1.2, 1.7; fixed = best-quiet v2 (listed second) = 0.9, 1.6, 1.7;
  // dense 0.5, 0.6, 0.7
  assert.deepEqual(table(plotManifest()), [
    [0, 'a', 2.3],
    [0, 'f', 2.3],
    [1, 'a', 3.0],
    [1, 'f', 3.8],
    [2, 'a', 4.1],
    [2, 'f', 4.1],
  ]);

  const m = plotManifest();
  const notInPlan = { ...m, layers: m.layers.map((l) => ({ ...l, versions: l.versions.map((v, i) => ({ ...v, inPlan: i === 0 })) })) };
  assert.deepEqual(
    table(notInPlan),
    [
      [0, 'a', 2.5],
      [0, 'f', 2.5],
      [1, 'a', 3.0],
      [1, 'f', 3.0],
      [2, 'a', 8.7],
      [2, 'f', 8.7],
    ],
    'a version the plan cannot run is not picked',
  );

  const missing = {
    ...m,
    layers: m.layers.map((l) =>
      l.index !== 3 ? l : { ...l, versions: l.versions.map((v) => ({ ...v, latencyMs: { '0': 0.5, '1': 0.6 } })) },
    ),
  };
  assert.deepEqual(
    table(missing).map((r) => r[0]),
    [0, 0, 1, 1],
    'a level some layer lacks is left out, not summed over fewer layers',
  );

  // A faster quiet version at another thread count (every core: no noisy figure) changes nothing:
  // the rows come from the count measured at every level.
  const wide = {
    ...m,
    layers: m.layers.map((l) =>
      !l.tunable
        ? l
        : { ...l, versions: [...l.versions, { ...l.versions[0]!, threads: l.versions[0]!.threads + 1, latencyMs: { '0': 0.01 } }] },
    ),
  };
  assert.deepEqual(table(wide), table(plotManifest()), 'versions of another thread count are not mixed in');
});

test('--layer accepts an index or an exact name; anything else is one BAD_ARGUMENT naming the layer and the tunable count', () => {
  const m = plotManifest();
  assert.equal(resolveLayer(m, '0').index, 0);
  assert.equal(resolveLayer(m, 'conv,b').index, 2);
  assert.equal(resolveLayer(m, NASTY_NAME).index, 3);
  const fails = (idText: string, mentions: readonly RegExp[]) => {
    assert.throws(
      () => resolveLayer(m, idText),
      (e: unknown) => {
        assert.ok(isVeltairError(e));
        assert.equal(e.code, 'BAD_ARGUMENT');
        assert.equal(e.exitCode, 1);
        for (const re of mentions) assert.match(e.message, re);
        assert.match(e.hint, /0, 2, 3/);
        return true;
      },
    );
  };
  fails('1', [/layer 1/, /relu/, /not tune/, /3 tunable layers of 4/]);
  fails('relu', [/not tune/]);
  fails('9', [/"9"/, /neither a layer index nor a layer name/, /3 tunable layers of 4/]);
  fails('conv', [/"conv"/]);
  const twins = { ...m, layers: m.layers.map((l) => (l.index === 2 ? { ...l, name: 'conv_a' } : l)) };
  assert.throws(() => resolveLayer(twins, 'conv_a'), /names 2 layers \(0, 2\)/);
});

test("CSV export round-trips names with commas, quotes, newlines and markup; every record has the header's width", () => {
  const m = plotManifest();
  const records = parseCsv(figureDataCsv(modelFigureData(m)));
  const [header, ...body] = records;
  assert.deepEqual(header!.slice(0, 5), ['panel', 'layer', 'name', 'op', 'versions']);
  for (const r of records) assert.equal(r.length, header!.length);
  const named = body.filter((r) => r[0] === 'versionsPerLayer').map((r) => r[header!.indexOf('name')]);
  assert.deepEqual(named, ['conv_a', 'conv,b', NASTY_NAME]);
  assert.equal(body.filter((r) => r[0] === 'latencyPerLevel').length, modelLatencyPerLevel(m).length);

  const layer = parseCsv(figureDataCsv(layerFigureData(m, plotProfiles(), 0)));
  const col = (name: string) => layer[0]!.indexOf(name);
  const candidates = layer.filter((r) => r[0] === 'candidates');
  assert.equal(candidates.length, 4);
  assert.deepEqual(
    candidates.map((r) => r[col('versionLabel')]),
    ['v1', '', '', 'v2'],
  );
  assert.equal(candidates[2]![col('latencyQuietMs')], '', 'a missing latency is an empty cell, not "null"');
  assert.equal(csvField('a"b'), '"a""b"');
  assert.equal(csvField('plain'), 'plain');
});

test('CSV cells a spreadsheet would run as formulas get a leading quote (OWASP); numbers stay numbers', () => {
  assert.equal(csvField('=HYPERLINK("http://x","y")'), '"\'=HYPERLINK(""http://x"",""y"")"');
  for (const s of ['+1+1', '-2+3', '@SUM(A1)', '\tx', '\rx']) assert.equal(csvField(s).replace(/^"/, '')[0], "'", JSON.stringify(s));
  assert.equal(csvField(-0.5), '-0.5', 'a negative number is not a formula');
  assert.equal(csvField('a=b'), 'a=b', 'only the first character matters');
  const m = plotManifest();
  const named = { ...m, layers: m.layers.map((l, i) => (i === 0 ? { ...l, name: "=cmd|'/c calc'!A0" } : l)) };
  const rows = parseCsv(figureDataCsv(modelFigureData(named)));
  const name = rows[0]!.indexOf('name');
  assert.ok(
    rows.slice(1).every((r) => !/^[=+\-@]/.test(r[name] ?? '')),
    'no cell of a model-supplied name starts a formula',
  );
  assert.ok(rows.some((r) => r[name] === "'=cmd|'/c calc'!A0"));
});

test('JSON export: {figure, layer, panels} with the same rows', () => {
  const d = JSON.parse(figureDataJson(layerFigureData(plotManifest(), plotProfiles(), 3)));
  assert.deepEqual(Object.keys(d), ['figure', 'layer', 'panels']);
  assert.equal(d.figure, 'layer');
  assert.equal(d.layer.name, NASTY_NAME);
  assert.deepEqual(Object.keys(d.panels), ['candidates', 'latencyByLevel']);
  assert.equal(d.panels.candidates.length, 2);
});

test('figureText: control characters, line breaks and lone surrogates cannot reach the SVG; long names are cut', () => {
  assert.equal(figureText('a\nb\u0001c\ud800d'), 'a b\ufffdc\ufffdd');
  assert.equal(figureText('x'.repeat(100), 10), 'x'.repeat(10) + '…');
  assert.equal(figureText('😀ok'), '😀ok', 'a surrogate pair is kept');
});
