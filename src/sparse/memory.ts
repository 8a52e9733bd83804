/**
 * How much memory training a network takes, checked before anything is allocated, so a spec that
 * cannot fit fails with one line that says how much it needs instead of an OOM kill.
 */
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { userError } from '../errors.js';
import { activeTarget, type SparseLayer } from './layers.js';

export interface MemoryNeed {
  readonly total: number;
  readonly parameters: number;
  readonly tables: number;
  readonly hashing: number;
  readonly scratch: number;
}

const GiB = 1024 ** 3;
export const gib = (bytes: number) => `${(bytes / GiB).toFixed(bytes < GiB ? 3 : 1)} GiB`;

export function trainingMemory(layers: readonly SparseLayer[], threads: number): MemoryNeed {
  let parameters = 0,
    tables = 0,
    hashing = 0,
    perThread = 0;
  for (const l of layers) {
    const weights = l.inputDim * l.dim + l.dim;
    parameters += weights * 4 * 4 + (l.index === 0 ? l.inputDim : l.dim) + l.dim; // w, grad, m, v + flags
    perThread += l.dim * 12;
    if (l.hash) {
      const buckets = l.hash.L * 2 ** l.hash.K;
      tables += buckets * (l.hash.R + 1) * 4;
      const bits = l.hash.K * l.hash.L;
      hashing += l.hash.family === 'simhash' ? l.inputDim * Math.ceil(Math.ceil(bits / 8) / 32) * 32 : bits * 32;
      perThread += l.dim * 10 + bits * 4 + activeTarget(l) * 4;
    }
  }
  const scratch = perThread * threads;
  return { total: parameters + tables + hashing + scratch, parameters, tables, hashing, scratch };
}

/** Memory this process may still use: MemAvailable, capped by a cgroup (v2) limit when one is set. */
export function availableMemory(): number {
  let available = totalmem();
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) available = Number(m[1]) * 1024;
  } catch {
    /* not Linux: totalmem */
  }
  try {
    const max = readFileSync('/sys/fs/cgroup/memory.max', 'utf8').trim();
    const used = Number(readFileSync('/sys/fs/cgroup/memory.current', 'utf8').trim());
    if (/^\d+$/.test(max)) available = Math.min(available, Number(max) - used);
  } catch {
    /* no cgroup limit */
  }
  return available;
}

export function checkMemory(need: MemoryNeed, dataBytes: number, available = availableMemory()): void {
  const total = need.total + dataBytes;
  if (total > 0.9 * available) {
    throw userError(
      'NOT_ENOUGH_MEMORY',
      `this network needs ${gib(total)} to train (parameters with gradients and Adam moments ${gib(need.parameters)}, hash tables ${gib(need.tables)}, ` +
        `hash functions ${gib(need.hashing)}, per-thread scratch ${gib(need.scratch)}, data ${gib(dataBytes)}); ${gib(available)} is available`,
      'shrink the largest layer or the input dim, lower L/K for the sparse layers, or use a machine with more memory',
    );
  }
}
