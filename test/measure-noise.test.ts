import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isVeltairError } from '../src/errors.js';
import { LEVELS, resolveLevel, type NoiseSettings } from '../src/interference/levels.js';
import { availableCores, parseCoreList } from '../src/toolchain/cpu.js';
import { noiseCores, startNoise } from '../src/interference/generator.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'veltair-noise-test-'));
after(() => rmSync(cacheDir, { recursive: true, force: true }));

const MiB = 1 << 20;
const tiny: NoiseSettings = {
  randomBytes: 2 * MiB,
  streamBytes: 8 * MiB,
  streamMode: 'nt',
  streamChunkBytes: MiB,
  randomOpsPerTurn: 256,
  cappedByMemory: false,
};
const lastCore = () => {
  const all = availableCores();
  return all[all.length - 1]!;
};

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('noise cores are the complement of the kernel cores', () => {
  assert.deepEqual(noiseCores([0], [0, 1]), [1]);
  assert.deepEqual(noiseCores([0, 1], [0, 1, 2, 3, 4, 5]), [2, 3, 4, 5]);
  assert.deepEqual(noiseCores([3], [5, 3, 1]), [1, 5]);
  assert.deepEqual(noiseCores([0], [0]), []);
});

test('the level table defines levels 1..4 with growing footprints', () => {
  assert.deepEqual(
    LEVELS.map((l) => l.level),
    [1, 2, 3, 4],
  );
  const machine = { l3Bytes: 32 * MiB, memoryBudgetBytes: 64 * 1024 * MiB };
  const footprints = LEVELS.map((l) => {
    const s = resolveLevel(l.level, machine);
    return s.randomBytes + s.streamBytes;
  });
  for (let i = 1; i < footprints.length; i++)
    assert.ok(footprints[i]! > footprints[i - 1]!, `level ${i + 1} must touch more memory than level ${i}`);
  assert.equal(resolveLevel(4, machine).streamMode, 'nt');
});

test('level sizes are capped to the memory budget and say so', () => {
  const s = resolveLevel(4, { l3Bytes: 32 * MiB, memoryBudgetBytes: 100 * MiB });
  assert.ok(s.randomBytes + s.streamBytes <= 100 * MiB);
  assert.equal(s.cappedByMemory, true);
  assert.equal(resolveLevel(1, { l3Bytes: 32 * MiB, memoryBudgetBytes: 100 * MiB }).cappedByMemory, false);
});

test('bad levels and cores are user errors with a hint', async () => {
  for (const level of [0, 5, 2.5]) {
    await assert.rejects(
      startNoise({ level, cores: [lastCore()], cacheDir }),
      (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && e.hint.length > 0,
    );
  }
  await assert.rejects(startNoise({ level: 1, cores: [], cacheDir }), (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT');
  assert.throws(
    () => parseCoreList('1,x', [0, 1]),
    (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT',
  );
  assert.throws(
    () => parseCoreList('1,1', [0, 1]),
    (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT',
  );
  assert.throws(
    () => parseCoreList('9', [0, 1]),
    (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT',
  );
  assert.deepEqual(parseCoreList('1,0', [0, 1]), [1, 0]);
});

test('startNoise waits for the ready line and stop() leaves no process behind', async () => {
  const handle = await startNoise({ level: 4, cores: [lastCore()], settings: tiny, cacheDir });
  assert.equal(handle.level, 'custom');
  assert.equal(handle.ready.threads, 1);
  assert.equal(handle.ready.streamBytes, tiny.streamBytes);
  assert.ok(alive(handle.pid), 'co-runner runs after ready');
  await new Promise((r) => setTimeout(r, 150));
  const stats = await handle.stop();
  assert.ok(stats.seconds > 0);
  assert.ok(stats.streamBytesWritten > 0, 'streamed while running');
  assert.ok(stats.randomOps > 0, 'did random operations while running');
  assert.equal(alive(handle.pid), false, 'process is gone after stop()');
  assert.deepEqual(await handle.stop(), stats, 'stop() is idempotent');
});

test('--seconds ends the co-runner on its own', async () => {
  const handle = await startNoise({
    level: 1,
    cores: [lastCore()],
    seconds: 0.2,
    settings: { ...tiny, streamBytes: 0, streamMode: 'none' },
    cacheDir,
  });
  const stats = await handle.finished;
  assert.ok(stats.seconds >= 0.2 && stats.seconds < 5);
  assert.equal(stats.streamBytesRead, 0);
  assert.equal(alive(handle.pid), false);
});

test('a real level starts with its table settings', async () => {
  const handle = await startNoise({ level: 1, cores: [lastCore()], cacheDir });
  try {
    assert.equal(handle.level, 1);
    assert.equal(handle.settings.streamMode, 'none');
    assert.equal(handle.ready.randomBytes, Math.floor(handle.settings.randomBytes / 64) * 64);
  } finally {
    await handle.stop();
  }
});
