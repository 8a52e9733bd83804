/**
 * `veltair calibrate-serving`: a real server of real bundles answers timed requests, and the file it
 * writes is a calibration that `veltair simulate --calibration` accepts; bad arguments are refused
 * before any server starts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readCalibration } from '../src/simulate/calibration.js';
import { assertOneClearError, veltair } from './compile-fixture.js';
import { compileModels } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-calibrate-serving-'));
after(() => rmSync(root, { recursive: true, force: true }));

test(
  'calibrate-serving serves the bundles, times requests and writes a calibration the simulator reads',
  { timeout: 300_000 },
  async () => {
    const bundles = await compileModels(root, ['tiny', 'embed']);
    const out = join(root, 'calibration.json');
    const r = await veltair([
      'calibrate-serving',
      bundles['tiny']!,
      bundles['embed']!,
      '-o',
      out,
      '--requests',
      '4',
      '--cores',
      '0',
      '--json',
    ]);
    assert.equal(r.exitCode, 0, r.stderr);
    const cal = readCalibration(out);
    assert.deepEqual(JSON.parse(r.stdout), cal, '--json prints what was written');
    assert.equal(cal.frontEnd.length, 2, 'one front-end point per distinct tensor size');
    assert.ok(cal.frontEnd[0]!.bytes < cal.frontEnd[1]!.bytes);
    assert.ok(cal.command.startsWith('veltair calibrate-serving'));
    assert.ok(cal.eventLoopUsPerBlock >= 0 && cal.blockDispatchUs >= 0);
  },
);

test('calibrate-serving refuses a path that is not a bundle, and a missing -o, with one clear line', { timeout: 60_000 }, async () => {
  assertOneClearError(await veltair(['calibrate-serving', join(root, 'nothing'), '-o', join(root, 'x.json')]), 'BAD_ARGUMENT', [
    'not a bundle directory',
  ]);
  const noOut = await veltair(['calibrate-serving', root]);
  assert.equal(noOut.exitCode, 1);
  assert.match(noOut.stderr, /--output/);
});
