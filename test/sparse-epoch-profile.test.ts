/**
 * The epoch profile (src/sparse/epoch-breakdown.ts): the passes' wall time shared out to their phases by the
 * threads' seconds, the other steps as measured, the rest "other", so the parts add up to the epoch; and a
 * trained epoch carries one whose parts add up to its seconds. No time is asserted, only the accounting.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PASS_PHASES, WALL_STEPS, epochProfile } from '../src/sparse/epoch-breakdown.js';
import { createTrainer } from '../src/sparse/trainer.js';
import { denseLayer, randomRows, settings, sparseLayer, xcFromRows } from './sparse-fixture.js';

test('epochProfile shares the passes\' wall time by thread-seconds and puts the rest in "other"', () => {
  const raw = new Float64Array(PASS_PHASES.length + WALL_STEPS.length);
  raw[PASS_PHASES.indexOf('outputForward')] = 3; // thread-seconds, 2 threads
  raw[PASS_PHASES.indexOf('sample')] = 1;
  raw[PASS_PHASES.length + WALL_STEPS.indexOf('pass')] = 2.5; // wall: 5 thread-seconds of capacity, 4 busy
  raw[PASS_PHASES.length + WALL_STEPS.indexOf('index')] = 1;
  const p = epochProfile(raw, 4, 2);
  assert.equal(p.parts.outputForward, 1.5);
  assert.equal(p.parts.sample, 0.5);
  assert.equal(p.parts.passIdle, 0.5);
  assert.equal(p.parts.index, 1);
  assert.equal(p.parts.other, 0.5);
  assert.equal(
    Object.values(p.parts).reduce((a, v) => a + v, 0),
    4,
  );
});

test("a trained epoch's profile: every part finite and non-negative, adding up to the epoch", async () => {
  const rows = randomRows(200, 30, 400, 4, 9);
  const data = xcFromRows(rows);
  const layers = [denseLayer(0, 30, 16, 'relu'), sparseLayer(1, 16, 400, 'softmax', 0.05, 'dwta', 4, 8, 8)];
  const trainer = await createTrainer(layers, settings({ threads: 2, batch: 32 }), data);
  const t = await trainer.trainEpoch();
  trainer.close();
  const parts = Object.values(t.profile.parts);
  assert.ok(
    parts.every((v) => Number.isFinite(v) && v >= 0),
    JSON.stringify(t.profile.parts),
  );
  const sum = parts.reduce((a, v) => a + v, 0);
  assert.ok(Math.abs(sum - t.seconds) <= 1e-9 * Math.max(1, t.seconds) || sum >= t.seconds, `parts ${sum} vs epoch ${t.seconds}`);
  assert.equal(t.profile.seconds, t.seconds);
});
