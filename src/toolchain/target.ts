/**
 * The target: the machine fingerprint every schedule, kernel and tuning record is valid for — CPU
 * model, vector ISA, cores, caches, and the C compiler with the kernel flags. Detected once per
 * process from cpu.ts, caches.ts and compiler.ts; what had to be guessed is reported by
 * targetNotes(), never silently folded in.
 */
import { availableParallelism } from 'node:os';
import { detectCaches, type CacheSizes } from './caches.js';
import { compilerVersion } from './compiler.js';
import { cpuInfo } from './cpu.js';
import { flagsFor } from './flags.js';
import { isaOfFlags, type Isa } from './isa.js';

export type { CacheSizes } from './caches.js';

export interface Target {
  readonly cpuModel: string;
  readonly isa: Isa;
  readonly cores: number;
  readonly caches: CacheSizes;
  /** First line of `cc --version`. */
  readonly cc: string;
  readonly cflags: readonly string[];
}

let detected: Promise<Target> | undefined;

/** This machine as a Target (asked once per process). */
export function detectTarget(): Promise<Target> {
  detected ??= (async () => {
    const { model, flags } = cpuInfo();
    const [caches, version] = await Promise.all([detectCaches(), compilerVersion()]);
    return {
      cpuModel: model,
      isa: isaOfFlags(flags),
      cores: availableParallelism(),
      caches: caches.sizes,
      cc: version.split('\n')[0] ?? version,
      cflags: flagsFor('kernel'),
    };
  })();
  return detected;
}

/** What detectTarget had to assume (one line each; empty when everything was read from the machine). */
export async function targetNotes(): Promise<readonly string[]> {
  return (await detectCaches()).notes;
}

/** A target with the given ISA, for tests and cross-generation (cores/caches of a small machine). */
export function syntheticTarget(isa: Isa, cores = 2): Target {
  return {
    cpuModel: 'synthetic', isa, cores, caches: { l1d: 32 * 1024, l2: 1024 * 1024, l3: 16 * 1024 * 1024 },
    cc: 'cc', cflags: flagsFor('kernel'),
  };
}
