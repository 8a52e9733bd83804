import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isVeltairError } from '../src/errors.js';
import { measurePeakGflops, measurePeakInt8Gops } from '../src/measure/peak.js';
import { cacheDir as defaultCacheDir } from '../src/toolchain/paths.js';
import { ensureTool } from '../src/toolchain/tools.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'veltair-peak-test-'));
after(() => rmSync(cacheDir, { recursive: true, force: true }));

test('the FMA peak probe measures a positive GFLOP/s from its samples', async () => {
  const r = await measurePeakGflops({ threads: 1, reps: 3, ms: 10, cacheDir });
  assert.equal(r.samples.length, 3);
  assert.ok(r.gflopsPerCore > 0 && Number.isFinite(r.gflopsPerCore));
  assert.equal(r.gflops, r.gflopsPerCore, 'one thread: total equals per core');
  assert.ok(['avx512', 'avx2', 'scalar'].includes(r.isa));
  assert.ok(r.accumulators >= 8, 'enough independent accumulators to cover FMA latency');
});

test('the INT8 peak probe measures the dot product the INT8 kernels have here, in GOP/s', async () => {
  const r = await measurePeakInt8Gops({ threads: 1, reps: 3, ms: 10, cacheDir });
  assert.equal(r.samples.length, 3);
  assert.ok(r.gopsPerCore > 0 && Number.isFinite(r.gopsPerCore));
  assert.equal(r.gops, r.gopsPerCore, 'one thread: total equals per core');
  assert.ok(['avx512-vnni', 'avx-vnni', 'avx2', 'scalar'].includes(r.isa), r.isa);
  assert.ok(r.accumulators >= 8, 'enough independent accumulators to cover the dot product latency');
});

test('peak rejects a thread count that does not match the cores', async () => {
  await assert.rejects(
    measurePeakGflops({ threads: 2, cores: [0], cacheDir }),
    (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT',
  );
});

test('tools are compiled once into the content-addressed cache', async () => {
  const first = await ensureTool('peak', { cacheDir });
  const built = statSync(first).mtimeMs;
  const again = await ensureTool('peak', { cacheDir });
  assert.equal(again, first);
  assert.equal(statSync(again).mtimeMs, built, 'not rebuilt');
  assert.ok(first.startsWith(join(cacheDir, 'tools')));
  assert.match(first, /peak-[0-9a-f]{16}$/);
});

test('cache dir: VELTAIR_CACHE_DIR, then XDG_CACHE_HOME, then ~/.cache', () => {
  assert.equal(defaultCacheDir({ VELTAIR_CACHE_DIR: '/x/v', XDG_CACHE_HOME: '/x/xdg' }), '/x/v');
  assert.equal(defaultCacheDir({ XDG_CACHE_HOME: '/x/xdg' }), '/x/xdg/veltair');
  assert.match(defaultCacheDir({}), /\.cache\/veltair$/);
});

test('a missing C compiler is a NO_COMPILER user error', async () => {
  const saved = process.env['CC'];
  process.env['CC'] = 'veltair-no-such-compiler';
  try {
    await assert.rejects(
      ensureTool('probe', { cacheDir: join(cacheDir, 'other') }),
      (e: unknown) => isVeltairError(e) && e.code === 'NO_COMPILER' && e.exitCode === 1,
    );
  } finally {
    if (saved === undefined) delete process.env['CC'];
    else process.env['CC'] = saved;
  }
});
