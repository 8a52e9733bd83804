/**
 * `veltair profile` through the real binary on a tiny compiled model: every version of every
 * tunable step and every other step gets a measured figure at each condition; the file is the
 * documented format, beside the bundle, and `veltair simulate` takes the bundle directory.
 * (Figures are not checked for speed: only that they exist, are positive and are labelled.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeModel } from '../src/onnx/encode.js';
import { parseProfile } from '../src/schedule/scheduling-profile.js';
import { assertOneClearError, compileFixture, tinyModelSpec, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-profile-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));
const model = join(root, 'tiny.onnx');
const bundle = join(root, 'tiny.bundle');
const twoCores = availableParallelism() >= 2;

before(async () => {
  writeFileSync(model, encodeModel(tinyModelSpec()));
  await compileFixture(model, {
    output: bundle,
    db: join(root, 'db'),
    trials: 2,
    levels: [0],
    maxVersions: 2,
    threads: [1],
    profileThreads: [],
  });
});

test('profile measures every step and version at each condition and writes the profile beside the bundle', async () => {
  const levels = twoCores ? '0,1' : '0';
  const r = await veltair(['profile', bundle, '--cores', '1', '--levels', levels, '--rounds', '2', '--runs', '1', '--json']);
  assert.equal(r.exitCode, 0, r.stderr);
  const summary = JSON.parse(r.stdout);
  const file = join(root, 'tiny.profile.json');
  assert.equal(summary.output, file);
  const p = parseProfile(readFileSync(file, 'utf8'), file);
  assert.equal(p.model.name, 'tiny');
  assert.match(p.model.manifestSha256 ?? '', /^[0-9a-f]{64}$/);
  assert.ok(p.steps.some((s) => s.kind === 'tunable') && p.steps.some((s) => s.kind !== 'tunable'), 'kernels and the other steps');
  for (const s of p.steps) {
    for (const v of s.versions) {
      for (const l of levels.split(',')) {
        const f = v.latencyUs['1']?.[l];
        assert.ok(f && f.us > 0 && f.source === 'measured' && f.repeats! >= 2, `step ${s.index} version ${v.id} at level ${l}`);
      }
    }
  }
  if (twoCores) {
    const l1 = p.levels.find((l) => l.level === 1)!;
    assert.ok(l1.coRunnerGBps !== null && l1.coRunnerBytes! > 0, "the co-runner's own traffic is recorded for the simulator");
  }
  const sim = await veltair([
    'simulate',
    '--profiles',
    bundle,
    '--models',
    'tiny',
    '--qos',
    'tiny=5',
    '--cores',
    '4',
    '--policy',
    'fcfs,veltair',
    '--load',
    '0.2',
    '--duration',
    '0.5',
    '--warmup',
    '0.1',
    '--json',
  ]);
  assert.equal(sim.exitCode, 0, sim.stderr);
  assert.ok(JSON.parse(sim.stdout).models[0].figures.measured > 0);
  // The profile exists now: another run needs --force.
  assertOneClearError(await veltair(['profile', bundle, '--cores', '1', '--levels', '0']), 'OUTPUT_EXISTS');
});

test('profile: bad input is one clear error line and exit 1', async () => {
  assertOneClearError(
    await veltair(['profile', bundle, '--cores', String(availableParallelism() + 1), '-o', join(root, 'x.json')]),
    'BAD_ARGUMENT',
    ['--cores'],
  );
  assertOneClearError(await veltair(['profile', bundle, '--levels', '0,5', '-o', join(root, 'x.json')]), 'BAD_ARGUMENT', ['"5"']);
  assertOneClearError(await veltair(['profile', bundle, '--cores', '0', '-o', join(root, 'x.json')]), 'BAD_ARGUMENT', ['--cores "0"']);
  assertOneClearError(await veltair(['profile', join(root, 'nowhere'), '-o', join(root, 'x.json')]), 'FILE_NOT_FOUND');
  assertOneClearError(await veltair(['profile', bundle, '-o', join(root, 'x.txt')]), 'BAD_ARGUMENT', ['.txt']);
  assert.equal(existsSync(join(root, 'x.json')), false, 'nothing written on a refusal');
});
