/**
 * Packing weights with the bundle's own kernels: native-kernels/packer.c (compiled once per
 * machine into the content-addressed tool cache) dlopens kernels.so and calls each version's
 * <sym>_pack_weight on the layer's natural weight. One packer run per bundle.
 */
import { closeSync, openSync, readSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { internalError } from '../errors.js';
import { ensureProgram } from '../toolchain/build-cache.js';
import { nativeDir } from '../toolchain/paths.js';

/** Path of the compiled packer, compiling it first when the cache lacks this exact build. */
export async function ensurePacker(cache?: string): Promise<string> {
  const text = await readFile(join(nativeDir(), 'packer.c'), 'utf8');
  return ensureProgram({
    name: 'packer',
    artifact: 'packer',
    sources: [{ name: 'packer.c', text }],
    ...(cache ? { cacheDir: cache } : {}),
  });
}

export interface PackJob {
  readonly symbol: string;
  /** The natural weight: OIHW (conv2d) or [K][N] (dense), float32. */
  readonly weight: Float32Array;
}

/**
 * Pack every job; `onPacked(i, bytes)` receives job i's packed weight, in job order. Jobs sharing
 * a natural weight (the same Float32Array) send it to the packer once.
 */
export async function packWeights(
  soPath: string,
  jobs: readonly PackJob[],
  workDir: string,
  onPacked: (index: number, bytes: Uint8Array) => void,
  cache?: string,
): Promise<void> {
  if (jobs.length === 0) return;
  const packer = await ensurePacker(cache);
  const offsets = new Map<Float32Array, number>();
  const naturals: Float32Array[] = [];
  let floats = 0;
  const lines = jobs.map((j) => {
    let at = offsets.get(j.weight);
    if (at === undefined) {
      at = floats;
      offsets.set(j.weight, at);
      naturals.push(j.weight);
      floats += j.weight.length;
    }
    return `${j.symbol} ${at} ${j.weight.length}\n`;
  });
  const inPath = join(workDir, 'natural.bin'),
    jobsPath = join(workDir, 'jobs.txt'),
    outPath = join(workDir, 'packed.bin');
  const fd = openSync(inPath, 'w');
  for (const w of naturals) writeFileSync(fd, new Uint8Array(w.buffer, w.byteOffset, w.byteLength));
  closeSync(fd);
  writeFileSync(jobsPath, lines.join(''));
  const r = await execa(packer, [soPath, jobsPath, inPath, outPath], { reject: false });
  const events = r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { symbol?: string; floats?: number; error?: string });
  const bad = events.find((e) => e.error !== undefined);
  if (r.exitCode !== 0 || bad || events.length !== jobs.length) {
    throw internalError(
      `weight packer failed: ${bad?.error ?? (r.stderr.trim() || `exit ${r.exitCode}, ${events.length}/${jobs.length} jobs`)}`,
    );
  }
  const out = openSync(outPath, 'r');
  try {
    let position = 0;
    events.forEach((e, i) => {
      if (e.symbol !== jobs[i]!.symbol) throw internalError(`weight packer answered ${e.symbol} for job ${jobs[i]!.symbol}`);
      const bytes = Buffer.alloc(e.floats! * 4);
      let done = 0;
      while (done < bytes.length) {
        const n = readSync(out, bytes, done, bytes.length - done, position + done);
        if (n <= 0) throw internalError('weight packer output is short');
        done += n;
      }
      position += bytes.length;
      onPacked(i, bytes);
    });
  } finally {
    closeSync(out);
  }
}
