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

/**
 * The ISA levels veltair builds kernels for: this CPU exactly, a portable x86-64 level, or one of
 * those with its VNNI extension (the psABI levels have none, and the INT8 kernels' fastest paths
 * need it): x86-64-v3-vnni adds AVX-VNNI, x86-64-v4-vnni AVX-512 VNNI.
 */
export type IsaLevel = 'native' | 'x86-64-v3' | 'x86-64-v4' | 'x86-64-v3-vnni' | 'x86-64-v4-vnni';
export const ISA_LEVELS: readonly IsaLevel[] = ['native', 'x86-64-v3', 'x86-64-v4', 'x86-64-v3-vnni', 'x86-64-v4-vnni'];

/** Each VNNI level: the portable level under it, its gcc option and its /proc/cpuinfo flag. */
const VNNI_LEVELS = {
  'x86-64-v3-vnni': { base: 'x86-64-v3', gcc: '-mavxvnni', cpuinfo: 'avx_vnni' },
  'x86-64-v4-vnni': { base: 'x86-64-v4', gcc: '-mavx512vnni', cpuinfo: 'avx512_vnni' },
} as const satisfies Record<string, { base: PortableLevel; gcc: string; cpuinfo: string }>;

const vnniOf = (level: IsaLevel) => (level === 'x86-64-v3-vnni' || level === 'x86-64-v4-vnni' ? VNNI_LEVELS[level] : undefined);

/** The cpuinfo flags a portable (or VNNI) level guarantees. */
export function levelFlags(level: Exclude<IsaLevel, 'native'>): readonly string[] {
  const v = vnniOf(level);
  return v ? [...LEVEL_FLAGS[v.base], v.cpuinfo] : LEVEL_FLAGS[level as PortableLevel];
}

/** The compiler flags that select a level in place of `-march=native`. */
export function marchFlags(level: Exclude<IsaLevel, 'native'>): string[] {
  const v = vnniOf(level);
  return v ? [`-march=${v.base}`, v.gcc] : [`-march=${level}`];
}

/** The level a build's flags select (see marchFlags). */
export function levelOfFlags(cflags: readonly string[]): IsaLevel {
  const march = cflags.find((f) => f.startsWith('-march='))?.slice('-march='.length);
  if (march === 'x86-64-v3') return cflags.includes(VNNI_LEVELS['x86-64-v3-vnni'].gcc) ? 'x86-64-v3-vnni' : march;
  if (march === 'x86-64-v4') return cflags.includes(VNNI_LEVELS['x86-64-v4-vnni'].gcc) ? 'x86-64-v4-vnni' : march;
  return 'native';
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
  if (level !== 'native') return [...levelFlags(level)].sort();
  if (compilerHelp === undefined) return nativeRequiredIsa(flags);
  return enabledIsaFlags(compilerHelp).filter((f) => flags.has(f));
}

/** This CPU's vector extensions as a kernel built at `level` may use them. */
export function isaAtLevel(level: IsaLevel, flags: ReadonlySet<string> = cpuInfo().flags): Isa {
  if (level === 'native') return machineIsa(flags);
  return isaOfFlags(new Set(levelFlags(level)));
}

/** The flags of `level` this CPU lacks (empty: it can run, and so measure, kernels built at that level). */
export function missingForLevel(level: IsaLevel, flags: ReadonlySet<string> = cpuInfo().flags): string[] {
  if (level === 'native') return [];
  return levelFlags(level).filter((f) => !flags.has(f));
}

/** The portable levels a CPU with `flags` runs, lowest first. */
export function levelsOf(flags: ReadonlySet<string>): PortableLevel[] {
  return PORTABLE_LEVELS.filter((level) => LEVEL_FLAGS[level].every((f) => flags.has(f)));
}

/**
 * The integer dot-product paths of the INT8 kernels, fastest first: AVX-512 VNNI (`vpdpbusd`: four
 * u8 × s8 products summed into each 32-bit lane, exactly), AVX-VNNI (the same instruction on 256-bit
 * registers, VEX-encoded: AVX2 parts from Alder Lake and Zen 5 on), AVX2 (`vpmaddubsw` + `vpmaddwd`, with
 * the 16-bit pair saturation avoided by splitting the activation, see codegen/int8-isa.ts), and
 * plain C. The kernels name their path's extensions in a `#pragma GCC target`, so each compiles
 * under any `-march`; what a CPU may run is decided here, from its flags.
 */
export type Int8Path = 'avx512vnni' | 'avxvnni' | 'avx2' | 'scalar';
export const INT8_PATHS: readonly Int8Path[] = ['avx512vnni', 'avxvnni', 'avx2', 'scalar'];

/** /proc/cpuinfo flags each INT8 path needs (its kernels also use AVX-512BW/VL byte stores and masks). */
export const INT8_PATH_FLAGS: Readonly<Record<Int8Path, readonly string[]>> = {
  avx512vnni: ['avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni'],
  avxvnni: ['avx', 'avx2', 'avx_vnni'],
  avx2: ['avx', 'avx2'],
  scalar: [],
};

/** gcc's target names of the same extensions (`#pragma GCC target`). */
export const INT8_PATH_TARGET: Readonly<Record<Int8Path, string>> = {
  avx512vnni: 'avx512f,avx512bw,avx512vl,avx512vnni',
  avxvnni: 'avx,avx2,avxvnni',
  avx2: 'avx,avx2',
  scalar: '',
};

/** The flags of an INT8 path a CPU with `flags` lacks (empty: it can run that path's kernels). */
export function missingForInt8Path(path: Int8Path, flags: ReadonlySet<string> = cpuInfo().flags): string[] {
  return INT8_PATH_FLAGS[path].filter((f) => !flags.has(f));
}

/**
 * The INT8 paths a kernel built at `level` may use on a CPU with `flags`, fastest first: at a
 * portable level only what that level guarantees (x86-64-v4 has no VNNI; x86-64-v4-vnni does), natively what the CPU has.
 */
export function int8PathsAt(level: IsaLevel, flags: ReadonlySet<string> = cpuInfo().flags): Int8Path[] {
  const have = level === 'native' ? flags : new Set(levelFlags(level));
  return INT8_PATHS.filter((p) => missingForInt8Path(p, have).length === 0);
}
