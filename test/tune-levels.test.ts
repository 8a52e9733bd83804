import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { NoiseSettings } from '../src/interference/levels.js';
import { isRunning, isStopped, measurableLevels, openLevelBank, planCores, threadStates } from '../src/interference/bank.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'veltair-tune-levels-'));
after(() => rmSync(cacheDir, { recursive: true, force: true }));
const MiB = 1 << 20;
const tiny: NoiseSettings = {
  randomBytes: 2 * MiB,
  streamBytes: 4 * MiB,
  streamMode: 'copy',
  streamChunkBytes: MiB,
  randomOpsPerTurn: 256,
  cappedByMemory: false,
};
const gone = (pid: number) => threadStates(pid).length === 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('core plan: kernels on the first cores, co-runners above the largest thread count that leaves a core free', () => {
  const p = planCores([1, 2, 4], [0, 1, 2, 3]);
  assert.equal(p.noisyKernelMaxThreads, 2);
  assert.deepEqual(p.noiseCores, [2, 3]);
  assert.deepEqual(measurableLevels(p, 1, [0, 1, 2]), [0, 1, 2]);
  assert.deepEqual(measurableLevels(p, 4, [0, 1, 2]), [0], 'all cores busy: quiet only');
  assert.deepEqual(measurableLevels(p, 4, [2, 3]), []);
  const full = planCores([2], [0, 1]);
  assert.deepEqual(full.noiseCores, []);
  assert.deepEqual(measurableLevels(full, 2, [0, 1]), [0]);
});

test('the bank keeps every co-runner stopped except the one level being measured, and close leaves none', async () => {
  const bank = await openLevelBank({ levels: [0, 1, 3], plan: planCores([1]), cacheDir, settingsFor: () => tiny });
  const pid = (l: number) => bank.runners.get(l)!.pid;
  try {
    assert.deepEqual(bank.levels, [1, 3]);
    assert.ok(isStopped(pid(1)) && isStopped(pid(3)), 'stopped once ready');
    await bank.activate(1);
    assert.ok(isRunning(pid(1)) && isStopped(pid(3)));
    await bank.activate(3);
    assert.ok(isStopped(pid(1)) && isRunning(pid(3)));
    await bank.activate(0);
    assert.ok(isStopped(pid(1)) && isStopped(pid(3)));
    await bank.activate(1);
    await bank.quiesce();
    assert.ok(isStopped(pid(1)));
    await assert.rejects(bank.activate(2), /no co-runner/);
  } finally {
    await bank.close();
  }
  assert.ok(gone(pid(1)) && gone(pid(3)), 'no co-runner survives close, stopped or not');
});

test('kill -9 of the tuner leaves no stopped co-runner behind (the guard reaps them)', async () => {
  const script = fileURLToPath(new URL('./tune-bank-child.js', import.meta.url));
  const child = spawn(process.execPath, [script, cacheDir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', () => reject(new Error('child exited early')));
  });
  const { pids } = JSON.parse(line) as { pids: number[] };
  assert.equal(pids.length, 2);
  assert.ok(pids.every(isStopped));
  child.kill('SIGKILL');
  for (let i = 0; i < 100 && !pids.every(gone); i++) await sleep(50);
  assert.ok(pids.every(gone), `co-runners still alive: ${pids.filter((p) => !gone(p))}`);
});
