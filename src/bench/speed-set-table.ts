/**
 * The speed-set table (bench/RESULTS.md): every model of the coverage table at
 * ≤ 25 GMACs, compiled at the default budget, against ONNX Runtime at 1 and 2 threads in one run.
 * Pure: records in, markdown out. A model that misses (veltair/ORT above 1.0, or above the 0.8 the
 * geomean aims at) carries its per-step profile against the machine's limits (step-roofline.ts).
 */
import { describeRoofline, type GroupLimit } from './step-roofline.js';

export interface SpeedCompile {
  readonly ok: boolean;
  readonly wallSeconds: number;
  readonly tuningSeconds?: number;
  readonly bundleBytes?: number;
  readonly error?: string;
}

export interface SpeedLatency {
  readonly veltairMs: number;
  readonly ortMs: number;
  readonly ratio: number;
  /** The paired rounds' ratio spread. */
  readonly minRatio?: number;
  readonly maxRatio?: number;
}

/** What the run keeps of a roofline: enough for the table and a reader. */
export interface SpeedRoofline {
  readonly peakGflops: number;
  readonly memoryGbps: number;
  readonly totalMs: number;
  readonly fraction: number;
  readonly groups: readonly GroupLimit[];
}

/** One model's row: its GMACs (from coverage), compile, check against ORT and the run's timings. */
export interface SpeedRow {
  readonly model: string;
  readonly gmacs: number;
  readonly compile?: SpeedCompile;
  readonly match?: { readonly relErr: number; readonly ok: boolean; readonly error?: string };
  readonly latency?: Readonly<Record<string, SpeedLatency>>;
  readonly roofline?: Readonly<Record<string, SpeedRoofline>>;
  readonly error?: string;
}

/** The geomean target and the per-model ceiling of item 4. */
export const GEOMEAN_TARGET = 0.8;
export const MODEL_CEILING = 1.0;

/** Whether a model's ratio at `threads` calls for its profile: it misses the ceiling or pulls the geomean above its target. */
export const needsProfile = (ratio: number) => ratio > GEOMEAN_TARGET;

const geomean = (xs: readonly number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

function ratioCell(l: SpeedLatency | undefined): string {
  if (!l) return '';
  const spread = l.minRatio !== undefined && l.maxRatio !== undefined ? ` [${l.minRatio.toFixed(2)}–${l.maxRatio.toFixed(2)}]` : '';
  const mark = l.ratio > MODEL_CEILING ? '**' : '';
  return `${mark}${l.ratio.toFixed(3)}${mark}${spread} (${l.veltairMs.toPrecision(3)} / ${l.ortMs.toPrecision(3)})`;
}

function statusOf(r: SpeedRow): string {
  if (!r.compile) return 'not compiled yet';
  if (!r.compile.ok) return `compile failed: ${r.compile.error ?? ''}`;
  if (!r.match) return 'not checked yet';
  if (!r.match.ok) return r.match.error ?? `MISMATCH (rel err ${r.match.relErr.toExponential(2)})`;
  if (r.error) return r.error;
  return r.latency ? '' : 'not timed yet';
}

function whereItGoes(r: SpeedRow): string {
  const parts = ['1', '2'].flatMap((t) => {
    const l = r.latency?.[t],
      p = r.roofline?.[t];
    return l && p && needsProfile(l.ratio) ? [`${t}t: ${describeRoofline(p)}`] : [];
  });
  return parts.join(' · ');
}

/** The markdown table and its summary lines, smallest model first. */
export function speedSetTable(rows: readonly SpeedRow[]): string {
  const sorted = [...rows].sort((a, b) => a.gmacs - b.gmacs || a.model.localeCompare(b.model));
  const lines = [
    '| model | GMACs | compile s | veltair/ORT 1 thread [spread] (ms / ms) | 2 threads | status | where the time goes (models above 0.8) |',
    '|---|---|---|---|---|---|---|',
    ...sorted.map(
      (r) =>
        `| ${r.model} | ${r.gmacs.toFixed(2)} | ${r.compile?.ok ? r.compile.wallSeconds.toFixed(0) : ''} | ` +
        `${ratioCell(r.latency?.['1'])} | ${ratioCell(r.latency?.['2'])} | ${statusOf(r)} | ${whereItGoes(r)} |`,
    ),
  ];
  const timed = sorted.filter((r) => r.latency?.['1'] && r.latency['2']);
  lines.push(
    '',
    `${sorted.length} models at ≤ 25 GMACs: ${sorted.filter((r) => r.compile?.ok).length} compiled at the default budget, ` +
      `${sorted.filter((r) => r.match?.ok).length} checked against ONNX Runtime, ${timed.length} timed at both thread counts.`,
  );
  for (const t of ['1', '2']) {
    const got = sorted.flatMap((r) => (r.latency?.[t] ? [{ model: r.model, ratio: r.latency[t]!.ratio }] : []));
    if (got.length === 0) continue;
    const above = got.filter((g) => g.ratio > MODEL_CEILING).map((g) => g.model);
    lines.push(
      `${t} thread(s): ${got.length} models, geomean veltair/ORT ${geomean(got.map((g) => g.ratio)).toFixed(3)} ` +
        `(target ≤ ${GEOMEAN_TARGET}), above ${MODEL_CEILING.toFixed(1)}: ${above.length === 0 ? 'none' : `${above.length} (${above.join(', ')})`}`,
    );
  }
  const peaks = ['1', '2'].flatMap((t) => {
    const p = sorted.flatMap((r) => (r.roofline?.[t] ? [r.roofline[t]!] : []));
    if (p.length === 0) return [];
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return [
      `${t} thread(s) FMA peak ${med(p.map((x) => x.peakGflops)).toFixed(0)} GFLOP/s, memcpy ${med(p.map((x) => x.memoryGbps)).toFixed(1)} GB/s`,
    ];
  });
  if (peaks.length > 0) lines.push(`Limits measured beside each profile (medians over the profiled models): ${peaks.join('; ')}.`);
  return lines.join('\n');
}

export const SPEED_BEGIN = '<!-- speed-set-table:begin (generated by src/bench/speed-set.ts --results) -->';
export const SPEED_END = '<!-- speed-set-table:end -->';
