/**
 * A target fingerprint names the machine a measurement is valid on. It hashes exactly the fields
 * that decide whether a latency transfers: CPU model (kernels are built with -march=native), ISA
 * flags, core count, cache sizes, and the C compiler with its version and flags. Anything else
 * (hostname, OS, load) is deliberately left out, so identical machines share records.
 */
import { createHash } from 'node:crypto';
import type { Target } from '../toolchain/target.js';

/** JSON with object keys sorted at every depth: the same value hashes the same everywhere. */
export function canonicalJson(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v as object)
          .sort()
          .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sortKeys(value));
}

/** The transferable part of a target, in a fixed shape (extra Target fields never enter the hash). */
export function fingerprintInput(t: Target): unknown {
  return {
    cpuModel: t.cpuModel,
    isa: t.isa,
    cores: t.cores,
    caches: { l1d: t.caches.l1d, l2: t.caches.l2, l3: t.caches.l3 },
    cc: t.cc,
    cflags: [...t.cflags],
  };
}

/** Bump if fingerprintInput changes meaning: records under the old prefix then stop matching. */
const FINGERPRINT_VERSION = 't1';
/** The version number in FINGERPRINT_VERSION (readers refuse records of a later one). */
export const FINGERPRINT_VERSION_NUMBER = 1;

/** `t1-<16 hex>`: 64 bits of sha256 over the canonical transferable fields. */
export function targetFingerprint(t: Target): string {
  const digest = createHash('sha256')
    .update(canonicalJson(fingerprintInput(t)))
    .digest('hex');
  return `${FINGERPRINT_VERSION}-${digest.slice(0, 16)}`;
}

export const FINGERPRINT_PATTERN = '^t1-[0-9a-f]{16}$';
