/**
 * Exporting records for analysis: the JSON Lines records themselves (deduplicated, filtered, in a
 * deterministic order), or a flat CSV with one row per record — schedule knobs, footprint, and per
 * level the median, the repeat count and every repeat (space-separated). Cells are written by
 * src/csv.ts (RFC 4180 quoting, text that a spreadsheet would run as a formula prefixed with ').
 */
import { csvField, type CsvValue } from '../csv.js';
import { levelsOf, medianMs, type TuningRecord } from './record.js';
import { scanDatabase, type WarningSink } from './scan.js';

export type ExportFormat = 'jsonl' | 'csv';

export interface ExportOptions {
  readonly format: ExportFormat;
  /** Only records for this target fingerprint. */
  readonly target?: string;
  /** Only records for this workload key. */
  readonly workload?: string;
  readonly onWarning?: WarningSink;
}

export interface ExportResult {
  readonly text: string;
  readonly records: number;
}

const KNOBS = ['vec', 'regOc', 'regCols', 'tileIc', 'tileOc', 'tileRows', 'tileCols', 'loopOrder', 'parallelAxis', 'unroll'] as const;

const csvCell = (v: unknown): string => csvField(v as CsvValue);

export function toCsv(entries: readonly [string, TuningRecord][]): string {
  const levels = [...new Set(entries.flatMap(([, r]) => levelsOf(r)))].sort((a, b) => a - b);
  const header = [
    'id',
    'workload',
    'op',
    'target',
    'cpu_model',
    'status',
    'threads',
    ...KNOBS,
    'algo',
    'footprint_l1',
    'footprint_l2',
    'footprint_l3',
    'footprint_total',
    'parallel_chunks',
    ...levels.flatMap((l) => [`l${l}_median_ms`, `l${l}_repeats`, `l${l}_all_ms`]),
    'error',
    'veltair',
    'codegen',
    'timestamp',
  ];
  const rows = entries.map(([id, r]) => [
    id,
    r.workload,
    r.workloadSpec.op,
    r.target,
    r.targetSpec.cpuModel,
    r.status,
    r.threads,
    ...KNOBS.map((k) => r.schedule[k]),
    // a direct schedule carries no algo (space/knobs.ts makeSchedule)
    r.schedule.algo ?? 'direct',
    r.features.footprintBytes.l1,
    r.features.footprintBytes.l2,
    r.features.footprintBytes.l3,
    r.features.footprintBytes.total,
    r.features.parallelChunks,
    ...levels.flatMap((l) => {
      const xs = r.latencies[String(l)] ?? [];
      return [medianMs(r, l), xs.length, xs.join(' ')];
    }),
    r.error,
    r.tool.veltair,
    r.tool.codegen,
    r.timestamp,
  ]);
  return [header, ...rows].map((row) => row.map(csvCell).join(',')).join('\n') + '\n';
}

export async function exportRecords(path: string, o: ExportOptions): Promise<ExportResult> {
  const scan = await scanDatabase(path, { onWarning: o.onWarning });
  const entries = [...scan.records]
    .filter(([, r]) => (o.target === undefined || r.target === o.target) && (o.workload === undefined || r.workload === o.workload))
    .sort(([ia, a], [ib, b]) => a.workload.localeCompare(b.workload) || a.target.localeCompare(b.target) || ia.localeCompare(ib));
  const text = o.format === 'csv' ? toCsv(entries) : entries.map(([, r]) => JSON.stringify(r) + '\n').join('');
  return { text, records: entries.length };
}
