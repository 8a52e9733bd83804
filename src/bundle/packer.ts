/**
 * Packing weights with the bundle's own kernels: native-kernels/packer.c (compiled once per
 * machine into the content-addressed tool cache) dlopens kernels.so and calls each version's
 * <sym>_pack_weight on the layer's natural weight. One packer run per bundle.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { internalError, VeltairError } from '../errors.js';
import { compilerCommand, nativeDir } from '../measure/build.js';
import { cacheDir, compilerVersion, toolHash } from '../measure/native-tool.js';

const PACKER_FLAGS: readonly string[] = ['-O2', '-std=gnu11'];

/** Path of the compiled packer, compiling it first when the cache lacks this exact build. */
export async function ensurePacker(cache = cacheDir()): Promise<string> {
  const cc = compilerCommand();
  const sourcePath = join(nativeDir(), 'packer.c');
  const [source, header, version] = await Promise.all([readFile(sourcePath, 'utf8'), readFile(join(nativeDir(), 'veltair_kernel.h'), 'utf8'), compilerVersion(cc)]);
  const dir = join(cache, 'tools');
  const target = join(dir, `packer-${toolHash(`${source}\0${header}`, PACKER_FLAGS, version).slice(0, 16)}`);
  if (existsSync(target)) return target;
  await mkdir(dir, { recursive: true });
  const temp = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await execa(cc, [...PACKER_FLAGS, '-I', nativeDir(), '-o', temp, sourcePath, '-ldl']);
    await rename(temp, target);
  } catch (e) {
    await rm(temp, { force: true });
    if (e instanceof VeltairError) throw e;
    const stderr = String((e as { stderr?: string }).stderr ?? e);
    throw new VeltairError('COMPILE_FAILED', `compiling veltair's weight packer failed: ${stderr.split('\n').slice(0, 3).join(' ')}`,
      `check that ${cc} works; this is a veltair bug if it does`, 2);
  }
  return target;
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
export async function packWeights(soPath: string, jobs: readonly PackJob[], workDir: string,
  onPacked: (index: number, bytes: Uint8Array) => void, cache?: string): Promise<void> {
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
  const inPath = join(workDir, 'natural.bin'), jobsPath = join(workDir, 'jobs.txt'), outPath = join(workDir, 'packed.bin');
  const fd = openSync(inPath, 'w');
  for (const w of naturals) writeFileSync(fd, new Uint8Array(w.buffer, w.byteOffset, w.byteLength));
  closeSync(fd);
  writeFileSync(jobsPath, lines.join(''));
  const r = await execa(packer, [soPath, jobsPath, inPath, outPath], { reject: false });
  const events = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { symbol?: string; floats?: number; error?: string });
  const bad = events.find((e) => e.error !== undefined);
  if (r.exitCode !== 0 || bad || events.length !== jobs.length) {
    throw internalError(`weight packer failed: ${bad?.error ?? (r.stderr.trim() || `exit ${r.exitCode}, ${events.length}/${jobs.length} jobs`)}`);
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
