import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { veltair } from './compile-fixture.js';

const sweep = {
  mix: 'het1',
  sweep: { from: 5, to: 10, steps: 2, rates: [5, 10] },
  durationS: 1,
  seed: 1,
  qosMs: { a: 30, b: 6 },
  arms: ['ort', 'veltair'].map((label) => ({
    label,
    url: 'http://127.0.0.1:1',
    points: [5, 10].flatMap((q) =>
      ['a', 'b'].map((model) => ({
        offeredQps: q,
        model,
        achievedQps: q / 2,
        attainment: q === 5 ? 1 : 0.9,
        p99Ms: model === 'a' ? 20 + q : null,
        qosMs: model === 'a' ? 30 : 6,
      })),
    ),
  })),
};

test('veltair load --plot-from draws a saved sweep as SVG and PNG, one curve per arm; a file that is not a sweep is a typed error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-plot-from-'));
  const file = join(dir, 'sweep.json');
  writeFileSync(file, JSON.stringify(sweep));
  const r = await veltair(['load', '--plot-from', file, '--plot', join(dir, 'het1')]);
  assert.equal(r.exitCode, 0, r.stderr);
  for (const f of ['attainment', 'p99']) {
    const svg = readFileSync(join(dir, `het1-${f}.svg`), 'utf8');
    for (const text of ['ort', 'veltair', 'het1']) assert.ok(svg.includes(text), `${f}: ${text}`);
    assert.ok(existsSync(join(dir, `het1-${f}.png`)));
  }
  const again = await veltair(['load', '--plot-from', file, '--plot', join(dir, 'het1')]);
  assert.equal(again.exitCode, 1, 'an existing figure is not replaced without --force');
  assert.match(again.stderr, /OUTPUT_EXISTS/);
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ arms: [{ label: 'x', points: [{ offeredQps: 'no' }] }] }));
  const bad = await veltair(['load', '--plot-from', join(dir, 'bad.json'), '--plot', join(dir, 'bad')]);
  assert.equal(bad.exitCode, 1);
  assert.match(bad.stderr, /BAD_ARGUMENT.*not a saved sweep/);
  const both = await veltair(['load', 'http://127.0.0.1:1', '--plot-from', file, '--plot', join(dir, 'x')]);
  assert.equal(both.exitCode, 1);
  assert.match(both.stderr, /no server URL/);
});
