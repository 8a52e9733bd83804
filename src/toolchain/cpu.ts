/**
 * This CPU as the OS describes it, completed by what it executes: /proc/cpuinfo is read here and
 * nowhere else (model name and flags, once per process), and so is the process's affinity mask
 * (the cores it may run on). A flag of an ISA level that cpuinfo leaves out although the CPU
 * claims the level (a hypervisor hiding `abm` on Zen 5) is settled by running its instruction
 * (isa-probe.ts); the result keeps which flags were listed and which were probed.
 *
 * Every fact comes through a pure function of its source (parseCpuInfo, settleCpuInfo), so tests
 * run them on the host fixtures in test/fixtures/hosts/ as well as on this machine.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { userError } from '../errors.js';
import { flagsToProbe } from './isa-levels.js';
import { runIsaProbe, type IsaProber } from './isa-probe.js';

export interface CpuInfo {
  /** `model name`, or the Node arch when /proc/cpuinfo is unreadable. */
  readonly model: string;
  /** The flags this CPU has: those cpuinfo lists, plus those the probe found running (empty when unreadable). */
  readonly flags: ReadonlySet<string>;
  /** The flags cpuinfo lists for the first processor. */
  readonly listed: ReadonlySet<string>;
  /** Level flags cpuinfo did not list, settled by running them: flag → whether the CPU executes it. */
  readonly probed: Readonly<Record<string, boolean>>;
  /** Why unlisted level flags could not be settled (they count as absent), when the probe failed. */
  readonly probeError?: string;
}

let cached: CpuInfo | undefined;

/** The first processor of a /proc/cpuinfo text, as listed (nothing probed). */
export function parseCpuInfo(text: string): CpuInfo {
  const lines = text.split('\n');
  const field = (key: string) => (lines.find((l) => l.startsWith(key)) ?? '').split(':').slice(1).join(':').trim();
  const listed = new Set(field('flags').split(/\s+/).filter(Boolean));
  return { model: field('model name') || process.arch, flags: listed, listed, probed: {} };
}

/**
 * `info` with its unsettled level flags (isa-levels.ts flagsToProbe) settled by `probe`: those the
 * probe ran join the flags. A flag the probe has no answer for, or a probe that throws, leaves
 * the flag absent, as cpuinfo said.
 */
export function settleCpuInfo(info: CpuInfo, probe: IsaProber): CpuInfo {
  const unsettled = flagsToProbe(info.listed);
  if (unsettled.length === 0) return info;
  try {
    const answers = probe(unsettled);
    const probed = Object.fromEntries(unsettled.filter((f) => f in answers).map((f) => [f, answers[f]!]));
    const flags = new Set([...info.listed, ...Object.keys(probed).filter((f) => probed[f])]);
    return { ...info, flags, probed };
  } catch (e) {
    return {
      ...info,
      probeError: `the ISA probe failed (${(e as Error).message.split('\n')[0]}): ${unsettled.join(', ')} count as absent`,
    };
  }
}

export function cpuInfo(): CpuInfo {
  if (cached) return cached;
  let text: string;
  try {
    text = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    cached = { model: process.arch, flags: new Set(), listed: new Set(), probed: {} };
    return cached;
  }
  cached = settleCpuInfo(parseCpuInfo(text), runIsaProbe);
  return cached;
}

/** The flags of `info` the probe found running although cpuinfo did not list them (sorted). */
export function probedFlags(info: CpuInfo): string[] {
  return Object.keys(info.probed)
    .filter((f) => info.probed[f])
    .sort();
}

/**
 * What `-march=native` means on this machine, for cache keys: an object built for one CPU is
 * never reused on another.
 */
export function cpuIdentity(): string {
  const { model, flags } = cpuInfo();
  return `${model}\n${[...flags].join(' ')}`;
}

/** cpuinfo flags that name instruction-set extensions a compiler can target (not OS or erratum flags). */
const ISA_FLAG = new RegExp(
  `^(${[
    'mmx',
    'sse\\d?(_\\d)?',
    'ssse3',
    'lahf_lm',
    'sse4a',
    'pni',
    'avx\\w*',
    'fma4?',
    'f16c',
    'bmi[12]',
    'adx',
    'popcnt',
    'movbe',
    'abm',
    'lzcnt',
    'aes',
    'pclmulqdq',
    'vpclmulqdq',
    'vaes',
    'gfni',
    'sha_ni',
    'xop',
    'tbm',
    'amx\\w*',
    'rdrand',
    'mmxext',
    'rdseed',
    'clflushopt',
    'clwb',
    'xsavec?',
    'xsaveopt',
    'xsaves',
    'movdiri',
    'movdir64b',
    'serialize',
    'cx16',
    'prefetchw',
    'prfchw',
    'rdpid',
    'wbnoinvd',
    'ptwrite',
    'lwp',
  ].join('|')})$`,
);

export function isaFlagsOf(flags: Iterable<string>): string[] {
  return [...new Set([...flags].filter((f) => ISA_FLAG.test(f)))].sort();
}

/** Cores this process may run on (its affinity mask), else every core the OS lists. */
export function availableCores(): number[] {
  try {
    const line = readFileSync('/proc/self/status', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Cpus_allowed_list:'));
    if (line) {
      const cores = line
        .split(':')[1]!
        .trim()
        .split(',')
        .flatMap((part) => {
          const [a, b] = part.split('-').map(Number);
          return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
        });
      if (cores.length > 0 && cores.every(Number.isInteger)) return cores;
    }
  } catch {
    /* not Linux */
  }
  return cpus().map((_, i) => i);
}

/** Parse and check a `--cores 1,2` list against the available cores. */
export function parseCoreList(text: string, allCores: readonly number[] = availableCores()): number[] {
  const parts = text.split(',').map((s) => s.trim());
  const cores = parts.map(Number);
  const bad = parts.find((p, i) => !/^\d+$/.test(p) || !allCores.includes(cores[i]!));
  if (bad !== undefined || new Set(cores).size !== cores.length) {
    throw userError(
      'BAD_ARGUMENT',
      `--cores ${JSON.stringify(text)} is not a list of distinct available cores`,
      `give comma-separated core ids from ${allCores.join(',')}, e.g. --cores ${allCores[allCores.length - 1]}`,
    );
  }
  return cores;
}

/**
 * The CPU limit of this process's cgroup in whole cores (a Kubernetes pod's `limits.cpu`), rounded
 * down and at least 1; undefined when there is none (cgroup v2 `cpu.max`, else v1 cfs quota).
 */
export function cgroupCpuLimit(read: (path: string) => string = (p) => readFileSync(p, 'utf8')): number | undefined {
  const cores = (quota: number, period: number) => (quota > 0 && period > 0 ? Math.max(1, Math.floor(quota / period)) : undefined);
  try {
    const [quota, period] = read('/sys/fs/cgroup/cpu.max').trim().split(/\s+/);
    return quota === 'max' ? undefined : cores(Number(quota), Number(period));
  } catch {
    /* not cgroup v2 */
  }
  try {
    return cores(Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us').trim()), Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us').trim()));
  } catch {
    return undefined;
  }
}
