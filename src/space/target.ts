/**
 * The target: the machine fingerprint every schedule, kernel and tuning record is valid for. This is
 * the one place that knows the ISA: the schedule space asks it which vector widths and how many
 * registers exist, codegen asks it which intrinsic family to emit, the builder asks it for flags.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { execa } from 'execa';
import { compilerVersion } from '../measure/native-tool.js';

export interface CacheSizes {
  /** Bytes per core (L1d, L2) and per L3 slice shared by the cores. */
  readonly l1d: number;
  readonly l2: number;
  readonly l3: number;
}

export interface Target {
  readonly cpuModel: string;
  readonly isa: { readonly avx512f: boolean; readonly avx2: boolean; readonly fma: boolean };
  readonly cores: number;
  readonly caches: CacheSizes;
  /** First line of `cc --version`. */
  readonly cc: string;
  readonly cflags: readonly string[];
}

/** Flags every kernel is compiled with; -march=native is why the CPU model is part of the target. */
export const KERNEL_CFLAGS: readonly string[] = ['-O3', '-march=native', '-fopenmp', '-fPIC', '-std=gnu11'];

/** Blocked-layout widths this target can run, widest first (1 = scalar, always available). */
export function vectorWidths(t: Target): readonly (16 | 8 | 1)[] {
  const ws: (16 | 8 | 1)[] = [];
  if (t.isa.avx512f) ws.push(16);
  if (t.isa.avx2 && t.isa.fma) ws.push(8);
  ws.push(1);
  return ws;
}

/** Vector registers the microkernel may use for accumulators + weights + one broadcast. */
export function vectorRegisters(t: Target): number {
  return t.isa.avx512f ? 32 : 16;
}

/** Parse sizes like "48K", "1024K", "32M" from sysfs. */
export function parseCacheSize(text: string): number | undefined {
  const m = /^(\d+)\s*([KMG]?)/i.exec(text.trim());
  if (!m) return undefined;
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2]!.toUpperCase() as '' | 'K' | 'M' | 'G'];
  return Number(m[1]) * unit;
}

function sysfsCaches(): Partial<CacheSizes> {
  const base = '/sys/devices/system/cpu/cpu0/cache';
  const out: { l1d?: number; l2?: number; l3?: number } = {};
  try {
    for (const entry of readdirSync(base).filter((e) => e.startsWith('index'))) {
      const read = (f: string) => readFileSync(`${base}/${entry}/${f}`, 'utf8').trim();
      const level = Number(read('level'));
      const type = read('type');
      const size = parseCacheSize(read('size'));
      if (size === undefined) continue;
      if (level === 1 && type !== 'Instruction') out.l1d = size;
      if (level === 2) out.l2 = size;
      if (level === 3) out.l3 = size;
    }
  } catch { /* no sysfs cache info (some VMs): fall back to getconf */ }
  return out;
}

async function getconfCaches(): Promise<Partial<CacheSizes>> {
  try {
    const { stdout } = await execa('getconf', ['-a']);
    const get = (key: string) => {
      const m = new RegExp(`^${key}\\s+(\\d+)`, 'm').exec(stdout);
      return m && Number(m[1]) > 0 ? Number(m[1]) : undefined;
    };
    const out: { l1d?: number; l2?: number; l3?: number } = {};
    const l1d = get('LEVEL1_DCACHE_SIZE'), l2 = get('LEVEL2_CACHE_SIZE'), l3 = get('LEVEL3_CACHE_SIZE');
    if (l1d) out.l1d = l1d;
    if (l2) out.l2 = l2;
    if (l3) out.l3 = l3;
    return out;
  } catch {
    return {};
  }
}

function cpuInfo(): { model: string; flags: Set<string> } {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (k: string) => (info.split('\n').find((l) => l.startsWith(k)) ?? '').split(':').slice(1).join(':').trim();
    return { model: field('model name') || process.arch, flags: new Set(field('flags').split(/\s+/)) };
  } catch {
    return { model: process.arch, flags: new Set() };
  }
}

let detected: Promise<Target> | undefined;

/** This machine as a Target (asked once per process). Caches: sysfs, else getconf, else typical sizes. */
export function detectTarget(): Promise<Target> {
  detected ??= (async () => {
    const { model, flags } = cpuInfo();
    const sys = sysfsCaches();
    const conf = sys.l1d && sys.l2 ? {} : await getconfCaches();
    const version = await compilerVersion();
    return {
      cpuModel: model,
      isa: { avx512f: flags.has('avx512f'), avx2: flags.has('avx2'), fma: flags.has('fma') },
      cores: availableParallelism(),
      caches: {
        l1d: sys.l1d ?? conf.l1d ?? 32 * 1024,
        l2: sys.l2 ?? conf.l2 ?? 512 * 1024,
        l3: sys.l3 ?? conf.l3 ?? 8 * 1024 * 1024,
      },
      cc: version.split('\n')[0] ?? version,
      cflags: KERNEL_CFLAGS,
    };
  })();
  return detected;
}

/** A target with the given ISA, for tests and cross-generation (cores/caches of a small machine). */
export function syntheticTarget(isa: Target['isa'], cores = 2): Target {
  return {
    cpuModel: 'synthetic', isa, cores, caches: { l1d: 32 * 1024, l2: 1024 * 1024, l3: 16 * 1024 * 1024 },
    cc: 'cc', cflags: KERNEL_CFLAGS,
  };
}
