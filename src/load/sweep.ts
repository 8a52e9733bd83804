/**
 * `veltair load --qps-sweep FROM:TO:STEPS`: the same open-loop Poisson load (load.ts) at STEPS
 * total rates evenly spaced from FROM to TO, one run each, in order; per model per step, QoS
 * attainment (answered within QoS / sent) and p99. The curves a researcher expects of a serving
 * system: attainment and tail latency against offered load.
 */
import { userError } from '../errors.js';
import { runLoad, type LoadModel, type LoadResult } from './generator.js';

export interface SweepSpec {
  readonly from: number;
  readonly to: number;
  readonly steps: number;
}

/** `FROM:TO:STEPS`, 0 < FROM ≤ TO, 1 ≤ STEPS ≤ 100 (STEPS 1: FROM only). */
export function parseSweep(text: string): SweepSpec {
  const m = /^([0-9]*\.?[0-9]+):([0-9]*\.?[0-9]+):([0-9]+)$/.exec(text.trim());
  const bad = (why: string) =>
    userError(
      'BAD_ARGUMENT',
      `--qps-sweep ${JSON.stringify(text.slice(0, 40))} ${why}`,
      'e.g. --qps-sweep 5:50:10 (from 5 to 50 QPS in 10 steps)',
    );
  if (!m) throw bad('is not FROM:TO:STEPS');
  const from = Number(m[1]),
    to = Number(m[2]),
    steps = Number(m[3]);
  if (!(from > 0) || !(to >= from) || to > 1e6) throw bad('needs 0 < FROM ≤ TO ≤ 1000000');
  if (!(steps >= 1 && steps <= 100)) throw bad('needs 1 to 100 steps');
  return { from, to, steps };
}

/** The rates of a sweep, evenly spaced, FROM and TO included. */
export function sweepRates(s: SweepSpec): number[] {
  if (s.steps === 1) return [s.from];
  return Array.from({ length: s.steps }, (_, i) => s.from + ((s.to - s.from) * i) / (s.steps - 1));
}

export interface SweepPoint {
  readonly offeredQps: number;
  readonly model: string;
  readonly achievedQps: number;
  /** Answered within QoS / sent. */
  readonly attainment: number;
  readonly p99Ms: number | null;
  readonly qosMs: number;
}

/** One row per model per step, from each step's load result. */
export function sweepPoints(runs: readonly LoadResult[]): SweepPoint[] {
  return runs.flatMap((r) =>
    r.models.map((m) => ({
      offeredQps: r.totalQps,
      model: m.name,
      achievedQps: m.achievedQps,
      attainment: m.satisfaction,
      p99Ms: m.p99Ms,
      qosMs: m.qosMs,
    })),
  );
}

export async function runSweep(
  base: URL,
  models: readonly LoadModel[],
  s: SweepSpec,
  durationS: number,
  seed: number,
  onStep?: (r: LoadResult) => void,
): Promise<LoadResult[]> {
  const out: LoadResult[] = [];
  for (const [i, qps] of sweepRates(s).entries()) {
    const r = await runLoad(base, models, qps, durationS, seed + i);
    out.push(r);
    onStep?.(r);
  }
  return out;
}
