/**
 * The one place that says "the ISA": which vector widths and how many vector registers a target
 * has, which ISA levels veltair can build kernels for, and what a build at each level requires of
 * the CPU that runs it. Codegen asks it which intrinsic family to emit, the schedule space which
 * widths are valid, the builder which flags to pass, the bundle which CPU flags to demand.
 */
import { cpuInfo, isaFlagsOf } from './cpu.js';
import { CPUINFO_NAME, LEVEL_FLAGS, PORTABLE_LEVELS, type PortableLevel } from './isa-levels.js';

/** The vector extensions the kernels are written for. */
export interface Isa {
  readonly avx512f: boolean;
  readonly avx2: boolean;
  readonly fma: boolean;
}

/** Blocked-layout widths a target can run, widest first (1 = scalar, always available). */
export function vectorWidths(isa: Isa): readonly (16 | 8 | 1)[] {
  const ws: (16 | 8 | 1)[] = [];
  if (isa.avx512f) ws.push(16);
  if (isa.avx2 && isa.fma) ws.push(8);
  ws.push(1);
  return ws;
}

/** Vector registers a microkernel may use for accumulators + weights + one broadcast. */
export function vectorRegisters(isa: Isa): number {
  return isa.avx512f ? 32 : 16;
}

/** This CPU's vector extensions, from its flags. */
export function isaOfFlags(flags: ReadonlySet<string>): Isa {
  return { avx512f: flags.has('avx512f'), avx2: flags.has('avx2'), fma: flags.has('fma') };
}

export function machineIsa(flags: ReadonlySet<string> = cpuInfo().flags): Isa {
  return isaOfFlags(flags);
}

/** CPU flags a build with `-march=native` may use: every ISA extension of this CPU. */
export function nativeRequiredIsa(flags: ReadonlySet<string> = cpuInfo().flags): string[] {
  return isaFlagsOf(flags);
}

/** The ISA levels veltair builds kernels for: this CPU exactly, or a portable x86-64 level. */
export type IsaLevel = 'native' | 'x86-64-v3' | 'x86-64-v4';
export const ISA_LEVELS: readonly IsaLevel[] = ['native', 'x86-64-v3', 'x86-64-v4'];

/** The `-march=` value of a level. */
export function marchOf(level: IsaLevel): string {
  return `-march=${level}`;
}

/** cpuinfo flags for gcc's `-Q --help=target` output: every enabled -m option that names an ISA extension. */
export function enabledIsaFlags(helpTarget: string): string[] {
  const names = [...helpTarget.matchAll(/^\s+-m([a-z0-9_.]+)\s+\[enabled\]/gm)].map((m) => CPUINFO_NAME[m[1]!] ?? m[1]!);
  return isaFlagsOf(names);
}

/**
 * The CPU flags a kernel built at `level` may use: for a portable level, that level's extensions;
 * for native, what the compiler enables for this CPU (`compilerHelp`: gcc's `-march=native -Q
 * --help=target`, when the compiler can be asked), limited to flags this CPU has (`flags`: listed
 * or probed, cpu.ts).
 */
export function requiredIsaFor(level: IsaLevel, compilerHelp?: string, flags: ReadonlySet<string> = cpuInfo().flags): string[] {
  if (level !== 'native') return [...LEVEL_FLAGS[level]].sort();
  if (compilerHelp === undefined) return nativeRequiredIsa(flags);
  return enabledIsaFlags(compilerHelp).filter((f) => flags.has(f));
}

/** This CPU's vector extensions as a kernel built at `level` may use them. */
export function isaAtLevel(level: IsaLevel, flags: ReadonlySet<string> = cpuInfo().flags): Isa {
  if (level === 'native') return machineIsa(flags);
  return isaOfFlags(new Set(LEVEL_FLAGS[level]));
}

/** The flags of `level` this CPU lacks (empty: it can run, and so measure, kernels built at that level). */
export function missingForLevel(level: IsaLevel, flags: ReadonlySet<string> = cpuInfo().flags): string[] {
  if (level === 'native') return [];
  return LEVEL_FLAGS[level].filter((f) => !flags.has(f));
}

/** The portable levels a CPU with `flags` runs, lowest first. */
export function levelsOf(flags: ReadonlySet<string>): PortableLevel[] {
  return PORTABLE_LEVELS.filter((level) => LEVEL_FLAGS[level].every((f) => flags.has(f)));
}
