/**
 * serve-bench's tables: per mix, every arm's max QPS at QoS per round (live), its median, and its
 * ratio to "best ORT" — the ONNX Runtime arm (ort, ort-pinned, ort-instances) with the highest
 * median — and to veltair's own `fcfs`, each ratio paired within a round (both arms measured in the
 * same round, so drift between rounds cancels) and given as median [min–max] over rounds; beside
 * each policy, what the simulator predicts (labelled simulated).
 *
 * Every table's header states the method's resolution from its A/A pair (serve-resolution.ts).
 * Per arm: the rates each round's search left undecided (the early-stopping rule had not decided
 * them within the probe's time bound) and its probes' noise (serve-noise.ts).
 */
import { judgementLine } from '../load/early-stopping.js';
import { median, type RatioSummary } from '../stats.js';
import { isOrt } from './serve-arms.js';
import { noiseCells, type ProbeNoise } from './serve-noise.js';
import { pairedRounds, resolutionLines } from './serve-resolution.js';

export interface ArmResult {
  readonly label: string;
  readonly kind: string;
  /** Per round: the highest rate that passed. */
  readonly maxQps: number[];
  /** Per round: the rates above it that ended undecided. */
  readonly undecided: number[][];
  /** Per round: every probe's noise. */
  readonly noise: ProbeNoise[][];
  simulatedQps: number | null;
}

export interface MixTable {
  readonly mix: string;
  readonly models: readonly string[];
  readonly cores: readonly number[];
  readonly ruleLine: string;
  readonly splitLine?: string;
  readonly arms: readonly ArmResult[];
}

const med = (xs: readonly number[]) => (xs.length > 0 ? median(xs) : Number.NaN);

/** The ORT arm with the highest median max QPS (undefined: no ORT arm ran). */
export function bestOrt(arms: readonly ArmResult[]): ArmResult | undefined {
  return arms
    .filter((a) => isOrt(a.kind) && a.maxQps.length > 0)
    .reduce<ArmResult | undefined>((best, a) => (best === undefined || med(a.maxQps) > med(best.maxQps) ? a : best), undefined);
}

/** Per round: a / b (rounds where b is 0 are left out); null when none is left. */
export const paired = (a: ArmResult, b: ArmResult): RatioSummary | null => pairedRounds(a, b);

const ratioCell = (s: RatioSummary | null) =>
  s === null ? '-' : `${s.medianRatio.toFixed(2)} [${s.minRatio.toFixed(2)}–${s.maxRatio.toFixed(2)}]`;

export function mixTable(t: MixTable): string {
  const best = bestOrt(t.arms);
  const fcfs = t.arms.find((a) => a.label === 'fcfs');
  const rows = t.arms.map((a) => {
    const live = med(a.maxQps);
    const sim = a.simulatedQps;
    const name = a === best ? `${a.label} (best ORT)` : a.label;
    const undecided = a.undecided.reduce((n, u) => n + u.length, 0);
    return (
      `| ${name} | ${a.maxQps.map((q) => q.toFixed(2)).join(' / ')} | ${live.toFixed(2)} | ${best ? ratioCell(paired(a, best)) : '-'} | ` +
      `${fcfs ? ratioCell(paired(a, fcfs)) : '-'} | ${sim === null ? '-' : `${sim.toFixed(2)} (simulated)`} | ` +
      `${sim === null || !(live > 0) ? '-' : (sim / live).toFixed(2)} | ${undecided} | ${noiseCells(a.noise).join(' | ')} |`
    );
  });
  const lines = [
    `#### Mix ${t.mix}: ${t.models.join(', ')} on cores ${t.cores.join(',')}`,
    '',
    ...resolutionLines(t.arms),
    '',
    t.ruleLine,
    '',
    `Judgement: ${judgementLine()}.`,
    '',
    ...(t.splitLine ? [t.splitLine, ''] : []),
    `best ORT: ${best ? `${best.label}, median ${med(best.maxQps).toFixed(2)} QPS` : 'no ONNX Runtime arm ran'}`,
    '',
    '| arm | max QPS at QoS per round (live) | median | × best ORT, paired median [min–max] | × veltair fcfs, paired | simulator predicts ' +
      '| sim / live | undecided probes | outside CPU, max of cores | steal, max | client CPU ms/request, median | noisy reruns |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ];
  return lines.join('\n');
}
