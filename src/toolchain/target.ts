/**
 * The target: the machine fingerprint every schedule, kernel and tuning record is valid for — CPU
 * model, vector ISA, cores, caches, and the C compiler with the kernel flags. Detected once per
 * process from cpu.ts, caches.ts and compiler.ts; what had to be guessed is reported by
 * targetNotes(), never silently folded in.
 */
import { availableParallelism } from 'node:os';
import { detectCaches, type CacheSizes } from './caches.js';
import { compilerVersion } from './compiler.js';
import { cpuInfo, type CpuInfo } from './cpu.js';
import { flagsFor } from './flags.js';
import { isaAtLevel, levelOfFlags, type Isa, type IsaLevel } from './isa.js';

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

/** What a target is made of, as read from a machine (detectTarget) or a host fixture (tests). */
export interface HostFacts {
  readonly cpu: CpuInfo;
  readonly caches: CacheSizes;
  readonly cores: number;
  /** First line of `cc --version`. */
  readonly cc: string;
}

/** The target of a host with these facts, its kernels built at `level`. */
export function targetOf(facts: HostFacts, level: IsaLevel = 'native'): Target {
  return {
    cpuModel: facts.cpu.model,
    isa: isaAtLevel(level, facts.cpu.flags),
    cores: facts.cores,
    caches: facts.caches,
    cc: facts.cc,
    cflags: flagsFor('kernel', level),
  };
}

const detected = new Map<IsaLevel, Promise<Target>>();

/**
 * This machine as a Target (asked once per process and level). At a portable ISA level the target
 * has that level's vector extensions and kernel flags (-march=x86-64-v3 / -v4): its records and
 * bundles are apart from native ones, as the flags are part of the fingerprint.
 */
export function detectTarget(level: IsaLevel = 'native'): Promise<Target> {
  let t = detected.get(level);
  if (!t) {
    t = (async () => {
      const [caches, version] = await Promise.all([detectCaches(), compilerVersion()]);
      return targetOf(
        { cpu: cpuInfo(), caches: caches.sizes, cores: availableParallelism(), cc: version.split('\n')[0] ?? version },
        level,
      );
    })();
    detected.set(level, t);
  }
  return t;
}

/** The ISA level a target's kernels are built for (from its -march flag, and the VNNI option with it). */
export function targetLevel(t: Pick<Target, 'cflags'>): IsaLevel {
  return levelOfFlags(t.cflags);
}

/** What detectTarget had to assume (one line each; empty when everything was read from the machine). */
export async function targetNotes(): Promise<readonly string[]> {
  return (await detectCaches()).notes;
}
/** A target with the given ISA, for tests and cross-generation (cores/caches of a small machine). */
export function syntheticTarget(isa: Isa, cores = 2): Target {
  return {
    cpuModel: 'synthetic',
    isa,
    cores,
    caches: { l1d: 32 * 1024, l2: 1024 * 1024, l3: 16 * 1024 * 1024 },
    cc: 'cc',
    cflags: flagsFor('kernel'),
  };
}
