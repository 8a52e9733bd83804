/**
 * Calibration: what each interference level does to a kernel on this machine, measured. For every
 * level, rounds of (quiet, noisy) measured back to back — order alternating so drift biases
 * neither arm — of three probes pinned on the kernel core (native-kernels/probe.c):
 *   cache  — sums over a buffer that fits L2 (should barely notice a co-runner),
 *   l3     — sums over a buffer beyond L2 but inside one L3 slice (what cache-tiled kernels rely on),
 *   stream — sums over ~1 ms chunks walking a buffer far larger than L3 (DRAM bandwidth).
 * Each round yields a paired ratio noisy/quiet of the probe's median time; a level is reported as
 * the median and spread of those ratios, plus what the co-runner itself achieved while it ran.
 */
import { execa } from 'execa';
import { userError } from '../errors.js';
import { ensureTool } from '../toolchain/tools.js';
import { readJsonLines } from '../toolchain/json-lines.js';
import { LEVELS, levelSpec, noiseMemoryBudget, resolveLevel, type NoiseSettings } from './levels.js';
import { availableCores, cpuInfo } from '../toolchain/cpu.js';
import { noiseCores, startNoise, type NoiseStats } from './generator.js';
import { detectCaches } from '../toolchain/caches.js';
import { interleave, median, pairedRatios } from '../stats.js';

const MiB = 1 << 20;

export type ProbeKind = 'cache' | 'l3' | 'stream';
const PROBES: readonly ProbeKind[] = ['cache', 'l3', 'stream'];

export interface ProbeSizes {
  readonly cacheBytes: number;
  readonly l3Bytes: number;
  readonly streamBytes: number;
}

export interface CalibrationOptions {
  readonly rounds?: number;
  readonly levels?: readonly number[];
  /** Cores for the co-runner; default: every available core but the kernel core. */
  readonly noiseCores?: readonly number[];
  /** Milliseconds each probe runs per measurement. */
  readonly probeMs?: Readonly<Record<ProbeKind, number>>;
  readonly probeSizes?: ProbeSizes;
  /** Replace a level's settings (tests use tiny ones); the report says which settings ran. */
  readonly settingsFor?: (level: number) => NoiseSettings;
  readonly cacheDir?: string;
  readonly onProgress?: (message: string) => void;
}

/** Paired noisy/quiet ratios of one probe over the rounds; > 1 means the level slowed it down. */
export interface ProbeCalibration {
  readonly medianRatio: number;
  readonly minRatio: number;
  readonly maxRatio: number;
  readonly q1Ratio: number;
  readonly q3Ratio: number;
  /** One ratio per round. */
  readonly samples: readonly number[];
  /** The probe's median time per round, milliseconds, quiet and under the level. */
  readonly quietMedianMs: readonly number[];
  readonly noisyMedianMs: readonly number[];
  /**
   * Per round, the probe's CPU time / wall time. Well below 1 the probe was descheduled (the
   * machine is oversubscribed) and a ratio measures CPU contention, not cache or memory contention.
   */
  readonly quietCpuShare: readonly number[];
  readonly noisyCpuShare: readonly number[];
}

export interface LevelCalibration {
  readonly level: number;
  readonly summary: string;
  readonly settings: NoiseSettings;
  readonly cacheProbe: ProbeCalibration;
  readonly l3Probe: ProbeCalibration;
  readonly streamProbe: ProbeCalibration;
  /** What the co-runner moved while the probes ran (median over rounds, all its threads together). */
  readonly noise: { readonly streamGBps: number; readonly randomMopsPerSecond: number };
}

export interface Calibration {
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly l3Bytes: number;
    readonly l3Source: string;
    readonly kernelCore: number;
    readonly noiseCores: readonly number[];
    readonly probeSizes: ProbeSizes;
  };
  readonly rounds: number;
  readonly levels: readonly LevelCalibration[];
}

export function defaultProbeSizes(l3Bytes: number): ProbeSizes {
  const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));
  return {
    cacheBytes: 256 * 1024,
    l3Bytes: clamp(Math.floor(l3Bytes / 4 / MiB) * MiB, 2 * MiB, 8 * MiB),
    streamBytes: clamp(Math.floor((2 * l3Bytes) / MiB) * MiB, 256 * MiB, 1024 * MiB),
  };
}

interface ProbeSample {
  readonly samplesMs: number[];
  readonly cpuShare: number;
}

interface Probe {
  measure(kind: ProbeKind, ms: number): Promise<ProbeSample>;
  close(): Promise<void>;
}

async function startProbe(core: number, sizes: ProbeSizes, cacheDir: string | undefined): Promise<Probe> {
  const binary = await ensureTool('probe', { cacheDir });
  const child = execa(
    binary,
    [
      '--core',
      String(core),
      '--cache-bytes',
      String(sizes.cacheBytes),
      '--l3-bytes',
      String(sizes.l3Bytes),
      '--stream-bytes',
      String(sizes.streamBytes),
    ],
    { reject: false, buffer: false, stdin: 'pipe' },
  );
  const reader = readJsonLines(child, 'probe');
  try {
    await reader.waitFor((e) => e['event'] === 'ready', { timeoutMs: 120_000, what: 'ready' });
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  return {
    async measure(kind, ms) {
      const from = reader.events.length;
      child.stdin!.write(`${kind} ${ms}\n`);
      const reply = await reader.waitFor((e) => e['kind'] === kind, { from, timeoutMs: ms * 20 + 30_000, what: `a ${kind} measurement` });
      return { samplesMs: (reply['samplesNs'] as number[]).map((ns) => ns / 1e6), cpuShare: reply['cpuShare'] as number };
    },
    async close() {
      child.stdin!.end('quit\n');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await child;
      clearTimeout(timer);
    },
  };
}

type ProbeRun = Record<ProbeKind, ProbeSample>;

function probeCalibration(quiet: readonly ProbeRun[], noisy: readonly ProbeRun[], kind: ProbeKind): ProbeCalibration {
  const { ratios, ...spread } = pairedRatios(
    quiet.map((r) => r[kind].samplesMs),
    noisy.map((r) => r[kind].samplesMs),
  );
  return {
    ...spread,
    samples: ratios,
    quietMedianMs: quiet.map((r) => median(r[kind].samplesMs)),
    noisyMedianMs: noisy.map((r) => median(r[kind].samplesMs)),
    quietCpuShare: quiet.map((r) => r[kind].cpuShare),
    noisyCpuShare: noisy.map((r) => r[kind].cpuShare),
  };
}

function noiseThroughput(stats: readonly NoiseStats[]): LevelCalibration['noise'] {
  const perSecond = (f: (s: NoiseStats) => number) => median(stats.map((s) => (s.seconds > 0 ? f(s) / s.seconds : 0)));
  return {
    streamGBps: perSecond((s) => s.streamBytesRead + s.streamBytesWritten) / 1e9,
    randomMopsPerSecond: perSecond((s) => s.randomOps) / 1e6,
  };
}

function chooseCores(options: CalibrationOptions): { kernelCore: number; noise: number[] } {
  const all = availableCores();
  if (options.noiseCores) {
    const kernelCore = all.find((c) => !options.noiseCores!.includes(c));
    if (kernelCore === undefined) {
      throw userError(
        'BAD_ARGUMENT',
        `--cores ${options.noiseCores.join(',')} leaves no core for the calibration probe`,
        'leave at least one available core out of --cores',
      );
    }
    return { kernelCore, noise: [...options.noiseCores] };
  }
  const kernelCore = all[0]!;
  const noise = noiseCores([kernelCore], all);
  if (noise.length === 0) {
    throw userError(
      'BAD_ARGUMENT',
      'this machine has one available core: no core is left for the co-runner',
      'calibration needs at least two cores (one for the probe, one or more for the noise)',
    );
  }
  return { kernelCore, noise };
}

export async function calibrate(options: CalibrationOptions = {}): Promise<Calibration> {
  const rounds = options.rounds ?? 5;
  if (!Number.isInteger(rounds) || rounds < 1) {
    throw userError(
      'BAD_ARGUMENT',
      `--rounds ${rounds} is not a positive integer`,
      'give the number of quiet/noisy rounds per level, e.g. --rounds 5',
    );
  }
  const levels = (options.levels ?? LEVELS.map((l) => l.level)).map((l) => levelSpec(l));
  const { kernelCore, noise } = chooseCores(options);
  const caches = await detectCaches();
  const l3 = { bytes: caches.sizes.l3, source: caches.sources.l3 };
  const probeSizes = options.probeSizes ?? defaultProbeSizes(l3.bytes);
  const probeMs = options.probeMs ?? { cache: 100, l3: 100, stream: 300 };
  const progress = options.onProgress ?? (() => {});
  const probe = await startProbe(kernelCore, probeSizes, options.cacheDir);
  const runProbes = async (): Promise<ProbeRun> => {
    const run = {} as ProbeRun;
    for (const kind of PROBES) run[kind] = await probe.measure(kind, probeMs[kind]);
    return run;
  };
  try {
    const results: LevelCalibration[] = [];
    for (const spec of levels) {
      const settings =
        options.settingsFor?.(spec.level) ?? resolveLevel(spec.level, { l3Bytes: l3.bytes, memoryBudgetBytes: noiseMemoryBudget() });
      const noiseStats: NoiseStats[] = [];
      const samples = await interleave(
        ['quiet', 'noisy'] as const,
        rounds,
        async (arm) => {
          if (arm === 'quiet') return runProbes();
          const handle = await startNoise({ level: spec.level, cores: noise, settings, cacheDir: options.cacheDir });
          try {
            return await runProbes();
          } finally {
            noiseStats.push(await handle.stop());
          }
        },
        { alternate: true, onStep: (arm, round) => progress(`level ${spec.level}: round ${round + 1}/${rounds}, ${arm}`) },
      );
      results.push({
        level: spec.level,
        summary: spec.summary,
        settings,
        cacheProbe: probeCalibration(samples.quiet, samples.noisy, 'cache'),
        l3Probe: probeCalibration(samples.quiet, samples.noisy, 'l3'),
        streamProbe: probeCalibration(samples.quiet, samples.noisy, 'stream'),
        noise: noiseThroughput(noiseStats),
      });
    }
    return {
      machine: {
        cpu: cpuInfo().model,
        cores: availableCores().length,
        l3Bytes: l3.bytes,
        l3Source: l3.source,
        kernelCore,
        noiseCores: noise,
        probeSizes,
      },
      rounds,
      levels: results,
    };
  } finally {
    await probe.close();
  }
}
