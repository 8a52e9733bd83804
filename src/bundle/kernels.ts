/**
 * A bundle's kernels: every kept version of every layer in ONE shared object (kernels/kernels.so),
 * plus the generated C it was built from (kernels/kernels.c and the headers it includes, for
 * audit: `cc <flags> -shared -I kernels kernels/kernels.c` rebuilds the same code).
 * Objects come from the builder's content-addressed cache (the tuner already compiled most of
 * them), so a warm recompile only links.
 */
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VeltairError, internalError } from '../errors.js';
import { buildKernels, type KernelUnit } from '../measure/build.js';
import { headerSnapshot, writeSources } from '../toolchain/headers.js';

export interface BundleKernels {
  /** Relative paths written, kernels.so first. */
  readonly files: readonly string[];
}

export function kernelsSource(units: readonly KernelUnit[], cflags: readonly string[]): string {
  const head = [
    '/* veltair bundle kernels: every kept version, generated; do not edit.',
    ` * built as: cc ${cflags.join(' ')} -shared -I kernels kernels/kernels.c -lm */`,
    '',
  ].join('\n');
  return head + units.map((u) => u.source).join('\n');
}

/** Build `units` into one shared object and write it, its source and headers under `dir`/kernels. */
export async function writeBundleKernels(dir: string, units: readonly KernelUnit[], cflags: readonly string[]): Promise<BundleKernels> {
  if (units.length === 0) throw internalError('a bundle needs at least one kernel');
  // Compile in parallel batches through the cache, then link all objects as one group.
  const compiled = await buildKernels(units, { cflags });
  const failed = compiled.find((b) => b.status !== 'ok');
  if (failed && failed.status === 'compile_error') {
    throw new VeltairError(
      'COMPILE_FAILED',
      `kernel ${failed.symbol} of a kept version failed to compile: ${failed.message.split('\n')[0]}`,
      'the tuning database may hold records from another veltair build; run veltair db prune --drop-failed and recompile',
      2,
    );
  }
  const linked = await buildKernels(units, { batchSize: units.length, cflags });
  const paths = new Set(linked.map((b) => (b.status === 'ok' ? b.soPath : '')));
  if (paths.size !== 1 || paths.has('')) throw internalError('linking the bundle kernels into one shared object failed');
  const so = [...paths][0]!;
  await copyFile(so, join(dir, 'kernels', 'kernels.so'));
  await writeFile(join(dir, 'kernels', 'kernels.c'), kernelsSource(units, cflags));
  const headers = await headerSnapshot();
  await writeSources(join(dir, 'kernels'), headers.files);
  return { files: ['kernels/kernels.so', 'kernels/kernels.c', ...headers.files.map((h) => `kernels/${h.name}`)] };
}
