/**
 * Compiler flags, per artifact, in one table. The kernel flags are part of every target
 * fingerprint (a tuning record is valid for these exact flags), so changing them retires every
 * shipped record: do it only together with a re-tune.
 */
import { marchOf, type IsaLevel } from './isa.js';

/** What is being built. */
export type Artifact =
  /** generated kernels: shared objects loaded by the harness and the runtime */
  | 'kernel'
  /** native-kernels/harness.c: measures kernels in a child process */
  | 'harness'
  /** veltair's own small programs (noise generator, calibration probe, FMA peak loop) */
  | 'tool'
  /** the runtime's N-API addon (native-kernels/runtime/) */
  | 'addon'
  /** native-kernels/packer.c: packs weights through a bundle's own kernels (dlopen, no SIMD of its own) */
  | 'packer';

const FLAGS: Readonly<Record<Artifact, readonly string[]>> = {
  kernel: ['-O3', '-march=native', '-fopenmp', '-fPIC', '-std=gnu11'],
  harness: ['-O2', '-march=native', '-std=gnu11'],
  tool: ['-O2', '-march=native', '-pthread', '-std=gnu11'],
  // -fopenmp: the runtime's ops share the kernels' OpenMP pool (one libgomp in the process).
  addon: ['-O3', '-march=native', '-fopenmp', '-shared', '-fPIC', '-std=gnu11'],
  packer: ['-O2', '-std=gnu11'],
};

/** Libraries each artifact links (after its objects). */
const LIBS: Readonly<Record<Artifact, readonly string[]>> = {
  kernel: ['-lm'],
  harness: ['-ldl', '-lm'],
  tool: ['-lm'],
  addon: ['-ldl', '-lm'],
  packer: ['-ldl'],
};

/**
 * The flags of `artifact`; kernels can be built for a portable ISA level instead of this CPU
 * (`-march=x86-64-v3` / `-v4`, bundles that run on any CPU of that level). The other artifacts run
 * only on the machine that builds them, so they stay native.
 */
export function flagsFor(artifact: Artifact, level: IsaLevel = 'native'): readonly string[] {
  if (artifact !== 'kernel' || level === 'native') return FLAGS[artifact];
  return FLAGS.kernel.map((f) => (f === '-march=native' ? marchOf(level) : f));
}

export function libsFor(artifact: Artifact): readonly string[] {
  return LIBS[artifact];
}

/** Linking kernel objects into one shared object (many symbols per .so). */
export const KERNEL_LINK_FLAGS: readonly string[] = ['-shared', '-fopenmp'];
