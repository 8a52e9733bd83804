/**
 * Loading the sparse add-ons (built on first use), and the hash family codes both the training and
 * the serving head's add-on share. Inference loads only the head's: the training add-on's loader
 * (src/sparse/native.ts) goes through the same function.
 */
import { createRequire } from 'node:module';
import { internalError } from '../errors.js';
import { ensureSparseAddon, type SparseAddonKind, type SparseBuild } from './native-build.js';
import type { HeadArrays, HeadMeta } from './format.js';
import type { SparseHeadAddon } from './native-head.js';

/** Must match the VS_HASH_* enum in native-kernels/sparse/vs.h. */
export const HASH_CODE = { simhash: 0, dwta: 1 } as const;

const loaded = new Map<string, unknown>();

/** The codes above are the TS half of a contract whose C half is vs.h: refuse a build where the tables it reports differ. */
export function checkCodes(c: Record<string, Record<string, number>>, path: string, want: Record<string, Record<string, number>>): void {
  for (const [k, table] of Object.entries(want)) {
    const got = c[k] ?? {};
    if (JSON.stringify(Object.entries(table).sort()) !== JSON.stringify(Object.entries(got).sort())) {
      throw internalError(
        `the sparse add-on ${path} was built with ${k} codes ${JSON.stringify(got)}, but TypeScript says ${JSON.stringify(table)}`,
      );
    }
  }
}

/** One add-on of `kind`, loaded once per build, its codes checked against `want`. */
export async function loadSparseAddon<T extends { codes(): object }>(
  kind: SparseAddonKind,
  build: SparseBuild,
  want: Record<string, Record<string, number>>,
): Promise<T> {
  const key = `${kind}\0${build}`;
  const have = loaded.get(key);
  if (have) return have as T;
  const path = await ensureSparseAddon(kind, { build });
  const addon = createRequire(import.meta.url)(path) as T;
  checkCodes(addon.codes() as Record<string, Record<string, number>>, path, want);
  loaded.set(key, addon);
  return addon;
}

/** The serving head's add-on (built on first use). */
export function loadSparseHeadAddon(build: SparseBuild = 'native'): Promise<SparseHeadAddon> {
  return loadSparseAddon('head', build, { hash: HASH_CODE });
}

/** The native head over a loaded or freshly built index (the addon checks every shape and id). */
export function createNativeHead(addon: SparseHeadAddon, hash: HeadMeta['hash'], n: number, d: number, a: HeadArrays): object {
  return addon.headCreate(
    {
      n,
      d,
      family: HASH_CODE[hash.family],
      K: hash.K,
      L: hash.L,
      seed: BigInt(hash.seed),
      rowBytes: hash.rowBytes,
      perTable: hash.perTable,
    },
    a.weight,
    a.bias,
    a.signs,
    a.bins,
    a.offsets,
    a.ids,
    a.always,
  );
}
