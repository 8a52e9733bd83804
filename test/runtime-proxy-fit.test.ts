/**
 * The interference proxy's pure parts: the least-squares fit recovers known coefficients from
 * synthetic features (and ignores a constant feature), rounding snaps to calibrated levels, the
 * picker takes the lowest profiled latency at a level, the procfs parsers read real-format text,
 * the sampler turns counter deltas into fractions, and the manifest schema accepts the stored
 * coefficients and refuses malformed ones.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { ManifestInterferenceProxy, ManifestVersion } from '../src/bundle/manifest.js';
import { manifestSchemaProblem } from '../src/bundle/schema.js';
import {
  compileLevelModel,
  compiledLevel,
  continuousLevel,
  snapLevel,
  SYSTEM_FEATURES,
  TENANT_FEATURES,
  type CalibrationSample,
} from '../src/interference/proxy-model.js';
import { crossValidate, fitLevelModel } from '../src/interference/proxy-fit.js';
import { bestVersionAt, pickRegret, pickTable, profiledKernelMs, type KernelStepChoice } from '../src/runtime/version-picker.js';
import { FeatureSampler, LatencyRatioTracker, parseCpuTimes, parsePsiSomeTotal } from '../src/interference/proxy-features.js';
import { writeFakeBundle } from './bundle-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-proxy-fit-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Deterministic pseudo-random numbers in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function synthetic(truth: { intercept: number; busy: number; ratio: number }, noise: number, seed = 7): CalibrationSample[] {
  const r = rng(seed);
  const out: CalibrationSample[] = [];
  for (let i = 0; i < 200; i++) {
    const otherCoresBusy = r();
    const latencyRatio = 1 + r();
    const level = truth.intercept + truth.busy * otherCoresBusy + truth.ratio * latencyRatio + (r() - 0.5) * noise;
    out.push({ level, features: { otherCoresBusy, psiCpuSome: 0.25, psiMemorySome: 0, latencyRatio, coRunnerMemGBps: 0 } });
  }
  return out;
}

test('least squares recovers the coefficients of exact synthetic data; constant features get weight 0', () => {
  const m = fitLevelModel(synthetic({ intercept: -3, busy: 2, ratio: 4 }, 0), SYSTEM_FEATURES);
  const w = Object.fromEntries(m.features.map((f, i) => [f, m.weights[i]!]));
  assert.ok(Math.abs(w['otherCoresBusy']! - 2) < 1e-4, `busy weight ${w['otherCoresBusy']}`);
  assert.ok(Math.abs(w['latencyRatio']! - 4) < 1e-4, `ratio weight ${w['latencyRatio']}`);
  assert.ok(Math.abs(m.intercept + 3) < 1e-3, `intercept ${m.intercept}`);
  assert.equal(w['psiCpuSome'], 0, 'a constant feature carries no information');
  assert.equal(w['psiMemorySome'], 0);
  assert.ok(m.r2 > 0.999999 && m.rmsError < 1e-4, `r2 ${m.r2} rms ${m.rmsError}`);
  const x = { otherCoresBusy: 0.5, psiCpuSome: 0.9, psiMemorySome: 0.3, latencyRatio: 1.5, coRunnerMemGBps: 0 };
  assert.ok(Math.abs(continuousLevel(m, x) - (-3 + 1 + 6)) < 1e-3);
});

test('a model is applied by feature name, whatever order the manifest lists its features in', () => {
  const x = { otherCoresBusy: 0.25, psiCpuSome: 0.6, psiMemorySome: 0.1, latencyRatio: 1.8, coRunnerMemGBps: 12 };
  const cases: [{ features: string[]; intercept: number; weights: number[] }, number][] = [
    [{ features: ['latencyRatio', 'otherCoresBusy'], intercept: 0.5, weights: [2, -1] }, 0.5 + 2 * 1.8 - 0.25],
    [
      { features: [...TENANT_FEATURES].reverse(), intercept: -1, weights: [0.05, 3, -2, 0.5, 1.5] },
      -1 + 0.05 * 12 + 3 * 1.8 - 2 * 0.1 + 0.5 * 0.6 + 1.5 * 0.25,
    ],
    [{ features: [...SYSTEM_FEATURES], intercept: 0, weights: [0, 0, 0, 0] }, 0],
  ];
  for (const [m, want] of cases) {
    assert.ok(Math.abs(compiledLevel(compileLevelModel(m), x) - want) < 1e-12, `${JSON.stringify(m.features)}: want ${want}`);
    assert.ok(Math.abs(continuousLevel(m, x) - want) < 1e-12);
  }
});

test('with noisy labels the fit stays close and reports a lower R²', () => {
  const m = fitLevelModel(synthetic({ intercept: 0, busy: 3, ratio: 1 }, 1, 11), TENANT_FEATURES);
  const w = Object.fromEntries(m.features.map((f, i) => [f, m.weights[i]!]));
  assert.ok(Math.abs(w['otherCoresBusy']! - 3) < 0.3, `busy weight ${w['otherCoresBusy']}`);
  assert.ok(m.r2 < 0.999 && m.r2 > 0.5, `r2 ${m.r2}`);
  assert.equal(w['coRunnerMemGBps'], 0);
});

test('held-out scores: a real relation holds up on the other pass, a fit to noise does not', () => {
  // Two passes over levels 0..4, 12 samples per visit; latencyRatio carries the level, the rest is noise.
  const r = rng(5);
  const sample = (level: number, pass: number, signal: boolean): CalibrationSample => ({
    level,
    pass,
    features: {
      otherCoresBusy: r(),
      psiCpuSome: r() * 0.1,
      psiMemorySome: r() * 0.01,
      latencyRatio: signal ? 1 + 0.5 * level + 0.2 * (r() - 0.5) : 1 + r(),
      coRunnerMemGBps: 0,
    },
  });
  const passes = (signal: boolean) =>
    [0, 1].flatMap((pass) => [0, 1, 2, 3, 4].flatMap((l) => Array.from({ length: 12 }, () => sample(l, pass, signal))));
  const real = passes(true),
    noise = passes(false);
  const good = crossValidate(real, SYSTEM_FEATURES)!,
    bad = crossValidate(noise, SYSTEM_FEATURES)!;
  assert.deepEqual([good.folds, good.samples], [2, 120], 'each pass predicted once by a fit of the other');
  assert.ok(good.r2 > 0.9 && good.accuracy > 0.8, `signal holds up held out: ${JSON.stringify(good)}`);
  const inSample = fitLevelModel(noise, SYSTEM_FEATURES);
  assert.ok(bad.r2 < inSample.r2, `held out, a fit to noise scores below its in-sample R² (${bad.r2} vs ${inSample.r2})`);
  assert.ok(bad.r2 < 0.2, `and near or below zero: ${bad.r2}`);
  assert.equal(
    crossValidate(
      real.filter((x) => x.pass === 0),
      SYSTEM_FEATURES,
    ),
    undefined,
    'one pass: no held-out estimate',
  );
});

test('a fit needs two levels and more samples than features', () => {
  const one = synthetic({ intercept: 1, busy: 0, ratio: 0 }, 0).map((s) => ({ ...s, level: 1 }));
  assert.throws(() => fitLevelModel(one, SYSTEM_FEATURES), /two or more levels/);
  assert.throws(
    () => fitLevelModel(synthetic({ intercept: 0, busy: 1, ratio: 1 }, 0).slice(0, 3), SYSTEM_FEATURES),
    /more samples than features/,
  );
});

test('a continuous level snaps to the nearest calibrated level, clamped at the ends', () => {
  const levels = [0, 2, 4];
  assert.equal(snapLevel(-1.2, levels), 0);
  assert.equal(snapLevel(0.9, levels), 0);
  assert.equal(snapLevel(1, levels), 0, 'a tie goes to the lower level');
  assert.equal(snapLevel(1.1, levels), 2);
  assert.equal(snapLevel(3.4, levels), 4);
  assert.equal(snapLevel(9, levels), 4);
});

const version = (latencyMs: Record<string, number>, byThreads: Record<string, number> = {}): ManifestVersion => ({
  id: '0123456789abcdef',
  symbol: 'vt_k0123456789abcdef',
  threads: 1,
  workspaceBytes: 0,
  inPlan: true,
  latencyMs,
  latencyByThreadsMs: byThreads,
  schedule: {
    vec: 16,
    regOc: 1,
    regCols: 1,
    tileIc: 1,
    tileOc: 1,
    tileRows: 1,
    tileCols: 1,
    loopOrder: 'oc_outer',
    parallelAxis: 'oc',
    unroll: 1,
    threads: 1,
  },
  features: {
    footprintBytes: { l1: 0, l2: 0, l3: 0, total: 0 },
    parallelChunks: 1,
    threads: 1,
    loadBalance: 1,
    arithmeticIntensity: 1,
    registerTile: 1,
    reductionSplit: 1,
    flops: 1,
  },
});

test('the picker takes the lowest profiled latency at the level; unmeasured levels fall back to level 0', () => {
  const locality = version({ 0: 1.0, 4: 2.0 }, { 1: 1.0, 2: 0.6 });
  const parallel = version({ 0: 1.2, 4: 1.5 });
  const allCores = version({ 0: 1.1 });
  assert.equal(bestVersionAt([locality, parallel], 0), 0);
  assert.equal(bestVersionAt([locality, parallel], 4), 1);
  assert.equal(bestVersionAt([allCores, locality, parallel], 4), 2, 'a version without a level-4 profile does not compete at 4');
  assert.equal(bestVersionAt([allCores], 4), 0, 'only level 0 known: it decides');
  const steps: KernelStepChoice[] = [
    { step: 1, layer: 0, versions: [locality, parallel] },
    { step: 3, layer: 2, versions: [parallel, locality] },
  ];
  const table = pickTable(steps, 4, [0, 4]);
  assert.deepEqual([...table.get(0)!], [-1, 0, -1, 1]);
  assert.deepEqual([...table.get(4)!], [-1, 1, -1, 0]);
  assert.equal(profiledKernelMs(steps, table.get(0)!, 1), 2.0);
  assert.equal(profiledKernelMs(steps, table.get(0)!, 2), 1.2, 'the thread profile is used where it exists');
  assert.deepEqual(pickRegret(steps, 4, 4), { worst: 1, total: 1 });
  const r = pickRegret(steps, 0, 4);
  assert.ok(Math.abs(r.worst - 2.0 / 1.5) < 1e-12 && Math.abs(r.total - 4.0 / 3.0) < 1e-12, JSON.stringify(r));
});

const STAT = `cpu  612375 0 211850 256586 1501 0 1664 0 0 0
cpu0 300 0 100 500 100 0 0 0 0 0
cpu1 200 0 50 700 50 0 0 0 0 0
cpu2 10 0 10 80 0 0 0 0 0 0
intr 19275779 0 0 0
ctxt 1
`;

test('procfs parsers read /proc/stat and /proc/pressure text', () => {
  assert.deepEqual(parseCpuTimes(STAT, new Set([1, 2])), [270, 1100]);
  assert.deepEqual(parseCpuTimes(STAT, new Set([0])), [400, 1000]);
  assert.deepEqual(parseCpuTimes(STAT.slice(0, STAT.indexOf('cpu2')), new Set([2])), [0, 0], 'a truncated line is not guessed');
  const psi = 'some avg10=1.00 avg60=0.50 avg300=0.39 total=24270142\nfull avg10=0.08 avg60=0.18 avg300=0.15 total=9775116\n';
  assert.equal(parsePsiSomeTotal(psi), 24270142);
  assert.equal(parsePsiSomeTotal('garbage'), undefined);
});

test('the sampler turns counter deltas into busy and stall fractions and caches between refreshes', async () => {
  const proc = join(root, 'proc');
  mkdirSync(join(proc, 'pressure'), { recursive: true });
  const write = (busy1: number, idle1: number, psiCpuUs: number) => {
    writeFileSync(join(proc, 'stat'), `cpu  1 1 1 1\ncpu0 5 0 0 5 0 0 0 0 0 0\ncpu1 ${busy1} 0 0 ${idle1} 0 0 0 0 0 0\nintr 1\n`);
    writeFileSync(
      join(proc, 'pressure', 'cpu'),
      `some avg10=0 avg60=0 avg300=0 total=${psiCpuUs}\nfull avg10=0 avg60=0 avg300=0 total=0\n`,
    );
  };
  write(100, 100, 0);
  const s = new FeatureSampler({ kernelCores: [0], allCores: [0, 1], refreshMs: 1e9, procRoot: proc });
  try {
    assert.deepEqual(s.sources, { stat: true, psiCpu: true, psiMemory: false });
    write(175, 125, 1e9);
    s.refresh();
    const f = s.features();
    assert.equal(f.otherCoresBusy, 0.75);
    assert.equal(f.psiCpuSome, 1, 'a stall fraction is clamped to 1');
    assert.equal(f.psiMemorySome, 0, 'no PSI memory file: 0');
    write(175, 225, 1e9);
    assert.equal(s.features().otherCoresBusy, 0.75, 'within refreshMs the cached features are returned');
    s.refresh();
    assert.equal(s.features().otherCoresBusy, 0);
  } finally {
    s.close();
  }
});

test('the latency ratio is the median of observed / profiled over the last runs, 1 before any run', () => {
  const t = new LatencyRatioTracker(3);
  assert.equal(t.ratio, 1);
  t.observe(2, 1);
  assert.equal(t.ratio, 2);
  t.observe(1, 1);
  assert.equal(t.ratio, 1.5);
  t.observe(1000, 1);
  assert.equal(t.ratio, 2, 'one preempted run does not drag the ratio');
  t.observe(0, 1);
  assert.equal(t.ratio, 2, 'a zero observation is ignored');
  t.observe(1.2, 1);
  t.observe(1.1, 1);
  assert.equal(t.ratio, 1.2, 'only the last window counts');
});

test('the manifest schema accepts fitted proxy coefficients and refuses malformed ones', () => {
  const model = { features: [...SYSTEM_FEATURES], intercept: -1, weights: [1, 0, 0, 2], r2: 0.9, rmsError: 0.4, accuracy: 0.8 };
  const proxy: ManifestInterferenceProxy = {
    levels: [0, 4],
    threads: 1,
    kernelCores: 1,
    noiseCores: 1,
    refreshMs: 20,
    ratioWindow: 5,
    models: { system: model, tenant: { ...model, features: [...TENANT_FEATURES], weights: [1, 0, 0, 2, 0.1] } },
    perLevel: {
      0: { samples: 8, latencyRatio: 1.1, otherCoresBusy: 0.1, coRunnerMemGBps: 0, predictedLevel: 0.2 },
      4: { samples: 8, latencyRatio: 1.3, otherCoresBusy: 1, coRunnerMemGBps: 20, predictedLevel: 3.7 },
    },
  };
  let m = writeFakeBundle(join(root, 'b1'));
  assert.equal(manifestSchemaProblem(JSON.parse(JSON.stringify({ ...m, interferenceProxy: proxy }))), undefined);
  assert.equal(manifestSchemaProblem(JSON.parse(JSON.stringify(m))), undefined, 'the proxy is optional');
  m = JSON.parse(JSON.stringify(m));
  assert.match(manifestSchemaProblem({ ...m, interferenceProxy: { ...proxy, levels: [0] } }) ?? '', /levels/);
  assert.match(
    manifestSchemaProblem({
      ...m,
      interferenceProxy: { ...proxy, models: { system: { ...model, features: ['cpuTemperature'] }, tenant: model } },
    }) ?? '',
    /features/,
  );
  assert.match(manifestSchemaProblem({ ...m, interferenceProxy: { ...proxy, perLevel: { 7: proxy.perLevel['0'] } } }) ?? '', /perLevel/);
});
