/**
 * The interference generator from code. LEVELS is the one table that defines what each level
 * does (native-kernels/noise.c only executes the settings it is given); what a level *means* on a
 * machine is measured by calibrate.ts, not asserted here.
 *
 * Sizes are totals over all noise threads (each thread owns a disjoint slice), derived from the
 * machine's reported L3 size and clamped: the OS may report a whole socket's L3 (this 2-core Zen5
 * VM reports ~508 MiB although one CCD's slice is 32 MiB), so a bare multiple of it is no guide.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { cpus, freemem } from 'node:os';
import { execa, type ResultPromise } from 'execa';
import { VeltairError, userError } from '../errors.js';
import { ensureTool, readJsonLines, type ToolEvent } from './native-tool.js';

const MiB = 1 << 20;
const GiB = 1 << 30;

export type NoiseLevel = 1 | 2 | 3 | 4;
export type StreamMode = 'none' | 'copy' | 'nt';

interface SizeRule {
  /** bytes = clamp(l3Bytes × l3Multiple, minBytes, maxBytes) */
  readonly l3Multiple: number;
  readonly minBytes: number;
  readonly maxBytes: number;
}

export interface LevelSpec {
  readonly level: NoiseLevel;
  readonly summary: string;
  readonly random: SizeRule | null;
  readonly stream: (SizeRule & { readonly mode: Exclude<StreamMode, 'none'> }) | null;
  /** Bytes streamed per turn before a thread does its random operations. */
  readonly streamChunkBytes: number;
  /** Random read-modify-writes (one cache line each) per turn. */
  readonly randomOpsPerTurn: number;
}

export const LEVELS: readonly LevelSpec[] = [
  {
    level: 1, summary: 'random read-modify-write over half the L3 (at most 16 MiB): evicts cache-resident data',
    random: { l3Multiple: 0.5, minBytes: 4 * MiB, maxBytes: 16 * MiB }, stream: null,
    streamChunkBytes: 0, randomOpsPerTurn: 4096,
  },
  {
    level: 2, summary: 'random read-modify-write over 4× the L3 (256 MiB to 2 GiB): DRAM-latency-bound misses, many in flight',
    random: { l3Multiple: 4, minBytes: 256 * MiB, maxBytes: 2 * GiB }, stream: null,
    streamChunkBytes: 0, randomOpsPerTurn: 4096,
  },
  {
    level: 3, summary: 'streaming loads + ordinary stores (read-for-ownership) over 2× the L3 (1 to 2 GiB)',
    random: null, stream: { l3Multiple: 2, minBytes: 1 * GiB, maxBytes: 2 * GiB, mode: 'copy' },
    streamChunkBytes: 1 * MiB, randomOpsPerTurn: 0,
  },
  {
    level: 4, summary: 'streaming loads + non-temporal stores over 4× the L3 (2 to 4 GiB), mixed with random read-modify-write over 512 MiB to 1 GiB',
    random: { l3Multiple: 2, minBytes: 512 * MiB, maxBytes: 1 * GiB },
    stream: { l3Multiple: 4, minBytes: 2 * GiB, maxBytes: 4 * GiB, mode: 'nt' },
    streamChunkBytes: 1 * MiB, randomOpsPerTurn: 1024,
  },
];

/** Concrete settings handed to noise.c; reported with every calibration so a level is reproducible. */
export interface NoiseSettings {
  readonly randomBytes: number;
  readonly streamBytes: number;
  readonly streamMode: StreamMode;
  readonly streamChunkBytes: number;
  readonly randomOpsPerTurn: number;
  /** true when the sizes were scaled down to fit half of the free memory. */
  readonly cappedByMemory: boolean;
}

export function isNoiseLevel(n: number): n is NoiseLevel {
  return n === 1 || n === 2 || n === 3 || n === 4;
}

export function levelSpec(level: number): LevelSpec {
  const spec = LEVELS.find((l) => l.level === level);
  if (!spec) {
    throw userError('BAD_ARGUMENT', `interference level ${JSON.stringify(level)} does not exist`,
      'use a level from 1 to 4 (0 means quiet: run no co-runner); `veltair noise --help` says what each level does');
  }
  return spec;
}

const clampRule = (r: SizeRule, l3: number) => Math.min(r.maxBytes, Math.max(r.minBytes, Math.round(l3 * r.l3Multiple)));

export function resolveLevel(level: number, machine: { l3Bytes: number; memoryBudgetBytes: number }): NoiseSettings {
  const spec = levelSpec(level);
  let randomBytes = spec.random ? clampRule(spec.random, machine.l3Bytes) : 0;
  let streamBytes = spec.stream ? clampRule(spec.stream, machine.l3Bytes) : 0;
  const total = randomBytes + streamBytes;
  const cappedByMemory = total > machine.memoryBudgetBytes;
  if (cappedByMemory) {
    const scale = machine.memoryBudgetBytes / total;
    randomBytes = Math.floor(randomBytes * scale);
    streamBytes = Math.floor(streamBytes * scale);
  }
  return {
    randomBytes, streamBytes, streamMode: spec.stream ? spec.stream.mode : 'none',
    streamChunkBytes: spec.streamChunkBytes, randomOpsPerTurn: spec.randomOpsPerTurn, cappedByMemory,
  };
}

/** Half the memory the OS calls free: the co-runner must never push the machine into swap or OOM. */
export function noiseMemoryBudget(): number {
  return Math.floor(freemem() / 2);
}

export interface L3Size {
  readonly bytes: number;
  readonly source: 'sysfs' | 'getconf' | 'default';
}

function parseCacheSize(text: string): number | undefined {
  const m = /^(\d+)\s*([KMG]?)/i.exec(text.trim());
  if (!m) return undefined;
  const unit = { '': 1, K: 1024, M: MiB, G: GiB }[m[2]!.toUpperCase() as '' | 'K' | 'M' | 'G'];
  const bytes = Number(m[1]) * unit;
  return bytes > 0 ? bytes : undefined;
}

/** The L3 size as the OS reports it: sysfs, then getconf (glibc, from cpuid), then 32 MiB. */
export async function readL3Bytes(): Promise<L3Size> {
  const base = '/sys/devices/system/cpu/cpu0/cache';
  try {
    for (const index of readdirSync(base).filter((d) => d.startsWith('index'))) {
      if (readFileSync(`${base}/${index}/level`, 'utf8').trim() !== '3') continue;
      const bytes = parseCacheSize(readFileSync(`${base}/${index}/size`, 'utf8'));
      if (bytes) return { bytes, source: 'sysfs' };
    }
  } catch { /* no sysfs cache info (VMs, containers): fall through */ }
  try {
    const bytes = Number((await execa('getconf', ['LEVEL3_CACHE_SIZE'])).stdout.trim());
    if (Number.isFinite(bytes) && bytes > 0) return { bytes, source: 'getconf' };
  } catch { /* no getconf */ }
  return { bytes: 32 * MiB, source: 'default' };
}

/** Cores this process may run on (its affinity mask), else every core the OS lists. */
export function availableCores(): number[] {
  try {
    const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith('Cpus_allowed_list:'));
    if (line) {
      const cores = line.split(':')[1]!.trim().split(',').flatMap((part) => {
        const [a, b] = part.split('-').map(Number);
        return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
      });
      if (cores.length > 0 && cores.every(Number.isInteger)) return cores;
    }
  } catch { /* not Linux */ }
  return cpus().map((_, i) => i);
}

/** The co-runner's cores: every available core the kernel does not use. */
export function noiseCores(kernelCores: readonly number[], allCores: readonly number[] = availableCores()): number[] {
  const kernel = new Set(kernelCores);
  return [...new Set(allCores)].filter((c) => !kernel.has(c)).sort((a, b) => a - b);
}

/** Parse and check a `--cores 1,2` list against the available cores. */
export function parseCoreList(text: string, allCores: readonly number[] = availableCores()): number[] {
  const parts = text.split(',').map((s) => s.trim());
  const cores = parts.map(Number);
  const bad = parts.find((p, i) => !/^\d+$/.test(p) || !allCores.includes(cores[i]!));
  if (bad !== undefined || new Set(cores).size !== cores.length) {
    throw userError('BAD_ARGUMENT', `--cores ${JSON.stringify(text)} is not a list of distinct available cores`,
      `give comma-separated core ids from ${allCores.join(',')}, e.g. --cores ${allCores[allCores.length - 1]}`);
  }
  return cores;
}

export interface NoiseReady {
  readonly isa: string;
  readonly threads: number;
  readonly randomBytes: number;
  readonly streamBytes: number;
  readonly touchSeconds: number;
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
  process.on('exit', () => { for (const child of live) child.kill('SIGKILL'); });
}

export function settingsArgs(cores: readonly number[], s: NoiseSettings, seconds?: number): string[] {
  const args = ['--cores', cores.join(','), '--random-bytes', String(s.randomBytes), '--stream-bytes', String(s.streamBytes),
    '--stream-mode', s.streamMode, '--stream-chunk-bytes', String(s.streamChunkBytes),
    '--random-ops-per-turn', String(s.randomOpsPerTurn)];
  if (seconds !== undefined) args.push('--seconds', String(seconds));
  return args;
}

function checkOptions(o: NoiseOptions): void {
  if (o.cores.length === 0) {
    throw userError('BAD_ARGUMENT', 'the noise generator was given no cores',
      'on a 1-core machine there is no core left for noise; pass --cores explicitly to share the kernel\'s core');
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
  const settings = options.settings ?? resolveLevel(spec!.level, { l3Bytes: (await readL3Bytes()).bytes, memoryBudgetBytes: noiseMemoryBudget() });
  const binary = await ensureTool('noise', { cacheDir: options.cacheDir });
  const child = execa(binary, settingsArgs(options.cores, settings, options.seconds), { reject: false, buffer: false, stdin: 'ignore' });
  killAllOnExit();
  live.add(child);
  let hasExited = false;
  const exited = child.then(() => { hasExited = true; live.delete(child); });
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
  finished.catch(() => { /* surfaced through stop() */ });
  let stopping: Promise<NoiseStats> | undefined;
  return {
    level: options.settings ? 'custom' : spec!.level,
    cores: [...options.cores],
    settings,
    ready: withoutEvent(ready) as unknown as NoiseReady,
    pid: child.pid!,
    finished,
    stop() {
      stopping ??= (async () => {
        if (!hasExited) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        try { return await finished; } finally { clearTimeout(timer); }
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
  return new VeltairError('INTERNAL', `noise generator failed: ${message}`, 'the machine may be short of memory; try a lower level or fewer cores', 2);
}
