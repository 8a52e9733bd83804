/**
 * Compiler flags, per artifact, in one table. The kernel flags are part of every target
 * fingerprint (a tuning record is valid for these exact flags), so changing them retires every
 * shipped record: do it only together with a re-tune.
 */
import { userError } from '../errors.js';
import { marchFlags, type IsaLevel } from './isa.js';

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

/** The sanitizers VELTAIR_SANITIZE may name (a comma list), e.g. `address,undefined`. */
const SANITIZERS = new Set(['address', 'undefined', 'leak', 'thread']);

/**
 * `VELTAIR_SANITIZE=address,undefined`: every native artifact (kernels, harness, tools, runtime
 * addon, packer) is built with those sanitizers, every UB report fatal (-fno-sanitize-recover).
 * For the sanitizer test and for debugging; the flags are part of every build key (and of the
 * target fingerprint through the kernel flags), so sanitized and normal builds never mix. A Node
 * process loading a sanitized addon needs the sanitizer runtime preloaded (test/sanitizer.test.ts).
 */
export function sanitizerFlags(env: NodeJS.ProcessEnv = process.env): readonly string[] {
  const v = env['VELTAIR_SANITIZE']?.trim();
  if (!v) return [];
  const names = v.split(',').map((s) => s.trim());
  if (names.some((n) => !SANITIZERS.has(n))) {
    throw userError(
      'BAD_ARGUMENT',
      `VELTAIR_SANITIZE=${JSON.stringify(v)} names a sanitizer veltair does not build with`,
      `use a comma list of ${[...SANITIZERS].join(', ')}, e.g. VELTAIR_SANITIZE=address,undefined`,
    );
  }
  // gcc's `undefined` leaves out float-cast-overflow (an out-of-range double → int conversion): add it.
  const all = names.includes('undefined') ? [...names, 'float-cast-overflow'] : names;
  return [`-fsanitize=${all.join(',')}`, '-fno-sanitize-recover=all', '-fno-omit-frame-pointer', '-g'];
}

/**
 * The flags of `artifact` (plus sanitizerFlags()); kernels can be built for a portable ISA level
 * instead of this CPU (`-march=x86-64-v3` / `-v4`, with `-mavxvnni` / `-mavx512vnni` for the VNNI
 * levels: bundles that run on any CPU of that level). The
 * other artifacts run only on the machine that builds them, so they stay native.
 */
export function flagsFor(artifact: Artifact, level: IsaLevel = 'native'): readonly string[] {
  const base =
    artifact !== 'kernel' || level === 'native'
      ? FLAGS[artifact]
      : FLAGS.kernel.flatMap((f) => (f === '-march=native' ? marchFlags(level) : [f]));
  const extra = sanitizerFlags();
  return extra.length === 0 ? base : [...base, ...extra];
}

export function libsFor(artifact: Artifact): readonly string[] {
  return LIBS[artifact];
}

/** Linking kernel objects into one shared object (many symbols per .so). */
export const KERNEL_LINK_FLAGS: readonly string[] = ['-shared', '-fopenmp'];

/** KERNEL_LINK_FLAGS plus the sanitizers of sanitizerFlags(), whose runtime the objects then reference. */
export function kernelLinkFlags(): readonly string[] {
  return [...KERNEL_LINK_FLAGS, ...sanitizerFlags()];
}
