/**
 * pair-bundles' interference layout: kernels on the first cores, the co-runner on the rest, and a
 * clear refusal where no core is left for it or the level does not exist.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pairedNoisePlan } from '../src/bench/paired-noise.js';
import { VeltairError } from '../src/errors.js';

test('a co-runner gets the cores the kernel threads leave free', () => {
  const p = pairedNoisePlan(1, 3, [4, 5, 6]);
  assert.deepEqual(p.kernelCores, [4]);
  assert.deepEqual(p.noiseCores, [5, 6]);
  assert.equal(p.level, 3);
  assert.deepEqual(pairedNoisePlan(2, 1, [0, 1, 2]).noiseCores, [2]);
});

test('quiet pairing starts no co-runner, even with every core taken', () => {
  const p = pairedNoisePlan(2, 0, [0, 1]);
  assert.deepEqual(p.kernelCores, [0, 1]);
  assert.deepEqual(p.noiseCores, []);
});

test('a level with no core left for its co-runner is refused with a hint', () => {
  assert.throws(
    () => pairedNoisePlan(2, 3, [0, 1]),
    (e: unknown) => e instanceof VeltairError && /--noise 3 needs a core/.test(e.message) && /--threads 1/.test(e.hint),
  );
  assert.throws(
    () => pairedNoisePlan(1, 2, [0]),
    (e: unknown) => e instanceof VeltairError && /second core/.test(e.hint),
  );
});

test('a level that does not exist, or too many threads, is a user error', () => {
  assert.throws(
    () => pairedNoisePlan(1, 7, [0, 1]),
    (e: unknown) => e instanceof VeltairError && /level 7/.test(e.message),
  );
  assert.throws(
    () => pairedNoisePlan(3, 0, [0, 1]),
    (e: unknown) => e instanceof VeltairError && /--threads 3/.test(e.message),
  );
});
