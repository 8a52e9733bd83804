/**
 * Which instruction-set extensions a bundle's kernels may use. Kernels are built with
 * -march=native, so the compiler may emit any extension the build CPU has: the bundle records
 * them (as /proc/cpuinfo names them) and a loader refuses a machine lacking any of them, with a
 * clear error instead of a SIGILL mid-inference.
 */
import { readFileSync } from 'node:fs';

/** cpuinfo flags that name instruction-set extensions a compiler can target (not OS or erratum flags). */
const ISA_FLAG = /^(mmx|sse\d?(_\d)?|ssse3|sse4a|pni|avx\w*|fma4?|f16c|bmi[12]|adx|popcnt|movbe|abm|lzcnt|aes|pclmulqdq|vpclmulqdq|vaes|gfni|sha_ni|xop|tbm|amx\w*|rdrand|mmxext|rdseed|clflushopt|clwb|xsavec?|xsaveopt|xsaves|movdiri|movdir64b|serialize|cx16|prefetchw|prfchw|rdpid|wbnoinvd|ptwrite|lwp)$/;

export function isaFlagsOf(flags: Iterable<string>): string[] {
  return [...new Set([...flags].filter((f) => ISA_FLAG.test(f)))].sort();
}

/** This machine's cpuinfo flags (empty when /proc/cpuinfo is unreadable). */
export function machineCpuFlags(): Set<string> {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const line = info.split('\n').find((l) => l.startsWith('flags')) ?? '';
    return new Set(line.split(':').slice(1).join(':').trim().split(/\s+/).filter(Boolean));
  } catch {
    return new Set();
  }
}

/** This machine's model name as cpuinfo reports it. */
export function machineCpuModel(): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    return (info.split('\n').find((l) => l.startsWith('model name')) ?? '').split(':').slice(1).join(':').trim() || process.arch;
  } catch {
    return process.arch;
  }
}
