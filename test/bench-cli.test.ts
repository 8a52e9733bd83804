/**
 * `veltair bench` through the real binary: the --json contract (one result per condition with
 * medians, paired ratios and every sample, quiet and under the noise generator, all three arms in
 * one run), the model lookup (recorded basename beside the bundle, else --model, checked by
 * sha256), and one clear error line for bad input.
 */
import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { encodeModel } from '../src/onnx/encode.js';
import { assertOneClearError, compileFixture, tinyModelSpec, veltair } from './compile-fixture.js';
import { writeFakeBundle } from './bundle-fixture.js';
import { cpuInfo } from '../src/toolchain/cpu.js';
import { nativeRequiredIsa } from '../src/toolchain/isa.js';
import type { Manifest } from '../src/bundle/manifest.js';
import { generateSigningKeys, signBundleDir } from '../src/bundle/sign.js';

/** The fixture bundle, claiming this machine's CPU and instruction sets (no "tuned on another CPU" warning line). */
const onThisCpu = (m: Manifest): Manifest => ({
  ...m,
  target: { ...m.target, spec: { ...m.target.spec, cpuModel: cpuInfo().model }, requiredIsa: nativeRequiredIsa() },
});

const root = mkdtempSync(join(tmpdir(), 'veltair-bench-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));
const model = join(root, 'tiny.onnx');
writeFileSync(model, encodeModel(tinyModelSpec()));

test('bench --json: quiet and level-1 noise, adaptive, fixed and ORT medians with every sample', { timeout: 240_000 }, async () => {
  const bundle = join(root, 'tiny.bundle');
  await compileFixture(model, { output: bundle, trials: 2, levels: [0, 1], threads: [1], profileThreads: [], db: join(root, 'db') });
  // The recorded model (tiny.onnx) sits beside the bundle: no --model needed.
  const r = await veltair(['bench', bundle, '--threads', '1', '--noise', '1', '--rounds', '2', '--runs', '3', '--json']);
  assert.equal(r.exitCode, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.threads, 1);
  assert.equal(out.proxy.calibrated, false, 'no --calibrate-proxy: the bundle has no coefficients');
  assert.match(r.stderr, /no fitted interference proxy/);
  assert.deepEqual(
    out.results.map((c: { noise: number }) => c.noise),
    [0, 1],
  );
  for (const c of out.results) {
    for (const k of ['veltairMs', 'veltairFixedMs', 'ortMs', 'ratioVsOrt', 'adaptiveVsFixed', 'fixedVsOrt'])
      assert.ok(c[k] > 0, `${k} = ${c[k]}`);
    assert.equal(c.threads, 1);
    for (const arm of ['veltair', 'veltairFixed', 'ort']) assert.equal(c.samples[arm].length, 2 * 3, `${arm}: rounds × runs samples`);
    const sorted = [...c.samples.ort].sort((a: number, b: number) => a - b);
    // Interpolated as lo + (hi − lo)/2, which can differ from (lo + hi)/2 in the last bit.
    assert.ok(Math.abs(c.ortMs - (sorted[2] + sorted[3]) / 2) <= 1e-12 * c.ortMs, `ortMs ${c.ortMs} is the median of its samples`);
    assert.deepEqual(c.predictedLevels, { 0: 2 * 4 }, 'uncalibrated, adaptive stays at level 0 (warm-up + runs, every round)');
  }
  assert.ok(out.decisionCost.decisions > 0);
});

test('bench refuses a bundle whose model cannot be found, a --model that is another model, and bad flags', async () => {
  const fake = join(root, 'fake', 'b.bundle');
  mkdirSync(join(root, 'fake'));
  writeFakeBundle(fake, onThisCpu);
  assertOneClearError(await veltair(['bench', fake]), 'BAD_ARGUMENT', ['tiny.onnx']);
  const other = join(root, 'other.onnx');
  copyFileSync(model, other);
  assertOneClearError(await veltair(['bench', fake, '--model', other]), 'BAD_ARGUMENT', ['sha256']);
  assertOneClearError(await veltair(['bench', fake, '--model', join(root, 'missing.onnx')]), 'BAD_ARGUMENT', ['missing.onnx']);
  assertOneClearError(await veltair(['bench', join(root, 'nowhere')]), 'FILE_NOT_FOUND', ['nowhere']);
});

test('bench flag values are checked before the model is looked at', async () => {
  const fake = join(root, 'flags.bundle');
  writeFakeBundle(fake, onThisCpu);
  assertOneClearError(await veltair(['bench', fake, '--noise', '7']), 'BAD_ARGUMENT', ['--noise']);
  assertOneClearError(await veltair(['bench', fake, '--rounds', '0']), 'BAD_ARGUMENT', ['--rounds']);
  assertOneClearError(await veltair(['bench', fake, '--threads', '999']), 'BAD_ARGUMENT', ['--threads']);
  // Storing a fitted proxy rewrites the manifest: a signed bundle needs its key, and --sign means nothing without --calibrate-proxy.
  const keys = generateSigningKeys();
  const keyFile = join(root, 'bench.key');
  writeFileSync(keyFile, keys.privateKeyPem);
  assertOneClearError(await veltair(['bench', fake, '--sign', keyFile]), 'BAD_ARGUMENT', ['--calibrate-proxy']);
  await signBundleDir(fake, createPrivateKey(keys.privateKeyPem));
  assertOneClearError(await veltair(['bench', fake, '--calibrate-proxy']), 'BAD_ARGUMENT', ['manifest.sig']);
});
