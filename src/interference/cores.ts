/**
 * Where the runtime's kernels and a co-runner go when the proxy is calibrated or benchmarked: the
 * kernels on the first `threads` available cores, the noise generator on the rest. The kernels get
 * there through libgomp's binding (loadRuntimeAddon({ pinThreads: true }): OMP_PROC_BIND=close,
 * OMP_PLACES=cores binds the main thread to the first core and the team to the next ones), which
 * is why the cores must be read here *before* the addon loads: afterwards this thread's affinity
 * mask — what availableCores() reads — holds the kernel cores only.
 */
import { userError } from '../errors.js';
import { availableCores } from '../toolchain/cpu.js';

export interface RuntimeCores {
  readonly allCores: readonly number[];
  readonly kernelCores: readonly number[];
  readonly noiseCores: readonly number[];
}

export function runtimeCores(threads: number, allCores: readonly number[] = availableCores()): RuntimeCores {
  if (!Number.isInteger(threads) || threads < 1 || threads > allCores.length) {
    throw userError(
      'BAD_ARGUMENT',
      `--threads ${threads} is not a thread count from 1 to ${allCores.length} (the cores this process may use)`,
      `e.g. --threads ${Math.max(1, allCores.length - 1)}`,
    );
  }
  return { allCores: [...allCores], kernelCores: allCores.slice(0, threads), noiseCores: allCores.slice(threads) };
}
