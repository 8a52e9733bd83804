/**
 * The one place that says "the ISA": which vector widths and how many vector registers a target
 * has, which ISA levels veltair can build kernels for, and what a build at each level requires of
 * the CPU that runs it. Codegen asks it which intrinsic family to emit, the schedule space which
 * widths are valid, the builder which flags to pass, the bundle which CPU flags to demand.
 */
import { cpuInfo, isaFlagsOf } from './cpu.js';

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

/** This CPU's vector extensions, from its cpuinfo flags. */
export function isaOfFlags(flags: ReadonlySet<string>): Isa {
  return { avx512f: flags.has('avx512f'), avx2: flags.has('avx2'), fma: flags.has('fma') };
}

export function machineIsa(): Isa {
  return isaOfFlags(cpuInfo().flags);
}

/** CPU flags a build with `-march=native` may use: every ISA extension of this CPU. */
export function nativeRequiredIsa(): string[] {
  return isaFlagsOf(cpuInfo().flags);
}
