/**
 * serve-bench's tables: per mix, every arm's max QPS at QoS per round (live), its median, and its
 * ratio to "best ORT" — the ONNX Runtime arm (ort, ort-pinned, ort-instances) with the highest
 * median — and to veltair's own `fcfs`, each ratio paired within a round (both arms measured in the
 * same round, so drift between rounds cancels) and given as median [min–max] over rounds; beside
 * each policy, what the simulator predicts (labelled simulated).
 *
 * Resolution: when one kind runs as two identical arms (`--arms fcfs,fcfs`), their paired ratio over
 * rounds is the method's own spread. Two arms 15% apart are told apart when that spread stays
 * inside ±7.5% (the identical ratio within [1/1.075, 1.075]): a true 1.15 ratio's rounds then
 * cannot overlap a true 1.0's.
 */
import { median, summarizeRatios, type RatioSummary } from '../stats.js';
import { isOrt } from './serve-arms.js';

export interface ArmResult {
  readonly label: string;
  readonly kind: string;
  readonly maxQps: number[];
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
  return arms.filter((a) => isOrt(a.kind) && a.maxQps.length > 0).reduce<ArmResult | undefined>((best, a) =>
    (best === undefined || med(a.maxQps) > med(best.maxQps) ? a : best), undefined);
}

/** Per round: a / b (rounds where b is 0 are left out); null when none is left. */
export function paired(a: ArmResult, b: ArmResult): RatioSummary | null {
  const ratios = a.maxQps.map((q, r) => q / b.maxQps[r]!).filter((x) => Number.isFinite(x));
  return ratios.length > 0 ? summarizeRatios(ratios) : null;
}

const ratioCell = (s: RatioSummary | null) => (s === null ? '-' : `${s.medianRatio.toFixed(2)} [${s.minRatio.toFixed(2)}–${s.maxRatio.toFixed(2)}]`);

export const RESOLUTION_BAND = 1.075;

export interface IdenticalCheck { readonly a: string; readonly b: string; readonly ratio: RatioSummary; readonly resolves15: boolean }

/** Every pair of identical arms (same kind) and whether their spread resolves a 15% difference. */
export function identicalChecks(arms: readonly ArmResult[]): IdenticalCheck[] {
  const out: IdenticalCheck[] = [];
  for (const a of arms) {
    const twin = arms.find((b) => b !== a && b.kind === a.kind && b.label === `${a.kind}#2` && a.label === a.kind);
    const r = twin ? paired(twin, a) : null;
    if (twin && r) out.push({ a: a.label, b: twin.label, ratio: r, resolves15: r.minRatio >= 1 / RESOLUTION_BAND && r.maxRatio <= RESOLUTION_BAND });
  }
  return out;
}

export function mixTable(t: MixTable): string {
  const best = bestOrt(t.arms);
  const fcfs = t.arms.find((a) => a.label === 'fcfs');
  const rows = t.arms.map((a) => {
    const live = med(a.maxQps);
    const sim = a.simulatedQps;
    const name = a === best ? `${a.label} (best ORT)` : a.label;
    return `| ${name} | ${a.maxQps.map((q) => q.toFixed(2)).join(' / ')} | ${live.toFixed(2)} | ${best ? ratioCell(paired(a, best)) : '-'} | `
      + `${fcfs ? ratioCell(paired(a, fcfs)) : '-'} | ${sim === null ? '-' : `${sim.toFixed(2)} (simulated)`} | `
      + `${sim === null || !(live > 0) ? '-' : (sim / live).toFixed(2)} |`;
  });
  const lines = [
    `#### Mix ${t.mix}: ${t.models.join(', ')} on cores ${t.cores.join(',')}`, '', t.ruleLine, '',
    ...(t.splitLine ? [t.splitLine, ''] : []),
    `best ORT: ${best ? `${best.label}, median ${med(best.maxQps).toFixed(2)} QPS` : 'no ONNX Runtime arm ran'}`, '',
    '| arm | max QPS at QoS per round (live) | median | × best ORT, paired median [min–max] | × veltair fcfs, paired | simulator predicts | sim / live |',
    '|---|---|---|---|---|---|---|', ...rows,
  ];
  for (const c of identicalChecks(t.arms)) {
    lines.push('', `Resolution: identical arms ${c.b} / ${c.a}, paired over ${c.ratio.ratios.length} rounds: ${ratioCell(c.ratio)}; `
      + `${c.resolves15 ? 'within' : 'NOT within'} ±7.5%, `
        + `so two arms 15% apart ${c.resolves15 ? 'are' : 'are not'} told apart at these rounds and probe times.`);
  }
  return lines.join('\n');
}
