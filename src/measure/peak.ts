/**
 * The machine's FMA peak, measured (never looked up): native-kernels/peak.c runs independent FMAs
 * on every given core at once. "Percent of FMA peak" for a layer is taken against this, measured
 * in the same run as the layer, on the same cores and thread count. The INT8 kernels are held to
 * the u8×s8 dot-product peak instead (VNNI where the CPU has it), measured by the same probe.
 */
import { execa } from 'execa';
import { VeltairError, userError } from '../errors.js';
import { availableCores, parseCoreList } from '../toolchain/cpu.js';
import { ensureTool } from '../toolchain/tools.js';
import { median } from '../stats.js';

export interface PeakOptions {
  /** Threads, one per core; defaults to the number of cores given, else 1. */
  readonly threads?: number;
  /** Cores to pin the threads to; defaults to the first `threads` available cores. */
  readonly cores?: readonly number[];
  /** Timed repetitions (one extra warm-up repetition is run first and dropped). */
  readonly reps?: number;
  /** Minimum milliseconds per repetition. */
  readonly ms?: number;
  readonly cacheDir?: string;
}

export interface PeakSample {
  /** GFLOP/s of each thread in this repetition, in core order. */
  readonly perThread: readonly number[];
  /** Sum over threads. */
  readonly total: number;
}

export interface PeakResult {
  readonly isa: string;
  readonly accumulators: number;
  readonly cores: readonly number[];
  /** Median over repetitions of the per-thread mean. */
  readonly gflopsPerCore: number;
  /** Median over repetitions of the sum over threads. */
  readonly gflops: number;
  readonly samples: readonly PeakSample[];
}

export async function measurePeakGflops(options: PeakOptions = {}): Promise<PeakResult> {
  return measurePeak(options, 'fp32');
}

export interface Int8PeakResult {
  /** avx512-vnni, avx-vnni, avx2 (vpmaddubsw) or scalar: the dot product the INT8 kernels have here. */
  readonly isa: string;
  readonly accumulators: number;
  readonly cores: readonly number[];
  /** Giga-operations per second, 2 per u8×s8 multiply-add (as GFLOP/s counts an FMA). */
  readonly gopsPerCore: number;
  readonly gops: number;
  readonly samples: readonly PeakSample[];
}

export async function measurePeakInt8Gops(options: PeakOptions = {}): Promise<Int8PeakResult> {
  const r = await measurePeak(options, 'int8');
  return { isa: r.isa, accumulators: r.accumulators, cores: r.cores, gopsPerCore: r.gflopsPerCore, gops: r.gflops, samples: r.samples };
}

async function measurePeak(options: PeakOptions, kind: 'fp32' | 'int8'): Promise<PeakResult> {
  const field = kind === 'fp32' ? 'gflops' : 'gops';
  const all = availableCores();
  const threads = options.threads ?? options.cores?.length ?? 1;
  const cores = options.cores ? [...options.cores] : all.slice(0, threads);
  if (!Number.isInteger(threads) || threads < 1 || cores.length !== threads) {
    throw userError(
      'BAD_ARGUMENT',
      `peak measurement asked for ${threads} threads on cores ${JSON.stringify(cores)}`,
      `give one core per thread; this machine offers ${all.length} cores (${all.join(',')})`,
    );
  }
  parseCoreList(cores.join(','), all);
  const reps = options.reps ?? 5;
  const ms = options.ms ?? 50;
  const binary = await ensureTool('peak', { cacheDir: options.cacheDir });
  const args = ['--cores', cores.join(','), '--ms', String(ms), '--reps', String(reps + 1), '--kind', kind];
  const result = await execa(binary, args, { reject: false });
  const lines = result.stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { rep?: number; isa?: string; accumulators?: number; gflops?: number[]; gops?: number[]; error?: string });
  const failed = lines.find((l) => l.error);
  if (result.exitCode !== 0 || failed || lines.length !== reps + 1 || lines.some((l) => !Array.isArray(l[field]))) {
    throw new VeltairError(
      'INTERNAL',
      `${kind === 'fp32' ? 'FMA' : 'INT8 dot-product'} peak probe failed: ${failed?.error ?? (result.stderr.trim() || `exit ${result.exitCode}`)}`,
      'check that the cores are available to this process',
      2,
    );
  }
  // Repetition 0 warms up clocks and vector units; it is not a sample.
  const samples = lines.slice(1).map((l) => {
    const perThread = l[field]!;
    return { perThread, total: perThread.reduce((a, b) => a + b, 0) };
  });
  return {
    isa: lines[0]!.isa!,
    accumulators: lines[0]!.accumulators!,
    cores,
    gflopsPerCore: median(samples.map((s) => s.total / threads)),
    gflops: median(samples.map((s) => s.total)),
    samples,
  };
}
