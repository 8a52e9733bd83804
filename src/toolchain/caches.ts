/**
 * Cache sizes, with where each came from: sysfs (the kernel's view of cpuid), else getconf (glibc's),
 * else a typical size. A guessed size changes schedules (tiles are sized to the caches) and the
 * target fingerprint, so the guess is reported, never silent.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { execa } from 'execa';

export interface CacheSizes {
  /** Bytes per core (L1d, L2) and per L3 slice shared by the cores. */
  readonly l1d: number;
  readonly l2: number;
  readonly l3: number;
}

export type CacheSource = 'sysfs' | 'getconf' | 'typical';

export interface DetectedCaches {
  readonly sizes: CacheSizes;
  readonly sources: Readonly<Record<keyof CacheSizes, CacheSource>>;
  /** One line per size that had to be guessed. */
  readonly notes: readonly string[];
}

const TYPICAL: CacheSizes = { l1d: 32 * 1024, l2: 512 * 1024, l3: 8 * 1024 * 1024 };

/** Parse sizes like "48K", "1024K", "32M" from sysfs. */
export function parseCacheSize(text: string): number | undefined {
  const m = /^(\d+)\s*([KMG]?)/i.exec(text.trim());
  if (!m) return undefined;
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2]!.toUpperCase() as '' | 'K' | 'M' | 'G'];
  const bytes = Number(m[1]) * unit;
  return bytes > 0 ? bytes : undefined;
}

function sysfsCaches(): Partial<CacheSizes> {
  const base = '/sys/devices/system/cpu/cpu0/cache';
  const out: { l1d?: number; l2?: number; l3?: number } = {};
  try {
    for (const entry of readdirSync(base).filter((e) => e.startsWith('index'))) {
      const read = (f: string) => readFileSync(`${base}/${entry}/${f}`, 'utf8').trim();
      const level = Number(read('level'));
      const size = parseCacheSize(read('size'));
      if (size === undefined) continue;
      if (level === 1 && read('type') !== 'Instruction') out.l1d = size;
      if (level === 2) out.l2 = size;
      if (level === 3) out.l3 = size;
    }
  } catch {
    /* no sysfs cache info (some VMs, containers): fall back to getconf */
  }
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
    const l1d = get('LEVEL1_DCACHE_SIZE'),
      l2 = get('LEVEL2_CACHE_SIZE'),
      l3 = get('LEVEL3_CACHE_SIZE');
    if (l1d) out.l1d = l1d;
    if (l2) out.l2 = l2;
    if (l3) out.l3 = l3;
    return out;
  } catch {
    return {};
  }
}

let detected: Promise<DetectedCaches> | undefined;

/** This machine's caches (asked once per process). */
export function detectCaches(): Promise<DetectedCaches> {
  detected ??= (async () => {
    const sys = sysfsCaches();
    const complete = sys.l1d !== undefined && sys.l2 !== undefined && sys.l3 !== undefined;
    const conf = complete ? {} : await getconfCaches();
    const sizes: Record<keyof CacheSizes, number> = { ...TYPICAL };
    const sources: Record<keyof CacheSizes, CacheSource> = { l1d: 'typical', l2: 'typical', l3: 'typical' };
    const notes: string[] = [];
    for (const level of ['l1d', 'l2', 'l3'] as const) {
      const fromSys = sys[level],
        fromConf = conf[level];
      if (fromSys !== undefined) {
        sizes[level] = fromSys;
        sources[level] = 'sysfs';
      } else if (fromConf !== undefined) {
        sizes[level] = fromConf;
        sources[level] = 'getconf';
      } else
        notes.push(`the ${level.toUpperCase()} cache size is unknown (no sysfs or getconf value): assuming ${TYPICAL[level] / 1024} KiB`);
    }
    return { sizes, sources, notes };
  })();
  return detected;
}
