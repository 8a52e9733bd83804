import test from 'node:test';
import assert from 'node:assert/strict';
import { isVeltairError } from '../src/errors.js';
import { buildModelTable, latAt } from '../src/schedule/model-table.js';
import { parseProfile, profileText, type Profile } from '../src/schedule/scheduling-profile.js';
import { chunkShare, fitConstants, fitStep, predictStep } from '../src/schedule/scaling.js';
import { checkPrediction } from '../src/schedule/scaling-check.js';
import { handProfile, JAGGED, NO_SCALING } from './schedule-fixture.js';

const base = () => JSON.parse(profileText(handProfile('m', JAGGED.slice(0, 3), 4))) as Profile & Record<string, unknown>;
const refused = (value: unknown, field: RegExp) =>
  assert.throws(
    () => parseProfile(JSON.stringify(value), 'p.json'),
    (e) => isVeltairError(e) && e.code === 'BAD_PROFILE' && /^p\.json: /.test(e.message) && field.test(e.message),
  );

test('a profile round-trips through its text; bad ones are refused naming the field', () => {
  const p = base();
  assert.deepEqual(parseProfile(profileText(p), 'p.json'), p);
  refused({ ...p, formatVersion: '2.0.0' }, /\/formatVersion is 2\.0\.0/);
  refused({ ...p, extra: 1 }, /"extra"/);
  refused({ ...p, steps: [p.steps[1], p.steps[0]] }, /\/steps\/0\/index/);
  const noQuiet = structuredClone(p);
  for (const byLevel of Object.values(noQuiet.steps[0]!.versions[0]!.latencyUs)) delete (byLevel as Record<string, unknown>)['0'];
  refused(noQuiet, /\/steps\/0\/versions\/0\/latencyUs has no level-0/);
  const badSource = structuredClone(p);
  (badSource.steps[0]!.versions[0]!.latencyUs['1']!['0'] as { source: string }).source = 'guessed';
  refused(badSource, /\/steps\/0\/versions\/0\/latencyUs\/1\/0\/source/);
  assert.throws(() => parseProfile('{', 'p.json'), /not valid JSON/);
});

test('the scaling model: chunks cap useful cores, two points fix the serial part, memory caps the speed-up', () => {
  assert.equal(chunkShare(1, 4), 1);
  assert.equal(chunkShare(4, 4), 0.25);
  assert.equal(chunkShare(64, 4), 0.25, 'four chunks: no use for a fifth core');
  assert.equal(chunkShare(3, 4), 0.5, 'four chunks on three threads: one thread runs two');
  const k = { ...NO_SCALING, forkJoinUs: 0 };
  const fit = fitStep(
    [
      { cores: 1, us: 1000 },
      { cores: 2, us: 600 },
    ],
    null,
    0,
    k,
  );
  assert.ok(Math.abs(fit.a - 200) < 1e-6 && Math.abs(fit.w - 800) < 1e-6, `a ${fit.a}, w ${fit.w}`);
  assert.ok(Math.abs(predictStep(fit, 8, k) - 300) < 1e-6);
  // One core count only: the serial-fraction prior splits it.
  const one = fitStep([{ cores: 1, us: 1000 }], 64, 0, { ...k, serialFraction: 0.1 });
  assert.ok(Math.abs(predictStep(one, 4, { ...k, serialFraction: 0.1 }) - (100 + 900 / 4)) < 1e-6);
  // 1 MB moved at ≤ 10 GB/s: never below 100 µs however many cores.
  const mem = fitStep([{ cores: 1, us: 1000 }], null, 1e6, k);
  assert.ok(Math.abs(predictStep(mem, 64, { ...k, memoryGBps: 10 }) - 100) < 1e-6);
  // The fork/join cost and serial fraction are recovered from a synthetic many-core profile.
  const rows = [3000, 5000, 9000].map((w) => [8, 16, 32, 56].map((c) => ({ cores: c, us: 20 + w / c + 3 * Math.log2(c) })));
  const c = fitConstants(rows);
  assert.equal(c.forkJoinUs, 3);
  assert.ok(c.medianRelError < 1e-9);
});

test('units: a tunable step carries the non-tunable steps after it; held-out core counts are modelled and checked', () => {
  const p = base();
  const op = { ...p.steps[0]!, kind: 'op' as const, name: 'relu', versions: [p.steps[0]!.versions[0]!] };
  const withOp: Profile = { ...p, steps: [p.steps[0]!, { ...op, index: 1 }, { ...p.steps[1]!, index: 2 }, { ...p.steps[2]!, index: 3 }] };
  const t = buildModelTable(withOp, { maxCores: 4, scaling: NO_SCALING });
  assert.deepEqual(
    t.units.map((u) => [u.firstStep, u.lastStep]),
    [
      [0, 1],
      [2, 2],
      [3, 3],
    ],
  );
  assert.ok(Math.abs(latAt(t.units[0]!, 4, 0, 1, 0) - 2) < 1e-9, 'kernel 1 ms + its trailing op 1 ms');
  const held = buildModelTable(p, { maxCores: 4, scaling: { ...NO_SCALING, serialFraction: 0 }, useCores: [1] });
  assert.ok(Math.abs(latAt(held.units[0]!, 4, 0, 2, 0) - 0.5) < 1e-9, 'predicted from one core');
  assert.ok(held.sources.modelled > 0);
  const check = checkPrediction(p, { ...NO_SCALING, serialFraction: 0 });
  assert.ok(check && check.medianAbsError < 1e-9, 'hand profile scales perfectly: predicted exactly');
  const rep = buildModelTable(p, { maxCores: 4, scaling: NO_SCALING, repeat: 3, scale: 2 });
  assert.equal(rep.units.length, 9);
  assert.ok(Math.abs(latAt(rep.units[4]!, 4, 0, 1, 0) - 2) < 1e-9);
});
