/**
 * `veltair run --level`: a fixed level picks each layer's best-profiled version at that level;
 * `auto` asks the interference proxy (src/runtime/proxy.ts) to predict the level from what it
 * observes now. A bundle without proxy coefficients is never guessed at: it runs at level 0 and
 * says so.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Session } from '../runtime/session.js';
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

async function predictLevel(session: Session): Promise<LevelChoice> {
  const calibration = session.manifest.interferenceProxy;
  if (calibration === undefined) {
    return { level: 0, how: 'auto: no proxy calibration, level 0',
      note: 'the bundle has no interference-proxy calibration (veltair bench --calibrate-proxy adds one); running at level 0' };
  }
  // The calibration's split: kernels on the first `threads` cores, the rest count as "other".
  const all = availableCores();
  const threads = Math.max(1, Math.min(calibration.threads, all.length));
  const { kernelCores, allCores } = runtimeCores(threads, all);
  const proxy = new InterferenceProxy({
    manifest: session.manifest, executor: session.executor, stepOfPlan: session.stepOfPlan, threads, kernelCores, allCores,
  });
  try {
    // The OS features are deltas between two procfs reads: give them one refresh window.
    await sleep(proxy.sampler.refreshMs);
    const p = proxy.predict();
    return { level: p.level, how: `auto: the interference proxy predicted ${p.continuous.toFixed(2)}` };
  } finally {
    proxy.close();
  }
}

export async function chooseLevel(session: Session, flag: number | 'auto'): Promise<LevelChoice> {
  const choice: LevelChoice = flag === 'auto' ? await predictLevel(session) : { level: flag, how: 'fixed by --level' };
  session.setLevel(choice.level);
  if (!session.levels.includes(choice.level)) {
    const fallback = `the bundle's versions were profiled at level${session.levels.length === 1 ? '' : 's'} ${session.levels.join(', ')} only; `
      + `level ${choice.level} picks by the level-0 profiles`;
    return { ...choice, note: choice.note ? `${choice.note}; ${fallback}` : fallback };
  }
  return choice;
}
