/**
 * An arm's noise on record, per probe (load/noise.ts measures it), and the table's summary of it:
 * the most outside work and steal any probe saw, the load generator's median CPU per request, and
 * how many probes were noisy enough to be run again.
 */
import type { Verdict } from '../load/early-stopping.js';
import type { ProbeResult } from '../load/probe.js';
import { median } from '../stats.js';

export interface ProbeNoise {
  readonly qps: number;
  readonly verdict: Verdict;
  /** Seconds the probe sent for. */
  readonly durationS: number;
  readonly sent: number;
  readonly outsideShare: number | null;
  readonly stealShare: number | null;
  readonly clientCpuMsPerRequest: number | null;
  readonly rerunOfNoisy: boolean;
}

export function probeNoise(r: ProbeResult): ProbeNoise {
  return {
    qps: Number(r.totalQps.toFixed(3)),
    verdict: r.verdict,
    durationS: r.durationS,
    sent: r.models.reduce((s, m) => s + m.sent, 0),
    outsideShare: r.noise.outsideShare,
    stealShare: r.noise.stealShare,
    clientCpuMsPerRequest: r.noise.clientCpuMsPerRequest,
    rerunOfNoisy: r.rerunOfNoisy === true,
  };
}

const known = (xs: readonly (number | null)[]) => xs.filter((x): x is number => x !== null);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The table's noise cells for an arm's probes over every round: max outside, max steal, median client ms/request, reruns. */
export function noiseCells(rounds: readonly (readonly ProbeNoise[])[]): [string, string, string, string] {
  const all = rounds.flat();
  const outside = known(all.map((p) => p.outsideShare)),
    steal = known(all.map((p) => p.stealShare));
  const client = known(all.map((p) => p.clientCpuMsPerRequest));
  return [
    outside.length > 0 ? pct(Math.max(...outside)) : '-',
    steal.length > 0 ? pct(Math.max(...steal)) : '-',
    client.length > 0 ? median(client).toFixed(3) : '-',
    String(all.filter((p) => p.rerunOfNoisy).length),
  ];
}
