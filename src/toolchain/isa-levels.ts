/**
 * The x86-64 psABI microarchitecture levels as /proc/cpuinfo names their extensions: data only,
 * read by cpu.ts (which flags a probe must settle) and isa.ts (what a build at a level requires).
 * Each level includes the one below it. The anchor is the extension that says a CPU means to be
 * at that level at all: only a CPU listing it has its other missing flags of the level probed.
 */

/** gcc's -m option names → /proc/cpuinfo flag names, where they differ (the rest match exactly). */
export const CPUINFO_NAME: Readonly<Record<string, string>> = {
  bmi: 'bmi1',
  lzcnt: 'abm',
  sse3: 'pni',
  'sse4.1': 'sse4_1',
  'sse4.2': 'sse4_2',
  pclmul: 'pclmulqdq',
  sha: 'sha_ni',
  rdrnd: 'rdrand',
  sahf: 'lahf_lm',
};

export type PortableLevel = 'x86-64-v2' | 'x86-64-v3' | 'x86-64-v4';

const BASE = ['mmx', 'sse', 'sse2'];
const V2 = [...BASE, 'cx16', 'lahf_lm', 'popcnt', 'pni', 'sse4_1', 'sse4_2', 'ssse3'];
const V3 = [...V2, 'avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave'];
const V4 = [...V3, 'avx512f', 'avx512bw', 'avx512cd', 'avx512dq', 'avx512vl'];

/** Every cpuinfo flag of each level, lowest level first. */
export const LEVEL_FLAGS: Readonly<Record<PortableLevel, readonly string[]>> = { 'x86-64-v2': V2, 'x86-64-v3': V3, 'x86-64-v4': V4 };

/** The extension whose presence says a CPU claims the level (see the header). */
export const LEVEL_ANCHOR: Readonly<Record<PortableLevel, string>> = { 'x86-64-v2': 'sse4_2', 'x86-64-v3': 'avx2', 'x86-64-v4': 'avx512f' };

export const PORTABLE_LEVELS: readonly PortableLevel[] = ['x86-64-v2', 'x86-64-v3', 'x86-64-v4'];

/**
 * The level flags a CPU listing `listed` leaves unsettled: missing from the list, but part of a
 * level whose anchor it lists. These are the flags a probe must run (sorted, each once).
 */
export function flagsToProbe(listed: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const level of PORTABLE_LEVELS) {
    if (!listed.has(LEVEL_ANCHOR[level])) continue;
    for (const f of LEVEL_FLAGS[level]) if (!listed.has(f)) out.add(f);
  }
  return [...out].sort();
}
