/**
 * The interference proxy's inputs, observed for almost nothing:
 *  - otherCoresBusy: the busy fraction of the cores the runtime does not use, from /proc/stat
 *    deltas (only the `cpuN` lines of those cores are parsed);
 *  - psiCpuSome / psiMemorySome: the share of wall time some task stalled on CPU / memory, from the
 *    `some … total=` counters of /proc/pressure/{cpu,memory} (0 where the kernel has no PSI);
 *  - latencyRatio: the runtime's own observed / profiled kernel time, median of the recent runs;
 *  - coRunnerMemGBps: the co-runners' memory traffic (the caller's input: calibration reads the
 *    co-runner's own counters over each window; a server would report its tenants').
 *
 * Cost: each procfs file stays open and is re-read with pread at offset 0 (no open/close per
 * read). Generating /proc/stat and the PSI files still costs the kernel real work per read (`veltair
 * bench` reports the re-read's cost), and
 * /proc/stat only counts in 10 ms ticks (USER_HZ = 100), so reading it more often than every few
 * ticks yields no information. The sampler therefore refreshes the OS features at most once per
 * `refreshMs` and a decision in between costs only a clock read and a dot product.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import type { FeatureVector } from './proxy-model.js';

/** An open procfs file re-read in place. */
interface ProcFile {
  readonly fd: number;
  readonly buf: Buffer;
}

function openProc(path: string, bytes: number): ProcFile | undefined {
  try {
    return { fd: openSync(path, 'r'), buf: Buffer.alloc(bytes) };
  } catch {
    return undefined;
  }
}

function readProc(f: ProcFile): string {
  const n = readSync(f.fd, f.buf, 0, f.buf.length, 0);
  return f.buf.toString('latin1', 0, n);
}

/** [busy, total] jiffies summed over `cores` from /proc/stat text (iowait and idle count as not busy). */
export function parseCpuTimes(text: string, cores: ReadonlySet<number>): [number, number] {
  let busy = 0,
    total = 0;
  let at = text.indexOf('\ncpu');
  while (at >= 0) {
    const end = text.indexOf('\n', at + 1);
    if (end < 0) break;
    const line = text.slice(at + 1, end);
    const space = line.indexOf(' ');
    const core = Number(line.slice(3, space));
    if (cores.has(core)) {
      const f = line
        .slice(space + 1)
        .trim()
        .split(' ')
        .map(Number);
      // user nice system idle iowait irq softirq steal [guest guest_nice: already inside user/nice]
      const all = f.slice(0, 8).reduce((s, v) => s + (v || 0), 0);
      total += all;
      busy += all - (f[3] ?? 0) - (f[4] ?? 0);
    }
    at = text.startsWith('cpu', end + 1) ? end : -1;
  }
  return [busy, total];
}

/** The `some … total=N` counter (µs) of a /proc/pressure file, or undefined when absent. */
export function parsePsiSomeTotal(text: string): number | undefined {
  const m = /^some .*total=(\d+)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * Observed / profiled kernel time over the last `window` runs, as their median. A median rather
 * than a mean: on a shared machine one preempted run can take a thousand times its profile, and
 * a mean would carry that spike for many runs; the median ignores it until it is the norm.
 */
export class LatencyRatioTracker {
  private readonly recent: Float64Array;
  private readonly scratch: Float64Array;
  private count = 0;
  private next = 0;
  constructor(readonly window = DEFAULT_RATIO_WINDOW) {
    this.recent = new Float64Array(window);
    this.scratch = new Float64Array(window);
  }
  observe(observedMs: number, profiledMs: number): void {
    if (!(observedMs > 0 && profiledMs > 0)) return;
    this.recent[this.next] = observedMs / profiledMs;
    this.next = (this.next + 1) % this.window;
    this.count = Math.min(this.count + 1, this.window);
  }
  /** 1 (no evidence of slowdown) until the first run is observed. Allocation-free: it runs per decision. */
  get ratio(): number {
    const n = this.count;
    if (n === 0) return 1;
    const s = this.scratch;
    for (let i = 0; i < n; i++) {
      const v = this.recent[i]!;
      let j = i;
      while (j > 0 && s[j - 1]! > v) {
        s[j] = s[j - 1]!;
        j--;
      }
      s[j] = v;
    }
    return n % 2 === 1 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
  }
  reset(): void {
    this.count = 0;
    this.next = 0;
  }
}

export interface SamplerOptions {
  /** Cores the runtime's kernels run on; every other core counts as "other". */
  readonly kernelCores: readonly number[];
  /** All cores this process may see (default: every cpuN line in /proc/stat). */
  readonly allCores: readonly number[];
  /** Minimum interval between procfs refreshes. */
  readonly refreshMs?: number;
  /** Runs the latency ratio is the median of. */
  readonly ratioWindow?: number;
  readonly procRoot?: string;
}

/** 5 ticks of /proc/stat's 10 ms clock: a busy fraction in steps of 0.2 rather than 0, ½, 1. */
export const DEFAULT_REFRESH_MS = 50;
export const DEFAULT_RATIO_WINDOW = 5;

/**
 * Keeps the OS features current. `refresh()` reads procfs now (deltas since the previous refresh);
 * `features()` refreshes only when `refreshMs` has passed and otherwise returns the cached values.
 */
export class FeatureSampler {
  readonly refreshMs: number;
  readonly ratio: LatencyRatioTracker;
  coRunnerMemGBps = 0;
  private readonly stat: ProcFile | undefined;
  private readonly psiCpu: ProcFile | undefined;
  private readonly psiMem: ProcFile | undefined;
  private readonly others: ReadonlySet<number>;
  private last: { t: number; busy: number; total: number; cpu: number; mem: number } | undefined;
  /** The one feature vector, updated in place (a decision allocates nothing). */
  private readonly current = { otherCoresBusy: 0, psiCpuSome: 0, psiMemorySome: 0, latencyRatio: 1, coRunnerMemGBps: 0 };

  constructor(o: SamplerOptions) {
    const root = o.procRoot ?? '/proc';
    const kernel = new Set(o.kernelCores);
    this.others = new Set(o.allCores.filter((c) => !kernel.has(c)));
    this.refreshMs = o.refreshMs ?? DEFAULT_REFRESH_MS;
    this.ratio = new LatencyRatioTracker(o.ratioWindow ?? DEFAULT_RATIO_WINDOW);
    // The cpu lines come first; the rest of /proc/stat (interrupt counts) is never needed.
    const maxCore = Math.max(0, ...o.allCores);
    this.stat = openProc(`${root}/stat`, 160 * (maxCore + 2));
    this.psiCpu = openProc(`${root}/pressure/cpu`, 256);
    this.psiMem = openProc(`${root}/pressure/memory`, 256);
    this.refresh();
  }

  /** Which sources exist on this machine. */
  get sources(): { stat: boolean; psiCpu: boolean; psiMemory: boolean } {
    return { stat: this.stat !== undefined, psiCpu: this.psiCpu !== undefined, psiMemory: this.psiMem !== undefined };
  }

  /** Read procfs now; the OS features become the averages since the previous refresh. */
  refresh(): void {
    const t = performance.now();
    const [busy, total] = this.stat ? parseCpuTimes(readProc(this.stat), this.others) : [0, 0];
    const cpu = (this.psiCpu && parsePsiSomeTotal(readProc(this.psiCpu))) ?? 0;
    const mem = (this.psiMem && parsePsiSomeTotal(readProc(this.psiMem))) ?? 0;
    const prev = this.last;
    this.last = { t, busy, total, cpu, mem };
    if (!prev) return;
    const wallUs = (t - prev.t) * 1e3;
    const dTotal = total - prev.total;
    const c = this.current;
    // No tick elapsed on the other cores (or there are none): keep the previous estimate.
    if (dTotal > 0) c.otherCoresBusy = (busy - prev.busy) / dTotal;
    if (wallUs > 0) {
      c.psiCpuSome = Math.min(1, (cpu - prev.cpu) / wallUs);
      c.psiMemorySome = Math.min(1, (mem - prev.mem) / wallUs);
    }
  }

  /** Forget the deltas so far: the next refresh measures from now (a new calibration window). */
  restartWindow(): void {
    this.last = undefined;
    this.refresh();
  }

  /** Milliseconds since the last refresh. */
  ageMs(): number {
    return this.last ? performance.now() - this.last.t : Infinity;
  }

  /**
   * The current feature vector, refreshing procfs first if `refreshMs` has passed. The object is
   * reused by the next call: copy it (`{ ...v }`) to keep it.
   */
  features(): FeatureVector {
    if (this.ageMs() >= this.refreshMs) this.refresh();
    this.current.latencyRatio = this.ratio.ratio;
    this.current.coRunnerMemGBps = this.coRunnerMemGBps;
    return this.current;
  }

  close(): void {
    for (const f of [this.stat, this.psiCpu, this.psiMem]) if (f) closeSync(f.fd);
  }
}
