/**
 * Whole-model latency, three arms side by side in one run:
 *  - adaptive: veltair with the interference proxy choosing each kernel step's version before
 *    every run (features → level → best-profiled version at that level);
 *  - fixed:    veltair pinned to each layer's best-quiet version (the proxy's level-0 pick);
 *  - ort:      ONNX Runtime on the same model, same threads, pinned child (ort-model-child.ts).
 * Per condition (quiet, then each noise level) the arms are interleaved A B C, C B A, … for
 * `rounds` rounds; each arm's turn is one unreported warm-up run and `runs` timed runs. Reported:
 * medians over all timed runs, and paired per-round ratios (drift between rounds cancels).
 *
 * The caller starts the co-runners (a stopped level bank) before the runtime addon is loaded:
 * loading it with pinned OpenMP threads binds this process's main thread to the kernel cores (see
 * proxy-calibrate.ts).
 */
import type { LoadedBundle } from '../bundle/read.js';
import { median, pairedRatios, quantile, interleave } from '../stats.js';
import type { LevelBank } from '../interference/bank.js';
import { internalError } from '../errors.js';
import { modelFeeds } from '../compile/feeds.js';
import { startOrtModelChild, type OrtModelChild } from '../ort/model-child.js';
import { loadBundle } from '../runtime/session.js';
import type { RuntimeCores } from '../interference/cores.js';
import { InterferenceProxy } from '../runtime/proxy.js';

export type BenchArm = 'veltair' | 'veltairFixed' | 'ort';
const ARMS: readonly BenchArm[] = ['veltair', 'veltairFixed', 'ort'];

export interface BenchOptions {
  readonly modelPath: string;
  readonly threads: number;
  /** Conditions to measure: 0 = quiet, 1..4 = the noise generator at that level. */
  readonly conditions: readonly number[];
  readonly rounds: number;
  readonly runs: number;
  readonly cores: RuntimeCores;
  /** Stopped co-runners for every noisy condition, opened before the runtime addon was loaded. */
  readonly bank?: LevelBank;
  readonly onProgress?: (message: string) => void;
}

export interface BenchCondition {
  readonly threads: number;
  readonly noise: number;
  /** Medians over every timed run of the arm (ms). */
  readonly veltairMs: number;
  readonly veltairFixedMs: number;
  readonly ortMs: number;
  /** Median of per-round ratios adaptive / ORT, adaptive / fixed, fixed / ORT. */
  readonly ratioVsOrt: number;
  readonly adaptiveVsFixed: number;
  readonly fixedVsOrt: number;
  /** Levels the proxy predicted in the adaptive arm → decisions. */
  readonly predictedLevels: Record<string, number>;
  /** Every timed run (ms), per arm, in order. */
  readonly samples: Record<BenchArm, number[]>;
}

/** Each figure is null when nothing was timed (no switch happened, procfs was never re-read): none, not 0 µs. */
export interface DecisionCost {
  /** Before a run: features → level (the prediction; µs), median and 90th percentile. */
  readonly decisionMedianUs: number | null;
  readonly decisionP90Us: number | null;
  readonly decisions: number;
  /** Switching the kernel steps whose version changes (one executor call each), when the level changed (µs, median; count). */
  readonly switchMedianUs: number | null;
  readonly switches: number;
  /** After a run: the latency-ratio update without a procfs re-read (µs, median; count) … */
  readonly observeMedianUs: number | null;
  readonly observes: number;
  /** … and, at most once per refreshMs, the procfs re-read with it (µs, median; count). */
  readonly refreshMedianUs: number | null;
  readonly refreshes: number;
}

export interface BenchReport {
  readonly threads: number;
  readonly rounds: number;
  readonly runsPerTurn: number;
  readonly ortVersion: string;
  readonly ortPinned: boolean;
  readonly proxy: { readonly calibrated: boolean; readonly levels: readonly number[]; readonly refreshMs: number };
  readonly decisionCost: DecisionCost | null;
  readonly results: readonly BenchCondition[];
}

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

export async function benchModel(bundle: LoadedBundle, o: BenchOptions): Promise<BenchReport> {
  const say = o.onProgress ?? (() => undefined);
  const missing = o.conditions.filter((c) => c > 0 && !o.bank?.levels.includes(c));
  if (missing.length > 0) throw internalError(`no co-runner was started for level(s) ${missing.join(',')}`);
  say('starting ONNX Runtime');
  const ort = await startOrtModelChild(o.cores.kernelCores);
  try {
    const { ortVersion } = await ort.load(o.modelPath, o.threads, bundle.manifest.model.inputs);
    return await measureAll(bundle, o, ort, o.bank, ortVersion, say);
  } finally {
    await ort.close();
  }
}

/** Wait before an ONNX Runtime turn so veltair's OpenMP workers have stopped spinning (the ORT child is stopped between its turns: pinned-child.ts). */
const OMP_SETTLE_MS = 20;

async function measureAll(
  bundle: LoadedBundle,
  o: BenchOptions,
  ort: OrtModelChild,
  bank: LevelBank | undefined,
  ortVersion: string,
  say: (m: string) => void,
): Promise<BenchReport> {
  const session = await loadBundle(bundle.paths.dir, { threads: o.threads, pinThreads: true });
  const { executor } = session;
  const proxy = new InterferenceProxy({
    manifest: session.manifest,
    executor,
    stepOfPlan: session.stepOfPlan,
    threads: o.threads,
    kernelCores: o.cores.kernelCores,
    allCores: o.cores.allCores,
  });
  const decideNs: number[] = [],
    switchNs: number[] = [],
    observeNs: number[] = [],
    refreshNs: number[] = [];
  try {
    executor.setProfiling(true);
    const feeds = modelFeeds(bundle.manifest.model.inputs);
    const outs = executor.run(feeds);
    const timedRun = () => {
      const t0 = process.hrtime.bigint();
      executor.run(feeds, outs);
      return ms(t0);
    };
    // A serving process is warm: let V8 compile the decision path before it is timed.
    for (let i = 0; i < 5000; i++) proxy.predict();
    const results: BenchCondition[] = [];
    for (const noise of o.conditions) {
      say(noise === 0 ? 'measuring quiet' : `measuring with the level-${noise} co-runner`);
      await bank?.activate(noise);
      const predicted: Record<string, number> = {};
      const adaptiveRun = () => {
        const t0 = process.hrtime.bigint();
        const d = proxy.predict();
        const t1 = process.hrtime.bigint();
        decideNs.push(Number(t1 - t0));
        if (d.level !== proxy.level) {
          proxy.apply(d.level);
          switchNs.push(Number(process.hrtime.bigint() - t1));
        }
        predicted[d.level] = (predicted[d.level] ?? 0) + 1;
        const t = timedRun();
        const t2 = process.hrtime.bigint();
        const refreshed = proxy.observe();
        (refreshed ? refreshNs : observeNs).push(Number(process.hrtime.bigint() - t2));
        return t;
      };
      const turn = async (arm: BenchArm): Promise<number[]> => {
        if (arm === 'ort') {
          // libgomp's idle workers spin (GOMP_SPINCOUNT, ~300k pauses) after veltair's last kernel
          // before they sleep; on two shared cores that spin would take one from ORT's turn.
          await new Promise((r) => setTimeout(r, OMP_SETTLE_MS));
          return ort.run(o.runs);
        }
        if (arm === 'veltairFixed') {
          proxy.apply(0);
          timedRun();
          return Array.from({ length: o.runs }, timedRun);
        }
        adaptiveRun();
        return Array.from({ length: o.runs }, adaptiveRun);
      };
      const s = await interleave(ARMS, o.rounds, turn, { alternate: true });
      await bank?.quiesce();
      results.push(condition(o.threads, noise, s, predicted));
    }
    const us = (xs: number[], q = 0.5) => (xs.length > 0 ? quantile(xs, q) / 1e3 : null);
    return {
      threads: o.threads,
      rounds: o.rounds,
      runsPerTurn: o.runs,
      ortVersion,
      ortPinned: ort.pinned,
      proxy: { calibrated: proxy.calibrated, levels: proxy.levels, refreshMs: proxy.sampler.refreshMs },
      decisionCost:
        decideNs.length === 0
          ? null
          : {
              decisionMedianUs: us(decideNs),
              decisionP90Us: us(decideNs, 0.9),
              decisions: decideNs.length,
              switchMedianUs: us(switchNs),
              switches: switchNs.length,
              observeMedianUs: us(observeNs),
              observes: observeNs.length,
              refreshMedianUs: us(refreshNs),
              refreshes: refreshNs.length,
            },
      results,
    };
  } finally {
    proxy.close();
    session.close();
  }
}

function condition(threads: number, noise: number, s: Record<BenchArm, number[][]>, predicted: Record<string, number>): BenchCondition {
  const flat = (a: BenchArm) => s[a].flat();
  return {
    threads,
    noise,
    veltairMs: median(flat('veltair')),
    veltairFixedMs: median(flat('veltairFixed')),
    ortMs: median(flat('ort')),
    ratioVsOrt: pairedRatios(s.ort, s.veltair).medianRatio,
    adaptiveVsFixed: pairedRatios(s.veltairFixed, s.veltair).medianRatio,
    fixedVsOrt: pairedRatios(s.ort, s.veltairFixed).medianRatio,
    predictedLevels: predicted,
    samples: { veltair: flat('veltair'), veltairFixed: flat('veltairFixed'), ort: flat('ort') },
  };
}
