/**
 * The interference proxy on this machine, with the noise generator really running: a tiny model
 * is compiled with every level profiled, the proxy is calibrated on it (features recorded at each
 * level — the co-runner's traffic read from its own counters over each window — then least squares,
 * with held-out scores from fitting one sweep pass and predicting the other), its coefficients are
 * stored in the bundle and survive the reader's checks, and then — with the co-runner at each
 * calibrated level in turn — every prediction is a calibrated level and the native executor,
 * read back, runs for every tunable layer the version with the lowest profiled latency at the
 * predicted level (computed here from the manifest, not by the picker under test).
 *
 * Honest scope: on this shared 2-core VM one co-runner core moves kernels little and the fit's R²
 * has ranged widely between runs, so whether the prediction equals the TRUE level is not
 * asserted; the regret of the picks against the true level's oracle is printed as a diagnostic
 * and measured on whole models by `veltair bench` (bench/RESULTS.md).
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
import { modelFeeds } from '../src/compile/feeds.js';
import { InterferenceProxy } from '../src/runtime/proxy.js';
import { calibrateProxy, storeProxy } from '../src/compile/proxy-calibrate.js';
import { runtimeCores } from '../src/interference/cores.js';
import type { ManifestVersion } from '../src/bundle/manifest.js';
import { pickRegret } from '../src/runtime/version-picker.js';
import { loadBundle } from '../src/runtime/session.js';
import { chooseLevel } from '../src/cli/run-level.js';
import { compileFixture, tinyModelSpec } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-proxy-'));
after(() => rmSync(root, { recursive: true, force: true }));
const LEVELS = [0, 1, 2, 3, 4];

/** The oracle the executor must follow, written out: the lowest profiled latency at `level`, level 0's where nobody has it. */
function lowestAt(versions: readonly ManifestVersion[], level: number): number {
  const at = (l: number) => versions.map((v, i) => [i, v.latencyMs[String(l)]] as const).filter(([, ms]) => ms !== undefined);
  const pool = at(level).length > 0 ? at(level) : at(0);
  let best = pool[0]!;
  for (const c of pool) if (c[1]! < best[1]!) best = c;
  return best[0];
}

test(
  'calibrated on real noise, the proxy stores a fit and picks the oracle version of every level it predicts',
  { timeout: 300_000 },
  async (t) => {
    const t0 = Date.now();
    const model = join(root, 'tiny.onnx');
    const out = join(root, 'tiny.bundle');
    writeFileSync(model, encodeModel(tinyModelSpec()));
    await compileFixture(model, { output: out, trials: 4, levels: LEVELS, threads: [1], profileThreads: [], db: join(root, 'db') });
    t.diagnostic(`compiled in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    let bundle = await readBundle(out);
    assert.equal(bundle.manifest.interferenceProxy, undefined, 'compile stores no coefficients it did not fit');

    const cores = runtimeCores(1);
    assert.ok(cores.noiseCores.length > 0, 'the test needs a core for the co-runner');
    // Opened before the runtime addon loads (it binds this thread to the kernel cores).
    const bank = await openLevelBank({
      levels: [1, 2, 3, 4],
      plan: { allCores: cores.allCores, noisyKernelMaxThreads: 1, noiseCores: cores.noiseCores },
    });
    try {
      // Uncalibrated: the runtime says so and stays at level 0.
      {
        const { executor, translated } = await executorForBundle(bundle, { threads: 1, pinThreads: true });
        const proxy = new InterferenceProxy({
          manifest: bundle.manifest,
          executor,
          stepOfPlan: translated.stepOfPlan,
          threads: 1,
          kernelCores: cores.kernelCores,
          allCores: cores.allCores,
        });
        assert.equal(proxy.calibrated, false);
        const d = proxy.decide();
        assert.equal(d.level, 0);
        assert.ok(Number.isNaN(d.continuous));
        proxy.close();
        executor.close();
      }

      const fit = await calibrateProxy(bundle, { threads: 1, cores, bank, samplesPerVisit: 3 });
      assert.deepEqual(fit.proxy.levels, LEVELS);
      for (const l of LEVELS)
        assert.equal(fit.proxy.perLevel[String(l)]!.samples, 6, `level ${l}: 3 samples on the way up, 3 on the way down`);
      // The tenant feature is observed, sample by sample: nothing at level 0 (no co-runner runs), traffic
      // that varies from window to window otherwise — not one value per level looked up from the label.
      for (const s of fit.samples.filter((x) => x.level === 0)) assert.equal(s.features.coRunnerMemGBps, 0);
      for (const l of [1, 2, 3, 4]) {
        const seen = fit.samples.filter((x) => x.level === l).map((x) => x.features.coRunnerMemGBps);
        // On a shared 2-vCPU host the co-runner is sometimes descheduled for a whole window and reads 0 (seen in CI).
        assert.ok(
          seen.filter((g) => g > 0).length >= seen.length - 2,
          `level ${l}: the co-runner moved memory in most windows: ${seen.join(', ')}`,
        );
        assert.ok(new Set(seen).size > 1, `level ${l}: per-window measurements, not a constant per level: ${seen.join(', ')}`);
      }
      assert.deepEqual([...new Set(fit.samples.map((s) => s.pass))].sort(), [0, 1], 'samples know their sweep pass (the CV folds)');
      for (const m of [fit.proxy.models.system, fit.proxy.models.tenant]) {
        assert.ok(m.heldOut, 'held-out scores are reported');
        assert.deepEqual([m.heldOut.folds, m.heldOut.samples], [2, 30], 'two folds (sweep passes), every sample predicted once');
        assert.ok(m.heldOut.accuracy >= 0 && m.heldOut.accuracy <= 1 && Number.isFinite(m.heldOut.r2));
      }
      t.diagnostic(`calibration (s=${((Date.now() - t0) / 1000).toFixed(1)}): ${JSON.stringify(fit.proxy.perLevel)}`);
      t.diagnostic(`system model: ${JSON.stringify(fit.proxy.models.system)}`);
      await storeProxy(bundle, fit.proxy);
      bundle = await readBundle(out);
      assert.deepEqual(
        bundle.manifest.interferenceProxy,
        JSON.parse(JSON.stringify(fit.proxy)),
        'stored, and the bundle still passes every check',
      );

      const { executor, translated } = await executorForBundle(bundle, { threads: 1, pinThreads: true });
      const proxy = new InterferenceProxy({
        manifest: bundle.manifest,
        executor,
        stepOfPlan: translated.stepOfPlan,
        threads: 1,
        kernelCores: cores.kernelCores,
        allCores: cores.allCores,
      });
      try {
        assert.equal(proxy.calibrated, true);
        t.diagnostic(
          `family sizes: ${proxy.steps.map((s) => s.versions.length).join(', ')}; system fit R² ${fit.proxy.models.system.r2.toFixed(3)}`,
        );
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
          const last = predicted[predicted.length - 1]!;
          assert.equal(proxy.level, last, 'the last decision is the applied level');
          for (const p of new Set(predicted)) assert.ok(LEVELS.includes(p), `prediction ${p} is a calibrated level`);
          // What the native executor runs now, read back from it, against the oracle written out above.
          const running = executor.runningVersions();
          for (const step of proxy.steps) {
            assert.equal(
              running[step.step],
              lowestAt(step.versions, last),
              `after predicting level ${last}, the executor runs layer ${step.layer}'s lowest-profiled version at that level`,
            );
          }
          const regrets = [...new Set(predicted)].map((p) => `${p}:${((pickRegret(proxy.steps, p, level).worst - 1) * 100).toFixed(1)}%`);
          t.diagnostic(
            `level ${level}: predicted ${[...new Set(predicted)].join('/')}; regret vs the true level's oracle ${regrets.join(' ')}`,
          );
        }
      } finally {
        proxy.close();
        executor.close();
      }

      // veltair run --level auto on the calibrated bundle: one observed (profiled) run comes before the prediction.
      const session = await loadBundle(out);
      try {
        assert.ok(
          [...session.executor.stepTimesNs()].every((ns) => ns === 0),
          'nothing has run yet',
        );
        const arrays = modelFeeds(bundle.manifest.model.inputs);
        const choice = await chooseLevel(
          session,
          'auto',
          Object.fromEntries(bundle.manifest.model.inputs.map((t, i) => [t.name, arrays[i]!])),
        );
        assert.ok(LEVELS.includes(choice.level));
        assert.match(
          choice.how,
          /^auto: the interference proxy predicted -?\d+\.\d+ after one observed warm-up run \(latency ratio \d+\.\d+/,
        );
        const ns = session.executor.stepTimesNs();
        assert.ok(
          session.tunableLayers.every((t) => ns[t.step]! > 0),
          'the warm-up run was timed step by step (the latency ratio is observed)',
        );
      } finally {
        session.close();
      }
    } finally {
      await bank.close();
    }
  },
);
