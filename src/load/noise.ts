/**
 * A probe's noise on record: CPU time taken by processes outside the arm (its server processes)
 * and this process (the load generator), as a share of the machine's cores; the hypervisor's steal
 * time as a share of all CPU time; and the load generator's own CPU per request sent. Machine-wide:
 * on a shared host, work on other cores still takes memory bandwidth and cache from the arm.
 */
import { CLOCK_TICKS_PER_S, readMachineTicks, readPidTicks, type MachineTicks } from './proc-stat.js';

export interface NoiseSnapshot {
  readonly wallMs: number;
  readonly machine: MachineTicks | null;
  /** Ticks of each arm process and of this one (null: gone or unreadable). */
  readonly pids: ReadonlyMap<number, number | null>;
  /** process.cpuUsage() of this process, µs (user + system). */
  readonly clientCpuUs: number;
}

export interface NoiseRecord {
  /** CPU seconds run by anything but the arm and the load generator; null without /proc. */
  readonly outsideCpuS: number | null;
  /** outsideCpuS over (seconds × CPUs), at least 0 (ticks are 10 ms, so a quiet probe can read a little below). */
  readonly outsideShare: number | null;
  /** Steal ticks over all ticks. */
  readonly stealShare: number | null;
  /** The load generator's CPU (this whole process) per request sent, ms. */
  readonly clientCpuMsPerRequest: number | null;
}

/** Outside work above this share of the cores makes a probe noisy: it is run again, once, and marked. */
export const NOISY_OUTSIDE_SHARE = 0.05;

/** A snapshot now, of the machine, of the arm's processes and of this one. */
export function takeNoiseSnapshot(armPids: readonly number[]): NoiseSnapshot {
  const cpu = process.cpuUsage();
  return {
    wallMs: performance.now(),
    machine: readMachineTicks(),
    clientCpuUs: cpu.user + cpu.system,
    pids: new Map([...new Set([...armPids, process.pid])].map((p) => [p, readPidTicks(p)])),
  };
}

const round = (x: number, digits: number) => Number(x.toFixed(digits));

/** The noise between two snapshots of the same processes, over `requests` requests sent. */
export function noiseBetween(a: NoiseSnapshot, b: NoiseSnapshot, requests: number): NoiseRecord {
  const wallS = (b.wallMs - a.wallMs) / 1000;
  const clientCpuMsPerRequest = requests > 0 ? round((b.clientCpuUs - a.clientCpuUs) / 1000 / requests, 4) : null;
  if (!a.machine || !b.machine || !(wallS > 0)) return { outsideCpuS: null, outsideShare: null, stealShare: null, clientCpuMsPerRequest };
  let ownTicks = 0;
  let known = true;
  for (const [pid, before] of a.pids) {
    const after = b.pids.get(pid);
    if (before === null || after === null || after === undefined) known = false;
    else ownTicks += after - before;
  }
  const totalTicks = b.machine.total - a.machine.total;
  const stealShare = totalTicks > 0 ? round((b.machine.steal - a.machine.steal) / totalTicks, 4) : null;
  if (!known) return { outsideCpuS: null, outsideShare: null, stealShare, clientCpuMsPerRequest };
  const outsideCpuS = (b.machine.busy - a.machine.busy - ownTicks) / CLOCK_TICKS_PER_S;
  const cpus = Math.max(1, b.machine.cpus);
  return {
    outsideCpuS: round(outsideCpuS, 3),
    outsideShare: round(Math.max(0, outsideCpuS / (wallS * cpus)), 4),
    stealShare,
    clientCpuMsPerRequest,
  };
}

/** Whether outside work took more than NOISY_OUTSIDE_SHARE of the cores (unknown is not noisy: it is shown as unknown). */
export const isNoisy = (n: NoiseRecord | undefined) => (n?.outsideShare ?? 0) > NOISY_OUTSIDE_SHARE;
