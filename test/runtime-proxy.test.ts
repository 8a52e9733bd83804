/**
 * The interference proxy on this machine, with the noise generator really running: a tiny model
 * is compiled with every level profiled, the proxy is calibrated on it (co-runners profiled, then
 * features recorded at each level, least squares), its coefficients are stored in the bundle and
 * survive the reader's checks, and then — with the co-runner at each calibrated level in turn —
 * every prediction is a calibrated level and, for whatever level it predicts, every tunable layer
 * runs that level's lowest-profiled version.
 *
 * Honest scope: on this shared 2-core VM one co-runner core moves kernels little and the fit's R²
 * has ranged 0.13–0.88 between runs, so whether the prediction equals the TRUE level is not
 * asserted; the regret of the picks against the true level's oracle (the "within 10%")
 * is printed as a diagnostic and measured on whole models by `veltair bench` (bench/RESULTS.md).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readBundle } from '../src/bundle/read.js';
import { encodeModel } from '../src/onnx/encode.js';
import { openLevelBank } from '../src/interference/bank.js';
import { executorForBundle } from '../src/runtime/bundle-executor.js';
import { modelFeeds } from '../src/bench/feeds.js';
import { InterferenceProxy } from '../src/runtime/proxy.js';
import { profileCoRunners } from '../src/interference/co-runner-profile.js';
import { calibrateProxy, storeProxy } from '../src/bench/proxy-calibrate.js';
import { runtimeCores } from '../src/interference/cores.js';
import { bestVersionAt, pickRegret } from '../src/runtime/version-picker.js';
import { tinyModelSpec, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-proxy-'));
after(() => rmSync(root, { recursive: true, force: true }));
const LEVELS = [0, 1, 2, 3, 4];

test('calibrated on real noise, the proxy stores a fit and picks the oracle version of every level it predicts', { timeout: 300_000 }, async (t) => {
  const t0 = Date.now();
  const model = join(root, 'tiny.onnx');
  const out = join(root, 'tiny.bundle');
  writeFileSync(model, encodeModel(tinyModelSpec()));
  const compiled = await veltair(['compile', model, '-o', out, '--trials', '4', '--levels', LEVELS.join(','), '--threads', '1',
    '--profile-threads', 'none', '--db', join(root, 'db'), '--json']);
  assert.equal(compiled.exitCode, 0, compiled.stderr);
  t.diagnostic(`compiled in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  let bundle = await readBundle(out);
  assert.equal(bundle.manifest.interferenceProxy, undefined, 'compile stores no coefficients it did not fit');

  const cores = runtimeCores(1);
  assert.ok(cores.noiseCores.length > 0, 'the test needs a core for the co-runner');
  const gbps = await profileCoRunners(LEVELS, cores.noiseCores, 0.5);
  t.diagnostic(`co-runners profiled by ${((Date.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify([...gbps])}`);
  assert.ok([1, 2, 3, 4].every((l) => gbps.get(l)! > 0), `every co-runner moved memory: ${JSON.stringify([...gbps])}`);
  // Opened before the runtime addon loads (it binds this thread to the kernel cores).
  const bank = await openLevelBank({ levels: [1, 2, 3, 4], plan: { allCores: cores.allCores, noisyKernelMaxThreads: 1, noiseCores: cores.noiseCores } });
  try {
    // Uncalibrated: the runtime says so and stays at level 0.
    {
      const { executor, translated } = await executorForBundle(bundle, { threads: 1, pinThreads: true });
      const proxy = new InterferenceProxy({
        manifest: bundle.manifest, executor, stepOfPlan: translated.stepOfPlan, threads: 1, kernelCores: cores.kernelCores, allCores: cores.allCores,
      });
      assert.equal(proxy.calibrated, false);
      const d = proxy.decide();
      assert.equal(d.level, 0);
      assert.ok(Number.isNaN(d.continuous));
      proxy.close();
      executor.close();
    }

    const fit = await calibrateProxy(bundle, { threads: 1, cores, bank, coRunnerGBps: gbps, samplesPerVisit: 3 });
    assert.deepEqual(fit.proxy.levels, LEVELS);
    for (const l of LEVELS) assert.equal(fit.proxy.perLevel[String(l)]!.samples, 6, `level ${l}: 3 samples on the way up, 3 on the way down`);
    t.diagnostic(`calibration (s=${((Date.now() - t0) / 1000).toFixed(1)}): ${JSON.stringify(fit.proxy.perLevel)}`);
    t.diagnostic(`system model: ${JSON.stringify(fit.proxy.models.system)}`);
    await storeProxy(bundle, fit.proxy);
    bundle = await readBundle(out);
    assert.deepEqual(bundle.manifest.interferenceProxy, JSON.parse(JSON.stringify(fit.proxy)), 'stored, and the bundle still passes every check');

    const { executor, translated } = await executorForBundle(bundle, { threads: 1, pinThreads: true });
    const proxy = new InterferenceProxy({
      manifest: bundle.manifest, executor, stepOfPlan: translated.stepOfPlan, threads: 1, kernelCores: cores.kernelCores, allCores: cores.allCores,
    });
    try {
      assert.equal(proxy.calibrated, true);
      t.diagnostic(`family sizes: ${proxy.steps.map((s) => s.versions.length).join(', ')}; system fit R² ${fit.proxy.models.system.r2.toFixed(3)}`);
      executor.setProfiling(true);
      const feeds = modelFeeds(bundle.manifest.model.inputs);
      const outs = executor.run(feeds);
      for (const level of LEVELS) {
        await bank.activate(level);
        const predicted: number[] = [];
        const until = Date.now() + 6 * proxy.sampler.refreshMs;
        while (Date.now() < until || predicted.length < 5) {
          const d = proxy.decide();
          executor.run(feeds, outs);
          proxy.observe();
          if (Date.now() >= until - 3 * proxy.sampler.refreshMs) predicted.push(d.level);
        }
        await bank.quiesce();
        // Deterministic: for whatever level it predicts, the picker takes that level's oracle version.
        // Whether the prediction matches the true level depends on how quiet the machine is (on the
        // shared 2-core CI machine the fit's R² has ranged 0.13–0.88), so the regret at the TRUE level
        // is reported, not asserted; `veltair bench` measures it on real runs (bench/RESULTS.md).
        assert.equal(proxy.level, predicted[predicted.length - 1], 'the last decision is the applied level');
        for (const p of new Set(predicted)) {
          assert.ok(LEVELS.includes(p), `prediction ${p} is a calibrated level`);
          const table = proxy.pickFor(p);
          for (const step of proxy.steps) {
            assert.equal(table[step.step], bestVersionAt(step.versions, p),
              `at predicted level ${p}, layer ${step.layer} runs that level's lowest-profiled version`);
          }
        }
        const regrets = [...new Set(predicted)].map((p) => `${p}:${((pickRegret(proxy.steps, p, level).worst - 1) * 100).toFixed(1)}%`);
        t.diagnostic(`level ${level}: predicted ${[...new Set(predicted)].join('/')}; regret vs the true level's oracle ${regrets.join(' ')}`);
      }
    } finally {
      proxy.close();
      executor.close();
    }
  } finally {
    await bank.close();
  }
});
