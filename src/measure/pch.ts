/**
 * The kernels' precompiled header. Every generated kernel opens with veltair_kernel.h and
 * vt_simd.h (immintrin.h behind it), and parsing them was about half of a kernel's -O3 compile
 * here (0.145 of 0.30 s: bench/RESULTS.md). So the builder precompiles the two once per
 * (headers, flags, compiler) into `<cache>/pch/<key>/` and hands each compile `-include` of it.
 *  - gcc takes the .gch only when it was built with options compatible with the compile's, and
 *    otherwise reads the header text beside it (the include guards then skip the kernel's own
 *    #includes). A stale, foreign or damaged .gch costs time, never a different object: object
 *    keys leave the PCH out, and its objects disassemble the same as those built without it.
 *  - A compiler that cannot build one (or a failed build) means no PCH for this process: builds
 *    go on as before, and nothing is cached, so the next process tries again.
 *  - The directory is assembled under a temp name and renamed into place whole.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { buildKey } from '../toolchain/build-cache.js';
import { runCompiler, type Compiler } from '../toolchain/compiler.js';
import { writeSources, type HeaderSnapshot } from '../toolchain/headers.js';

const HEADER = 'vt_kernel_pch.h';
const HEADER_TEXT = '#include "veltair_kernel.h"\n#include "vt_simd.h"\n';

const built = new Map<string, Promise<string[]>>();

/** Flags that make a kernel compile use the precompiled header ([] when there is none). */
export function kernelPchFlags(
  root: string,
  cc: Compiler,
  flags: readonly string[],
  ccVersion: string,
  headers: HeaderSnapshot,
): Promise<string[]> {
  const key = buildKey([HEADER_TEXT, headers.hash], flags, ccVersion).slice(0, 40);
  const dir = join(root, 'pch', key);
  let flagsOf = built.get(dir);
  if (flagsOf === undefined) {
    flagsOf = ensurePch(dir, cc, flags, headers).then((ok) => (ok ? ['-include', join(dir, HEADER)] : []));
    built.set(dir, flagsOf);
  }
  return flagsOf;
}

async function ensurePch(dir: string, cc: Compiler, flags: readonly string[], headers: HeaderSnapshot): Promise<boolean> {
  if (existsSync(join(dir, `${HEADER}.gch`))) return true;
  await mkdir(dirname(dir), { recursive: true });
  const temp = await mkdtemp(`${dir}.tmp-`);
  try {
    await Promise.all([writeSources(temp, headers.files), writeFile(join(temp, HEADER), HEADER_TEXT)]);
    await runCompiler([...flags, '-I', temp, '-x', 'c-header', HEADER, '-o', `${HEADER}.gch`], { cwd: temp }, cc);
    await rename(temp, dir).catch(() => undefined); // another process got there first: theirs is the same
    return existsSync(join(dir, `${HEADER}.gch`));
  } catch {
    return false;
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}
