/**
 * The machine's copy bandwidth, measured (never looked up): native-kernels/copybw.c runs memcpy on
 * every given core at once, for buffers of each given size, warm. "Fraction of copy bandwidth" for a
 * runtime op is the op's bytes moved per second against this, at the same size, in the same run.
 */
import { execa } from 'execa';
import { VeltairError, userError } from '../errors.js';
import { median } from '../stats.js';
import { availableCores, parseCoreList } from '../toolchain/cpu.js';
import { ensureTool } from '../toolchain/tools.js';

export interface CopyBandwidthOptions {
  /** Cores to copy on, one thread each (default: the first available core). */
  readonly cores?: readonly number[];
  /** Timed repetitions per size (one extra warm-up repetition is run first and dropped). */
  readonly reps?: number;
  /** Minimum milliseconds per repetition. */
  readonly ms?: number;
  readonly cacheDir?: string;
}

/** Bytes copied per call (read that many, write that many) → median GB/s of bytes moved (2× the size per copy). */
export type CopyBandwidth = ReadonlyMap<number, number>;

export async function measureCopyBandwidth(sizes: readonly number[], options: CopyBandwidthOptions = {}): Promise<CopyBandwidth> {
  const all = availableCores();
  const cores = options.cores ? [...options.cores] : all.slice(0, 1);
  parseCoreList(cores.join(','), all);
  const distinct = [...new Set(sizes.map((s) => Math.max(64, Math.round(s))))].sort((a, b) => a - b);
  if (distinct.length === 0) return new Map();
  if (distinct.some((s) => !Number.isSafeInteger(s))) {
    throw userError('BAD_ARGUMENT', `copy sizes ${JSON.stringify(sizes)} are not byte counts`, 'give whole byte counts');
  }
  const reps = options.reps ?? 5;
  const binary = await ensureTool('copybw', options.cacheDir ? { cacheDir: options.cacheDir } : {});
  const r = await execa(
    binary,
    ['--cores', cores.join(','), '--ms', String(options.ms ?? 20), '--reps', String(reps + 1), '--bytes', distinct.join(',')],
    { reject: false },
  );
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { bytes?: number; gbps?: number[]; error?: string });
  const failed = lines.find((l) => l.error);
  if (r.exitCode !== 0 || failed || lines.length !== distinct.length) {
    throw new VeltairError(
      'INTERNAL',
      `copy bandwidth probe failed: ${failed?.error ?? (r.stderr.trim() || `exit ${r.exitCode}`)}`,
      'check that the cores are available to this process',
      2,
    );
  }
  // Repetition 0 warms up clocks and pages; it is not a sample.
  return new Map(lines.map((l) => [l.bytes!, median(l.gbps!.slice(1))]));
}
