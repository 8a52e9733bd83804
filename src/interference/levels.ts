/**
 * The interference levels. LEVELS is the one table that defines what each level
 * does (native-kernels/noise.c only executes the settings it is given); what a level *means* on a
 * machine is measured by calibrate.ts, not asserted here; generator.ts runs them.
 *
 * Sizes are totals over all noise threads (each thread owns a disjoint slice), derived from the
 * machine's reported L3 size and clamped: the OS may report a whole socket's L3 (this 2-core Zen5
 * VM reports ~508 MiB although one CCD's slice is 32 MiB), so a bare multiple of it is no guide.
 */
import { freemem } from 'node:os';
import { userError } from '../errors.js';

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
    level: 1,
    summary: 'random read-modify-write over half the L3 (at most 16 MiB): evicts cache-resident data',
    random: { l3Multiple: 0.5, minBytes: 4 * MiB, maxBytes: 16 * MiB },
    stream: null,
    streamChunkBytes: 0,
    randomOpsPerTurn: 4096,
  },
  {
    level: 2,
    summary: 'random read-modify-write over 4× the L3 (256 MiB to 2 GiB): DRAM-latency-bound misses, many in flight',
    random: { l3Multiple: 4, minBytes: 256 * MiB, maxBytes: 2 * GiB },
    stream: null,
    streamChunkBytes: 0,
    randomOpsPerTurn: 4096,
  },
  {
    level: 3,
    summary: 'streaming loads + ordinary stores (read-for-ownership) over 2× the L3 (1 to 2 GiB)',
    random: null,
    stream: { l3Multiple: 2, minBytes: 1 * GiB, maxBytes: 2 * GiB, mode: 'copy' },
    streamChunkBytes: 1 * MiB,
    randomOpsPerTurn: 0,
  },
  {
    level: 4,
    summary: 'streaming loads + non-temporal stores over 4× the L3 (2 to 4 GiB), mixed with random read-modify-write over 512 MiB to 1 GiB',
    random: { l3Multiple: 2, minBytes: 512 * MiB, maxBytes: 1 * GiB },
    stream: { l3Multiple: 4, minBytes: 2 * GiB, maxBytes: 4 * GiB, mode: 'nt' },
    streamChunkBytes: 1 * MiB,
    randomOpsPerTurn: 1024,
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

export function levelSpec(level: number): LevelSpec {
  const spec = LEVELS.find((l) => l.level === level);
  if (!spec) {
    throw userError(
      'BAD_ARGUMENT',
      `interference level ${JSON.stringify(level)} does not exist`,
      'use a level from 1 to 4 (0 means quiet: run no co-runner); `veltair noise --help` says what each level does',
    );
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
    randomBytes,
    streamBytes,
    streamMode: spec.stream ? spec.stream.mode : 'none',
    streamChunkBytes: spec.streamChunkBytes,
    randomOpsPerTurn: spec.randomOpsPerTurn,
    cappedByMemory,
  };
}

/** Half the memory the OS calls free: the co-runner must never push the machine into swap or OOM. */
export function noiseMemoryBudget(): number {
  return Math.floor(freemem() / 2);
}
