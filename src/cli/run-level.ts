/**
 * `veltair run --level`: a fixed level picks each layer's best-profiled version at that level;
 * `auto` asks the interference proxy (src/runtime/proxy.ts) to predict the level from what it
 * observes now. The proxy's latency-ratio feature is observed/profiled kernel time, so before it
 * predicts, the model runs once (a warm-up on the given inputs, on the level-0 versions, with the
 * executor's step timer on): without that run the ratio would be its prior, 1, whatever the load.
 * A bundle without proxy coefficients is never guessed at: it runs at level 0 and says so.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Feeds, Session } from '../runtime/session.js';
import { InterferenceProxy } from '../runtime/proxy.js';
import { runtimeCores } from '../interference/cores.js';
import { availableCores } from '../toolchain/cpu.js';

export interface LevelChoice {
  readonly level: number;
  /** How the level was chosen, for the human summary. */
  readonly how: string;
  /** Something the user should know about the choice (stderr). */
  readonly note?: string;
}

async function predictLevel(session: Session, feeds: Feeds): Promise<LevelChoice> {
  const calibration = session.manifest.interferenceProxy;
  if (calibration === undefined) {
    return {
      level: 0,
      how: 'auto: no proxy calibration, level 0',
      note: 'the bundle has no interference-proxy calibration (veltair bench --calibrate-proxy adds one); running at level 0',
    };
  }
  // The calibration's split: kernels on the first `threads` cores, the rest count as "other".
  const all = availableCores();
  const threads = Math.max(1, Math.min(calibration.threads, all.length));
  const { kernelCores, allCores } = runtimeCores(threads, all);
  const proxy = new InterferenceProxy({
    manifest: session.manifest,
    executor: session.executor,
    stepOfPlan: session.stepOfPlan,
    threads,
    kernelCores,
    allCores,
  });
  try {
    // One observed run: its kernel time over the level-0 profile is the latency ratio.
    proxy.apply(0);
    session.executor.setProfiling(true);
    session.runSync(feeds);
    proxy.observeRun();
    session.executor.setProfiling(false);
    // The OS features are deltas between two procfs reads: give them at least one refresh window.
    const wait = proxy.sampler.refreshMs - proxy.sampler.ageMs();
    if (wait > 0) await sleep(wait);
    proxy.sampler.refresh();
    const p = proxy.predict();
    return {
      level: p.level,
      how:
        `auto: the interference proxy predicted ${p.continuous.toFixed(2)} after one observed warm-up run (latency ratio ` +
        `${p.features.latencyRatio.toFixed(2)}, other cores ${(p.features.otherCoresBusy * 100).toFixed(0)}% busy)`,
    };
  } finally {
    session.executor.setProfiling(false);
    proxy.close();
  }
}

/** The level to run at; `auto` runs the model once on `feeds` first (see the header). */
export async function chooseLevel(session: Session, flag: number | 'auto', feeds: Feeds): Promise<LevelChoice> {
  const choice: LevelChoice = flag === 'auto' ? await predictLevel(session, feeds) : { level: flag, how: 'fixed by --level' };
  session.setLevel(choice.level);
  if (!session.levels.includes(choice.level)) {
    const fallback =
      `the bundle's versions were profiled at level${session.levels.length === 1 ? '' : 's'} ${session.levels.join(', ')} only; ` +
      `level ${choice.level} picks by the level-0 profiles`;
    return { ...choice, note: choice.note ? `${choice.note}; ${fallback}` : fallback };
  }
  return choice;
}
