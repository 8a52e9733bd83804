import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calibrate, defaultProbeSizes, type ProbeCalibration } from '../src/interference/calibrate.js';
import { calibrationTable } from '../src/cli/noise.js';
import { availableCores } from '../src/toolchain/cpu.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'veltair-calibrate-test-'));
after(() => rmSync(cacheDir, { recursive: true, force: true }));
const MiB = 1 << 20;

function checkProbe(p: ProbeCalibration, rounds: number): void {
  assert.equal(p.samples.length, rounds);
  assert.equal(p.quietMedianMs.length, rounds);
  assert.equal(p.noisyMedianMs.length, rounds);
  for (const r of p.samples) assert.ok(r > 0 && Number.isFinite(r));
  for (const share of [...p.quietCpuShare, ...p.noisyCpuShare]) assert.ok(share > 0 && share <= 1.05, `cpu share ${share}`);
  assert.ok(p.minRatio <= p.medianRatio && p.medianRatio <= p.maxRatio);
  // Each ratio is its own round's noisy median over its own round's quiet median.
  p.samples.forEach((r, i) => assert.ok(Math.abs(r - p.noisyMedianMs[i]! / p.quietMedianMs[i]!) < 1e-9));
}

test('a tiny calibration run returns paired ratios per level and probe', async () => {
  const rounds = 2;
  const result = await calibrate({
    rounds,
    levels: [1, 4],
    cacheDir,
    probeMs: { cache: 10, l3: 10, stream: 20 },
    probeSizes: { cacheBytes: 64 * 1024, l3Bytes: 2 * MiB, streamBytes: 16 * MiB },
    settingsFor: (level) => ({
      randomBytes: 2 * MiB,
      streamBytes: level === 4 ? 8 * MiB : 0,
      streamMode: level === 4 ? 'nt' : 'none',
      streamChunkBytes: MiB,
      randomOpsPerTurn: 256,
      cappedByMemory: false,
    }),
  });
  assert.equal(result.rounds, rounds);
  assert.equal(result.machine.cores, availableCores().length);
  assert.ok(result.machine.l3Bytes > 0);
  assert.ok(!result.machine.noiseCores.includes(result.machine.kernelCore), 'probe and noise never share a core');
  assert.deepEqual(
    result.levels.map((l) => l.level),
    [1, 4],
  );
  for (const level of result.levels) {
    checkProbe(level.cacheProbe, rounds);
    checkProbe(level.l3Probe, rounds);
    checkProbe(level.streamProbe, rounds);
    assert.ok(level.noise.randomMopsPerSecond > 0, 'the co-runner reported its own work');
  }
  assert.equal(result.levels[0]!.noise.streamGBps, 0, 'level 1 settings stream nothing');
  assert.ok(result.levels[1]!.noise.streamGBps > 0);
  const table = calibrationTable(result);
  assert.match(table, /level\s+cache probe/);
  assert.equal(table.split('\n').filter((l) => /^[14]\s/.test(l)).length, 2);
});

test('default probe sizes: cache probe fits L2, stream probe far exceeds a 32 MiB L3', () => {
  const s = defaultProbeSizes(32 * MiB);
  assert.ok(s.cacheBytes <= 512 * 1024);
  assert.ok(s.l3Bytes > 1 * MiB && s.l3Bytes < 32 * MiB);
  assert.ok(s.streamBytes >= 8 * 32 * MiB);
});
