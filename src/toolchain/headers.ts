/**
 * The headers every native build compiles against: the kernel ABI and SIMD layer from
 * native-kernels/, plus vt_abi.h generated from abi.ts. Read fresh for every build, never memoized,
 * and compiled from these very bytes (copied beside the sources): a header edited while a
 * long-lived process builds must not land in the cache under the old header's key (that poisoned
 * objects once: a descriptor compiled against another vt_desc layout, read by the harness with its
 * own, crashed every candidate built from them).
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ABI_HEADER, abiHeader } from './abi.js';
import { nativeDir } from './paths.js';

/** The kernel headers in native-kernels/ (vt_abi.h is generated, not read). */
const SOURCE_HEADERS = ['veltair_kernel.h', 'vt_simd.h', 'vt_math.inc'] as const;

/** Every header a kernel build includes, as written beside its sources and into a bundle. */
export const KERNEL_HEADERS: readonly string[] = [...SOURCE_HEADERS, ABI_HEADER];

export interface SourceFile {
  readonly name: string;
  readonly text: string;
}

/** The kernel headers' exact bytes at one moment, and their digest. */
export interface HeaderSnapshot {
  readonly files: readonly SourceFile[];
  readonly hash: string;
}

export async function headerSnapshot(): Promise<HeaderSnapshot> {
  const read = await Promise.all(SOURCE_HEADERS.map(async (name) => ({ name, text: await readFile(join(nativeDir(), name), 'utf8') })));
  const files = [...read, { name: ABI_HEADER, text: abiHeader() }];
  const hash = createHash('sha256')
    .update('headers-v3\0')
    .update(files.map((f) => `${f.name}\0${f.text}`).join('\0'))
    .digest('hex');
  return { files, hash };
}

export async function writeSources(dir: string, files: readonly SourceFile[]): Promise<void> {
  await Promise.all(files.map((f) => writeFile(join(dir, f.name), f.text)));
}
