/**
 * Portable bundles: `--isa x86-64-v3` builds the kernels for that level, the bundle requires
 * exactly that level's extensions (not every flag of the build CPU), and it loads on any CPU of
 * the level — here, a CPU faked to have only those flags — and computes what ONNX Runtime does. A
 * native bundle requires what -march=native lets the compiler use. A level this CPU cannot run is
 * refused before measuring anything; a bundle whose required extensions this CPU lacks is refused
 * at load with one clear error.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Manifest } from '../src/bundle/manifest.js';
import { readBundle } from '../src/bundle/read.js';
import { isVeltairError } from '../src/errors.js';
import { encodeModel } from '../src/onnx/encode.js';
import { loadBundle } from '../src/runtime/session.js';
import { cpuInfo } from '../src/toolchain/cpu.js';
import { missingForLevel, requiredIsaFor } from '../src/toolchain/isa.js';
import { writeFakeBundle } from './bundle-fixture.js';
import { assertOneClearError, tinyModelSpec, veltair } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';
import { assertClose, ortRun } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-isa-'));
after(() => rmSync(root, { recursive: true, force: true }));
const model = join(root, 'tiny.onnx');
before(() => writeFileSync(model, encodeModel(tinyModelSpec())));

const compile = (out: string, isa: string) =>
  veltair([
    'compile',
    model,
    '-o',
    out,
    '--isa',
    isa,
    '--trials',
    '1',
    '--levels',
    '0',
    '--max-versions',
    '1',
    '--profile-threads',
    'none',
    '--db',
    join(root, `db-${isa}`),
    '--json',
  ]);
const manifestOf = (bundle: string) => JSON.parse(readFileSync(join(bundle, 'manifest.json'), 'utf8')) as Manifest;

test(
  "--isa x86-64-v3: kernels built for the level, the level's extensions required, runs on any CPU of it",
  { timeout: 300_000 },
  async () => {
    const bundle = join(root, 'v3.bundle');
    const r = await compile(bundle, 'x86-64-v3');
    const missing = missingForLevel('x86-64-v3');
    if (missing.length > 0) {
      // This CPU cannot run the level (listed or probed): building for it is refused, naming what it lacks.
      assertOneClearError(r, 'BAD_ARGUMENT', ['x86-64-v3', missing[0]!]);
      return;
    }
    assert.equal(r.exitCode, 0, r.stderr);
    const m = manifestOf(bundle);
    assert.ok(m.target.spec.cflags.includes('-march=x86-64-v3'));
    assert.match(readFileSync(join(bundle, 'kernels', 'kernels.c'), 'utf8'), /-march=x86-64-v3/);
    assert.deepEqual(m.target.requiredIsa, requiredIsaFor('x86-64-v3'));
    // Flags this machine's cpuinfo hides but its CPU runs (abm on a Zen 5 VM) are named as probed.
    assert.deepEqual(
      m.target.probedIsa,
      m.target.requiredIsa.filter((f) => cpuInfo().probed[f] === true),
    );
    assert.ok(!m.target.requiredIsa.some((f) => /^(sse4a|clzero|avx512)/.test(f)), 'no vendor-only or AVX-512 flag');
    assert.equal(m.graphPlan.vectorWidth, 8);
    // Another vendor's CPU of the same level: exactly the level's flags.
    const other = new Set(requiredIsaFor('x86-64-v3'));
    await readBundle(bundle, { cpuFlags: other, cpuModel: 'Some Intel CPU' });
    const s = await loadBundle(bundle);
    try {
      const x = seeded(192, 3, -1, 1);
      const got = (await s.run({ input: x }))['output']!.data as Float32Array;
      assertClose(got, (await ortRun(model, { input: { dtype: 'float32', shape: [1, 3, 8, 8], data: x } }))['output']!, 'x86-64-v3 bundle');
    } finally {
      s.close();
    }
  },
);

test(
  'a native bundle requires what -march=native lets the compiler use, and a CPU without one of them refuses it',
  { timeout: 300_000 },
  async () => {
    const bundle = join(root, 'native.bundle');
    const r = await compile(bundle, 'native');
    assert.equal(r.exitCode, 0, r.stderr);
    const m = manifestOf(bundle);
    const mine = cpuInfo().flags;
    assert.ok(m.target.requiredIsa.length > 0 && m.target.requiredIsa.every((f) => mine.has(f)));
    assert.ok(m.target.requiredIsa.includes(mine.has('avx512f') ? 'avx512f' : 'avx2'));
    const lacking = new Set(m.target.requiredIsa.slice(1));
    await assert.rejects(
      readBundle(bundle, { cpuFlags: lacking }),
      (e: unknown) => isVeltairError(e) && e.code === 'TARGET_MISMATCH' && e.message.includes(m.target.requiredIsa[0]!),
    );
  },
);

test('a level this CPU cannot run is refused before measuring; an unknown level too', async () => {
  const v4 = await compile(join(root, 'v4.bundle'), 'x86-64-v4');
  const missing = missingForLevel('x86-64-v4');
  if (missing.length > 0) assertOneClearError(v4, 'BAD_ARGUMENT', ['x86-64-v4', missing[0]!]);
  else assert.equal(v4.exitCode, 0, v4.stderr);
  assertOneClearError(await compile(join(root, 'x.bundle'), 'pentium'), 'BAD_ARGUMENT', ['--isa']);
});

test('running a bundle whose required extensions this CPU lacks is one clear error', async () => {
  // An extension this CPU lacks, whichever vendor it is: AMX on AMD, AMD's XOP/FMA4/SSE4a on Intel.
  const lacking = ['amx_tile', 'xop', 'fma4', 'sse4a', 'avx512_vp2intersect'].find((f) => !cpuInfo().flags.has(f));
  assert.ok(lacking, 'this CPU has every candidate extension: add one it lacks');
  const fake = join(root, 'lacking.bundle');
  writeFakeBundle(fake, (m) => ({ ...m, target: { ...m.target, requiredIsa: [lacking, 'avx2'] } }));
  assertOneClearError(await veltair(['run', fake, '--input', `x=${join(root, 'none.npy')}`]), 'TARGET_MISMATCH', [lacking]);
});
