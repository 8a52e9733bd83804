/**
 * Fitting the interference proxy on this machine: the bundle's own model is the probe. For each
 * calibrated level the noise generator runs on the cores the kernels do not use; the model runs
 * back to back with its best-quiet versions, and every `windowMs` one feature vector is recorded
 * (OS features averaged over the window, the latency ratio (median of the last runs) at its end). Levels are visited
 * 0, 1, …, max, then again in reverse, so slow drift of the shared machine is not mistaken for a
 * level. Least squares then fits the system model (OS features + latency ratio) and the tenant
 * model (plus the co-runner's memory traffic over the same window, read from the co-runner's own
 * counters at the window's start and end: an observation, like every other feature — never a value
 * looked up from the level being calibrated, which would hand the fit its own label). Fit quality
 * is reported held out: each sweep pass is predicted by a fit of the other (proxy-fit.ts
 * crossValidate); the in-sample figures stay in the model for comparison.
 *
 * Order matters on Linux: loading the runtime addon with pinned OpenMP threads binds the main
 * thread to the kernel cores, after which the noise cores are no longer "available" to start a
 * co-runner on; so the caller profiles the co-runners and opens the level bank (stopped co-runners)
 * before anything loads the addon, and hands the bank in.
 */
import type { KeyObject } from 'node:crypto';
import type { LoadedBundle } from '../bundle/read.js';
import type { Manifest, ManifestInterferenceProxy, ProxyLevelSummary } from '../bundle/manifest.js';
import { rewriteManifest } from '../bundle/rewrite-manifest.js';
import { userError } from '../errors.js';
import { trafficGBps } from '../interference/generator.js';
import { median } from '../stats.js';
import type { LevelBank } from '../interference/bank.js';
import { loadBundle } from '../runtime/session.js';
import { DEFAULT_RATIO_WINDOW, DEFAULT_REFRESH_MS } from '../interference/proxy-features.js';
import { crossValidate, fitLevelModel } from '../interference/proxy-fit.js';
import {
  continuousLevel,
  SYSTEM_FEATURES,
  TENANT_FEATURES,
  type CalibrationSample,
  type FeatureName,
} from '../interference/proxy-model.js';
import type { RuntimeCores } from '../interference/cores.js';
import { InterferenceProxy } from '../runtime/proxy.js';
import { modelFeeds } from './feeds.js';

export interface CalibrateOptions {
  readonly threads: number;
  readonly cores: RuntimeCores;
  /** Stopped co-runners for every noisy calibrated level (opened before the runtime addon loads). */
  readonly bank: LevelBank;
  /** Feature vectors per level per visit (each visit of the up-and-down sweep). */
  readonly samplesPerVisit?: number;
  /** Feature window: the runtime's procfs refresh interval, so calibration and use see the same averaging. */
  readonly windowMs?: number;
  /** Runs before the first window of a visit (the latency-ratio window fills). */
  readonly warmupRuns?: number;
  readonly onProgress?: (message: string) => void;
}

export interface CalibrationResult {
  readonly proxy: ManifestInterferenceProxy;
  readonly samples: readonly CalibrationSample[];
}

/** The levels the bundle's versions were profiled at: what the picker can choose between. */
export function calibratableLevels(m: Manifest): number[] {
  return [...new Set(m.options.levels)].filter((l) => l >= 0 && l <= 4).sort((a, b) => a - b);
}

/** Refuse a bundle or core layout the proxy cannot be calibrated for; returns the levels. */
export function checkCalibratable(m: Manifest, cores: RuntimeCores, threads: number): number[] {
  const levels = calibratableLevels(m);
  if (!levels.includes(0) || levels.length < 2) {
    throw userError(
      'BAD_BUNDLE',
      `the bundle's versions were profiled at levels ${levels.join(',')}; the proxy needs level 0 and at least one noisy level`,
      'recompile with e.g. --levels 0,1,2,3,4',
    );
  }
  if (cores.noiseCores.length === 0) {
    throw userError(
      'BAD_ARGUMENT',
      `--threads ${threads} leaves no core for the noise generator (this process may use ${cores.allCores.length})`,
      `calibrate with fewer threads, e.g. --threads ${Math.max(1, cores.allCores.length - 1)}`,
    );
  }
  return levels;
}

export async function calibrateProxy(bundle: LoadedBundle, o: CalibrateOptions): Promise<CalibrationResult> {
  const levels = checkCalibratable(bundle.manifest, o.cores, o.threads);
  const samples = await sweep(bundle, o.bank, levels, o.cores, o, o.onProgress ?? (() => undefined));
  return { proxy: summarise(samples, levels, o.cores, o.threads, o.windowMs ?? DEFAULT_REFRESH_MS), samples };
}

const SETTLE_WINDOW_MS = 50;
const SETTLE_MAX_MS = 1500;

/**
 * A resumed co-runner takes a while to reach its rate: on an Intel host the first 100 ms after
 * SIGCONT of the 1.9 GiB random level moved 9–37% of what the next ones did, and a 50 ms window
 * there read no traffic at all. Samples labelled with a level must see that level, so the sweep
 * keeps the model running until two successive windows of the co-runner's own counters agree
 * within 10% (at most SETTLE_MAX_MS; at level 0 nothing runs and this returns at once).
 */
async function untilCoRunnerSteady(bank: LevelBank, runOnce: () => void, say: (m: string) => void, level: number): Promise<void> {
  const deadline = Date.now() + SETTLE_MAX_MS;
  let start = await bank.counters();
  if (!start) return;
  const seen: number[] = [];
  while (Date.now() < deadline) {
    const until = Date.now() + SETTLE_WINDOW_MS;
    while (Date.now() < until) runOnce();
    const end = await bank.counters();
    if (!end) return; // the bank went quiet: nothing runs, nothing to wait for
    const gbps = trafficGBps(start, end);
    const previous = seen[seen.length - 1];
    seen.push(gbps);
    if (previous !== undefined && gbps > 0 && Math.abs(gbps - previous) <= 0.1 * previous) return;
    start = end;
  }
  say(
    `level ${level}: the co-runner's traffic was not steady after ${SETTLE_MAX_MS} ms (last windows ${seen
      .slice(-2)
      .map((g) => g.toFixed(2))
      .join(', ')} GB/s); sampling anyway`,
  );
}

async function sweep(
  bundle: LoadedBundle,
  bank: LevelBank,
  levels: readonly number[],
  cores: RuntimeCores,
  o: CalibrateOptions,
  say: (m: string) => void,
): Promise<CalibrationSample[]> {
  const session = await loadBundle(bundle.paths.dir, { threads: o.threads, pinThreads: true });
  const { executor } = session;
  // The probe runs the best-quiet versions whatever an earlier calibration stored.
  const { interferenceProxy: _previous, ...uncalibrated } = session.manifest;
  const proxy = new InterferenceProxy({
    manifest: uncalibrated,
    executor,
    stepOfPlan: session.stepOfPlan,
    threads: o.threads,
    kernelCores: cores.kernelCores,
    allCores: cores.allCores,
  });
  const samples: CalibrationSample[] = [];
  try {
    proxy.apply(0);
    executor.setProfiling(true);
    const feeds = modelFeeds(bundle.manifest.model.inputs);
    const outs = executor.run(feeds);
    // observeRun, not observe: the windows here are the sweep's, not the runtime's refreshes.
    const runOnce = () => {
      executor.run(feeds, outs);
      proxy.observeRun();
    };
    const windowMs = o.windowMs ?? DEFAULT_REFRESH_MS;
    const perVisit = o.samplesPerVisit ?? 4;
    const visits = [...levels.map((l) => ({ level: l, pass: 0 })), ...[...levels].reverse().map((l) => ({ level: l, pass: 1 }))];
    for (const { level, pass } of visits) {
      say(`calibrating at level ${level}`);
      await bank.activate(level);
      for (let i = 0; i < (o.warmupRuns ?? 3); i++) runOnce();
      await untilCoRunnerSteady(bank, runOnce, say, level);
      proxy.sampler.restartWindow();
      let start = await bank.counters();
      for (let got = 0; got < perVisit;) {
        runOnce();
        if (proxy.sampler.ageMs() < windowMs) continue;
        proxy.sampler.refresh();
        const end = await bank.counters();
        const coRunnerMemGBps = start && end ? trafficGBps(start, end) : 0;
        samples.push({ level, pass, features: { ...proxy.sampler.features(), coRunnerMemGBps } });
        start = end;
        got++;
      }
      await bank.quiesce();
    }
  } finally {
    proxy.close();
    session.close();
  }
  return samples;
}

function summarise(
  samples: readonly CalibrationSample[],
  levels: readonly number[],
  cores: RuntimeCores,
  threads: number,
  windowMs: number,
): ManifestInterferenceProxy {
  const fit = (features: readonly FeatureName[]) => {
    const heldOut = crossValidate(samples, features);
    return { ...fitLevelModel(samples, features), ...(heldOut ? { heldOut } : {}) };
  };
  const system = fit(SYSTEM_FEATURES),
    tenant = fit(TENANT_FEATURES);
  const perLevel: Record<string, ProxyLevelSummary> = {};
  for (const level of levels) {
    const at = samples.filter((s) => s.level === level);
    perLevel[String(level)] = {
      samples: at.length,
      latencyRatio: median(at.map((s) => s.features.latencyRatio)),
      otherCoresBusy: median(at.map((s) => s.features.otherCoresBusy)),
      coRunnerMemGBps: median(at.map((s) => s.features.coRunnerMemGBps)),
      predictedLevel: median(at.map((s) => continuousLevel(system, s.features))),
    };
  }
  return {
    levels: [...levels],
    threads,
    kernelCores: cores.kernelCores.length,
    noiseCores: cores.noiseCores.length,
    refreshMs: windowMs,
    ratioWindow: DEFAULT_RATIO_WINDOW,
    models: { system, tenant },
    perLevel,
  };
}

/**
 * Store the proxy's coefficients in the bundle's manifest, through the bundle room's rewrite
 * (temp file + rename: never half-written). A signed bundle needs its signing key: the signature
 * is renewed over the new manifest (the caller checks this with checkRewritable before calibrating).
 */
export async function storeProxy(bundle: LoadedBundle, proxy: ManifestInterferenceProxy, signingKey?: KeyObject): Promise<Manifest> {
  const ordered = reorderWithProxy({ ...bundle.manifest, interferenceProxy: proxy });
  await rewriteManifest(bundle.paths.dir, ordered, signingKey);
  return ordered;
}

/** The proxy goes right after the graph plan (before `files`), as the Manifest type lists it. */
function reorderWithProxy(m: Manifest): Manifest {
  const { files, interferenceProxy, ...rest } = m;
  return { ...rest, ...(interferenceProxy ? { interferenceProxy } : {}), files } as Manifest;
}
