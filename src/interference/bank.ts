/**
 * Every interference level in one pass. A tuning session starts ONE co-runner per requested noisy
 * level (levels 2–4 allocate and touch gigabytes, so starting them per measurement would cost
 * seconds each), SIGSTOPs each as soon as it reports ready, and SIGCONTs exactly one — the level
 * being measured — around each measurement through measureJobs' beforeJob/afterJob hooks. Level 0
 * is "all stopped". Each candidate is measured at its levels back to back (c@0, c@1, …, c@4), so
 * its per-level figures are seconds apart, not minutes.
 *
 * Cores: a kernel with `threads` threads runs on the first `threads` available cores; the
 * co-runners run on the cores above the largest thread count that still leaves a core free. A
 * schedule using every core has no core left for a co-runner: it is measured at level 0 only and
 * its record simply has no noisy levels (nothing is faked).
 *
 * No orphans: the bank stops every co-runner on close (SIGCONT first: a stopped process does not
 * act on SIGTERM), on SIGINT/SIGTERM/SIGHUP (SIGKILL, synchronously), on process exit (generator.ts's
 * own hook) and, for kill -9 of the tuner, through the noise guard (noise-guard.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { internalError } from '../errors.js';
import { availableCores } from '../toolchain/cpu.js';
import { startNoise, type NoiseHandle, type NoiseStats } from './generator.js';
import type { NoiseSettings } from './levels.js';

/** Which cores kernels and co-runners use, for a session that considers `threadOptions`. */
export interface CorePlan {
  readonly allCores: readonly number[];
  /** Kernels with at most this many threads can be measured under noise. 0: none can. */
  readonly noisyKernelMaxThreads: number;
  readonly noiseCores: readonly number[];
}

export function planCores(threadOptions: readonly number[], allCores: readonly number[] = availableCores()): CorePlan {
  const fitting = threadOptions.filter((t) => t < allCores.length);
  const max = fitting.length > 0 ? Math.max(...fitting) : 0;
  return { allCores, noisyKernelMaxThreads: max, noiseCores: max > 0 ? allCores.slice(max) : [] };
}

export function kernelCores(plan: CorePlan, threads: number): number[] {
  return plan.allCores.slice(0, threads);
}

/** The requested levels a kernel with `threads` threads can be measured at (0 always; noisy ones only with a core free). */
export function measurableLevels(plan: CorePlan, threads: number, requested: readonly number[]): number[] {
  const noisyOk = threads <= plan.noisyKernelMaxThreads && plan.noiseCores.length > 0;
  return requested.filter((l) => l === 0 || noisyOk);
}

/** Scheduler states of every thread of a process ('R', 'S', 'T', …); empty when it is gone. */
export function threadStates(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map((tid) => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    });
  } catch {
    return [];
  }
}

export const isStopped = (pid: number) => {
  const s = threadStates(pid);
  return s.length > 0 && s.every((x) => x === 'T' || x === 't');
};
export const isRunning = (pid: number) => {
  const s = threadStates(pid);
  return s.length > 0 && s.every((x) => x !== 'T' && x !== 't');
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw internalError(`co-runner did not ${what} within ${timeoutMs} ms`);
    await sleep(1);
  }
}

export interface LevelBank {
  readonly plan: CorePlan;
  /** Noisy levels with a co-runner, ascending. */
  readonly levels: readonly number[];
  /** Co-runner pid and settings per level (reported with the results: what each level did). */
  readonly runners: ReadonlyMap<number, { readonly pid: number; readonly settings: NoiseSettings }>;
  /** Let exactly `level`'s co-runner run (0: none). */
  activate(level: number): Promise<void>;
  /** Stop whichever co-runner runs. */
  quiesce(): Promise<void>;
  /** The running co-runner's own counters so far (undefined at level 0: nothing runs, nothing moves). */
  counters(): Promise<NoiseStats | undefined>;
  /** Stop and reap every co-runner and the guard. Idempotent. */
  close(): Promise<void>;
}

export interface LevelBankOptions {
  readonly levels: readonly number[];
  readonly plan: CorePlan;
  readonly cacheDir?: string;
  /** Replace a level's settings (tests: small buffers); undefined keeps the level's own. */
  readonly settingsFor?: (level: number) => NoiseSettings | undefined;
}

function startGuard(): ChildProcess {
  const script = fileURLToPath(new URL('./noise-guard.js', import.meta.url));
  // node's own spawn (argument array, no shell): the guard must be unref'd and never awaited.
  const guard = spawn(process.execPath, [script], { stdio: ['pipe', 'ignore', 'ignore'] });
  guard.unref();
  (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  guard.stdin?.on('error', () => {
    /* guard gone: nothing to tell it */
  });
  return guard;
}

/** Start one stopped co-runner per noisy level in `levels` (strongest first: it gets the memory). */
export async function openLevelBank(o: LevelBankOptions): Promise<LevelBank> {
  const noisy = [...new Set(o.levels.filter((l) => l !== 0))].sort((a, b) => a - b);
  const handles = new Map<number, NoiseHandle>();
  if (noisy.length > 0 && o.plan.noiseCores.length === 0) {
    throw internalError('noisy levels requested but no core is free for a co-runner');
  }
  const guard = noisy.length > 0 ? startGuard() : undefined;
  const tell = (line: string) => {
    if (guard?.stdin?.writable) guard.stdin.write(`${line}\n`);
  };
  let running: number | undefined;
  let closing: Promise<void> | undefined;

  const killAllNow = () => {
    for (const h of handles.values()) {
      try {
        process.kill(h.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  };
  const onSignal = (sig: NodeJS.Signals) => {
    killAllNow();
    removeSignalHandlers();
    if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const removeSignalHandlers = () => {
    for (const s of signals) process.removeListener(s, onSignal);
  };
  for (const s of signals) process.on(s, onSignal);

  const close = () => {
    closing ??= (async () => {
      removeSignalHandlers();
      for (const [level, h] of handles) {
        try {
          process.kill(h.pid, 'SIGCONT');
        } catch {
          /* already gone */
        }
        await h.stop().catch(() => undefined);
        tell(`del ${h.pid}`);
        handles.delete(level);
      }
      tell('bye');
      guard?.stdin?.end();
    })();
    return closing;
  };

  try {
    for (const level of [...noisy].reverse()) {
      const settings = o.settingsFor?.(level);
      const h = await startNoise({
        level,
        cores: o.plan.noiseCores,
        ...(settings ? { settings } : {}),
        ...(o.cacheDir ? { cacheDir: o.cacheDir } : {}),
      });
      handles.set(level, h);
      tell(`add ${h.pid}`);
      process.kill(h.pid, 'SIGSTOP');
      await waitFor(() => isStopped(h.pid), 'stop');
    }
  } catch (e) {
    await close();
    throw e;
  }

  const stopRunning = async () => {
    if (running === undefined) return;
    const h = handles.get(running)!;
    running = undefined;
    process.kill(h.pid, 'SIGSTOP');
    await waitFor(() => isStopped(h.pid), 'stop');
  };
  return {
    plan: o.plan,
    levels: noisy,
    runners: new Map([...handles].map(([l, h]) => [l, { pid: h.pid, settings: h.settings }])),
    async activate(level) {
      if (closing) throw internalError('level bank used after close');
      if (level === running) return;
      await stopRunning();
      if (level === 0) return;
      const h = handles.get(level);
      if (!h) throw internalError(`no co-runner was started for level ${level}`);
      process.kill(h.pid, 'SIGCONT');
      await waitFor(() => isRunning(h.pid), 'resume');
      running = level;
    },
    quiesce: stopRunning,
    counters: async () => (running === undefined ? undefined : handles.get(running)!.counters()),
    close,
  };
}
