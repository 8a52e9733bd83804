/**
 * Where pair-bundles puts an interference level's co-runner: the bundles' kernels on the first
 * `threads` cores (where the runtime's OpenMP pinning binds them), the co-runner on the rest — the
 * layout the tuner measured that level in (interference/cores.ts). Pure: the caller reads the cores
 * before the runtime addon loads, since afterwards its affinity mask holds the kernel cores only.
 */
import { userError } from '../errors.js';
import { levelSpec } from '../interference/levels.js';
import { runtimeCores, type RuntimeCores } from '../interference/cores.js';

export interface PairedNoisePlan extends RuntimeCores {
  /** 0: quiet, no co-runner. */
  readonly level: number;
}

export function pairedNoisePlan(threads: number, level: number, allCores: readonly number[]): PairedNoisePlan {
  const cores = runtimeCores(threads, allCores);
  if (level === 0) return { ...cores, noiseCores: [], level };
  levelSpec(level);
  if (cores.noiseCores.length === 0) {
    throw userError(
      'BAD_ARGUMENT',
      `--noise ${level} needs a core beside the ${threads} kernel thread(s), and this process may use ${allCores.length}`,
      threads > 1
        ? `time fewer threads (--threads ${allCores.length - 1}) or quietly (--noise 0)`
        : 'run it on a machine with a second core',
    );
  }
  return { ...cores, level };
}
