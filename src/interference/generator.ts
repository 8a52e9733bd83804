/**
 * The interference generator from code: native-kernels/noise.c, a co-runner pinned to the cores a
 * kernel does not use, started with one level's settings (levels.ts) and stopped with its own
 * counters of what it did.
 */
import { execa, type ResultPromise } from 'execa';
import { VeltairError, userError } from '../errors.js';
import { detectCaches } from '../toolchain/caches.js';
import { availableCores, parseCoreList } from '../toolchain/cpu.js';
import { readJsonLines, type ToolEvent } from '../toolchain/json-lines.js';
import { ensureTool } from '../toolchain/tools.js';
import { levelSpec, noiseMemoryBudget, resolveLevel, type NoiseLevel, type NoiseSettings } from './levels.js';

/** The co-runner's cores: every available core the kernel does not use. */
export function noiseCores(kernelCores: readonly number[], allCores: readonly number[] = availableCores()): number[] {
  const kernel = new Set(kernelCores);
  return [...new Set(allCores)].filter((c) => !kernel.has(c)).sort((a, b) => a - b);
}

export interface NoiseReady {
  readonly isa: string;
  readonly threads: number;
  readonly randomBytes: number;
  readonly streamBytes: number;
  readonly touchSeconds: number;
}

/** Bytes the co-runner moved per second between two counter readings (GB/s; 0 when no time passed). */
export function trafficGBps(a: NoiseStats, b: NoiseStats): number {
  const bytes = (s: NoiseStats) => s.streamBytesRead + s.streamBytesWritten + s.randomOps * 64;
  const seconds = b.seconds - a.seconds;
  return seconds > 0 ? (bytes(b) - bytes(a)) / seconds / 1e9 : 0;
}

/** What the co-runner did between ready and stop, as it counted it. */
export interface NoiseStats {
  readonly seconds: number;
  readonly streamBytesRead: number;
  readonly streamBytesWritten: number;
  readonly randomOps: number;
}

export interface NoiseHandle {
  readonly level: NoiseLevel | 'custom';
  readonly cores: readonly number[];
  readonly settings: NoiseSettings;
  readonly ready: NoiseReady;
  readonly pid: number;
  /** Resolves when the co-runner exits on its own (after --seconds) or is stopped. */
  readonly finished: Promise<NoiseStats>;
  /** SIGTERM, then wait for exit; resolves with the co-runner's own counters. Idempotent. */
  stop(): Promise<NoiseStats>;
  /** Its counters so far (SIGUSR1; it must be running, not stopped): the traffic of an interval is a difference of two. */
  counters(): Promise<NoiseStats>;
}

export interface NoiseOptions {
  readonly level: number;
  readonly cores: readonly number[];
  readonly seconds?: number;
  /** Replace the level's settings (tests, experiments); reported as level 'custom'. */
  readonly settings?: NoiseSettings;
  readonly cacheDir?: string;
  /** Give up if buffers are not touched by then. */
  readonly readyTimeoutMs?: number;
}

const live = new Set<ResultPromise>();
let exitHookInstalled = false;

function killAllOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous last resort; noise.c also asks the kernel for SIGTERM when its parent dies.
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

export function settingsArgs(cores: readonly number[], s: NoiseSettings, seconds?: number): string[] {
  const args = [
    '--cores',
    cores.join(','),
    '--random-bytes',
    String(s.randomBytes),
    '--stream-bytes',
    String(s.streamBytes),
    '--stream-mode',
    s.streamMode,
    '--stream-chunk-bytes',
    String(s.streamChunkBytes),
    '--random-ops-per-turn',
    String(s.randomOpsPerTurn),
  ];
  if (seconds !== undefined) args.push('--seconds', String(seconds));
  return args;
}

function checkOptions(o: NoiseOptions): void {
  if (o.cores.length === 0) {
    throw userError(
      'BAD_ARGUMENT',
      'the noise generator was given no cores',
      "on a 1-core machine there is no core left for noise; pass --cores explicitly to share the kernel's core",
    );
  }
  const all = availableCores();
  parseCoreList(o.cores.join(','), all);
  if (o.seconds !== undefined && !(o.seconds > 0 && Number.isFinite(o.seconds))) {
    throw userError('BAD_ARGUMENT', `--seconds ${o.seconds} is not a positive number`, 'give a duration in seconds, e.g. --seconds 10');
  }
}

/** Start the co-runner; resolves once it reports its buffers touched (pressure on). */
export async function startNoise(options: NoiseOptions): Promise<NoiseHandle> {
  const spec = options.settings ? undefined : levelSpec(options.level);
  checkOptions(options);
  const settings =
    options.settings ?? resolveLevel(spec!.level, { l3Bytes: (await detectCaches()).sizes.l3, memoryBudgetBytes: noiseMemoryBudget() });
  const binary = await ensureTool('noise', { cacheDir: options.cacheDir });
  const child = execa(binary, settingsArgs(options.cores, settings, options.seconds), { reject: false, buffer: false, stdin: 'ignore' });
  killAllOnExit();
  live.add(child);
  let hasExited = false;
  const exited = child.then(() => {
    hasExited = true;
    live.delete(child);
  });
  const reader = readJsonLines(child, 'noise');

  let ready: ToolEvent;
  try {
    ready = await reader.waitFor((e) => e['event'] === 'ready', { timeoutMs: options.readyTimeoutMs ?? 120_000, what: 'ready' });
  } catch (e) {
    child.kill('SIGKILL');
    await exited;
    throw noiseFailure(e);
  }
  const finished = exited.then(() => {
    const stopped = reader.events.find((e) => e['event'] === 'stopped');
    if (!stopped) throw noiseFailure(new Error(`exited without reporting its counters: ${reader.stderrTail() || 'no output'}`));
    return withoutEvent(stopped) as unknown as NoiseStats;
  });
  finished.catch(() => {
    /* surfaced through stop() */
  });
  let stopping: Promise<NoiseStats> | undefined;
  return {
    level: options.settings ? 'custom' : spec!.level,
    cores: [...options.cores],
    settings,
    ready: withoutEvent(ready) as unknown as NoiseReady,
    pid: child.pid!,
    finished,
    async counters() {
      const from = reader.events.length;
      child.kill('SIGUSR1');
      return withoutEvent(
        await reader.waitFor((e) => e['event'] === 'counters', { from, timeoutMs: 5_000, what: 'its counters' }),
      ) as unknown as NoiseStats;
    },
    stop() {
      stopping ??= (async () => {
        if (!hasExited) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        try {
          return await finished;
        } finally {
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
  };
}

function withoutEvent(e: ToolEvent): ToolEvent {
  const { event: _event, ...rest } = e;
  return rest;
}

function noiseFailure(e: unknown): VeltairError {
  const message = String((e as { toolMessage?: string }).toolMessage ?? (e instanceof Error ? e.message : e));
  if (/^pin:/.test(message)) {
    return userError('BAD_ARGUMENT', `noise generator: ${message}`, 'choose cores this process may run on (see `nproc` / taskset)');
  }
  if (e instanceof VeltairError) return e;
  return new VeltairError(
    'INTERNAL',
    `noise generator failed: ${message}`,
    'the machine may be short of memory; try a lower level or fewer cores',
    2,
  );
}
