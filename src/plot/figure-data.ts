/**
 * The rows behind a figure as a file (`veltair plot --data`): JSON `{figure, layer?, panels}` or
 * one CSV table with a `panel` column (the union of the panels' columns; a cell a panel lacks is
 * empty). CSV follows RFC 4180: CRLF line ends, a field holding a comma, quote, CR or LF is quoted
 * and its quotes doubled, so node names survive whatever characters they carry; a text cell that
 * a spreadsheet would run as a formula (=, +, -, @ …) is prefixed with ' (src/csv.ts, OWASP's rule).
 */
import type { Manifest } from '../bundle/manifest.js';
import type { BundleProfiles } from '../bundle/candidates-file.js';
import { candidatePoints, levelLatencies, modelLatencyPerLevel, modelVersionsPerLayer } from './data.js';
import { tunableLayer } from './layer-id.js';
import { csvField } from '../csv.js';

type Cell = string | number | boolean | null;
type Row = Readonly<Record<string, Cell>>;

export interface FigureData {
  readonly figure: 'layer' | 'model';
  readonly layer?: { readonly index: number; readonly name: string; readonly op: string; readonly workload: string | null };
  /** Panel name → its rows, in the figure's panel order. */
  readonly panels: Readonly<Record<string, readonly Row[]>>;
}

const rows = (xs: readonly object[]) => xs as unknown as readonly Row[];

export function layerFigureData(m: Manifest, profiles: BundleProfiles | undefined, layerIndex: number): FigureData {
  const l = tunableLayer(m, layerIndex);
  return {
    figure: 'layer',
    layer: { index: l.index, name: l.name, op: l.op, workload: l.workload },
    panels: { candidates: rows(candidatePoints(m, profiles, layerIndex)), latencyByLevel: rows(levelLatencies(m, layerIndex)) },
  };
}

export function modelFigureData(m: Manifest): FigureData {
  return { figure: 'model', panels: { versionsPerLayer: rows(modelVersionsPerLayer(m)), latencyPerLevel: rows(modelLatencyPerLevel(m)) } };
}

export { csvField };

export function figureDataCsv(d: FigureData): string {
  const columns: string[] = [];
  for (const panel of Object.values(d.panels))
    for (const r of panel) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k);
  const lines = [['panel', ...columns].map(csvField).join(',')];
  for (const [name, panel] of Object.entries(d.panels)) {
    for (const r of panel) lines.push([name, ...columns.map((c) => r[c])].map(csvField).join(','));
  }
  return lines.join('\r\n') + '\r\n';
}

export function figureDataJson(d: FigureData): string {
  return JSON.stringify(d, null, 2) + '\n';
}
