/**
 * The parts of Linux's /proc that put a probe's noise on record, parsed by pure functions over the
 * files' text (the tests give them fixtures): the machine's CPU time from /proc/stat's `cpu` line,
 * and one process's own CPU time (all its threads) from /proc/PID/stat. Times are in clock ticks
 * (USER_HZ, 100 on every Linux architecture node runs on).
 */
import { readFileSync } from 'node:fs';

export const CLOCK_TICKS_PER_S = 100;

export interface MachineTicks {
  /** Ticks spent running anything: user, nice, system, irq, softirq (guest time is inside user). */
  readonly busy: number;
  /** Ticks the hypervisor ran something else while this machine's vCPUs wanted to run. */
  readonly steal: number;
  /** Every tick of every CPU, idle included. */
  readonly total: number;
  /** CPUs listed (cpuN lines). */
  readonly cpus: number;
}

/** /proc/stat's aggregate `cpu` line and its CPU count; null if the text has none. */
export function parseProcStat(text: string): MachineTicks | null {
  const lines = text.split('\n');
  const agg = lines.find((l) => /^cpu\s/.test(l));
  if (!agg) return null;
  const f = agg.trim().split(/\s+/).slice(1).map(Number);
  if (f.length < 4 || f.some((x) => !Number.isFinite(x))) return null;
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  return {
    busy: user + nice + system + irq + softirq,
    steal,
    total: user + nice + system + idle + iowait + irq + softirq + steal,
    cpus: lines.filter((l) => /^cpu\d+\s/.test(l)).length,
  };
}

/** utime + stime of /proc/PID/stat (fields 14 and 15, counted after the command name's closing parenthesis); null if malformed. */
export function parsePidStat(text: string): number | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // After ')': field 3 (state) is f[0], so field N is f[N - 3].
  const utime = Number(f[11]),
    stime = Number(f[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : null;
}

const readOrNull = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/** This machine's ticks now; null where there is no /proc (not Linux). */
export function readMachineTicks(): MachineTicks | null {
  const t = readOrNull('/proc/stat');
  return t === null ? null : parseProcStat(t);
}

/** A process's CPU ticks now; null when it is gone or unreadable. */
export function readPidTicks(pid: number): number | null {
  const t = readOrNull(`/proc/${pid}/stat`);
  return t === null ? null : parsePidStat(t);
}
