/**
 * The report's per-layer views: how many versions each tunable layer kept (the histogram table next
 * to the model figure) and the layer table — index, name, op, output shape, versions, the family's
 * best latency and its regret at every interference level, and a link to the layer's figure. Pure.
 */
import type { Manifest, ManifestLayer } from '../bundle/manifest.js';
import { el, table, type Content, type Html } from './report-html.js';
import { shapeText } from './report-summary.js';

/** Anchor of the figure for a workload (layers sharing a workload share the figure). */
export const figureId = (workload: string): string => `fig-${workload}`;
export const layerId = (index: number): string => `layer-${index}`;

/** Layers with something to plot: tunable, with at least one kept version. */
export const plottable = (l: ManifestLayer): boolean => l.tunable && l.workload !== null && l.versions.length > 0;

/** Milliseconds to about four significant digits, with fixed decimals where the values are comparable. */
export function msText(ms: number | undefined): string {
  if (ms === undefined) return '–';
  return ms >= 100 ? ms.toFixed(1) : ms >= 10 ? ms.toFixed(2) : ms >= 0.1 ? ms.toFixed(3) : ms.toPrecision(3);
}
export const percentText = (p: number | undefined): string => (p === undefined ? '–' : p.toFixed(1));

/** Tunable layers per number of kept versions, 0…maxVersions (every count listed, zeros included). */
export function versionsHistogram(m: Manifest): { versions: number; layers: number }[] {
  const tunable = m.layers.filter((l) => l.tunable);
  const top = Math.max(m.options.maxVersions, ...tunable.map((l) => l.versions.length));
  return Array.from({ length: top + 1 }, (_, v) => ({ versions: v, layers: tunable.filter((l) => l.versions.length === v).length })).filter(
    (row) => row.versions > 0 || row.layers > 0,
  );
}

export function versionsTable(m: Manifest): Html {
  const rows = versionsHistogram(m);
  const total = rows.reduce((s, r) => s + r.layers, 0);
  const mean = total === 0 ? 0 : rows.reduce((s, r) => s + r.versions * r.layers, 0) / total;
  return el(
    'div',
    {},
    table(
      [
        { title: 'versions kept', numeric: true },
        { title: 'tunable layers', numeric: true },
        { title: 'share', numeric: true },
      ],
      rows.map((r) => [r.versions, r.layers, total === 0 ? '–' : `${((100 * r.layers) / total).toFixed(0)}%`]),
    ),
    el('p', { class: 'sub' }, `${total} tunable layers, ${mean.toFixed(2)} versions per layer on average.`),
  );
}

function layerRow(l: ManifestLayer, levels: readonly number[]): Html {
  const key = (level: number) => String(level);
  const cells: Content[] = [
    l.index,
    l.name,
    l.op,
    shapeText(l.outputShape),
    l.tunable ? l.versions.length : '–',
    ...levels.map((v) => msText(l.family?.bestMs[key(v)])),
    ...levels.map((v) => percentText(l.family?.regretPercent[key(v)])),
    plottable(l) ? el('a', { href: `#${figureId(l.workload!)}` }, 'plot') : '–',
  ];
  const numeric = new Set([0, 4, ...levels.flatMap((_, i) => [5 + i, 5 + levels.length + i])]);
  const groupStart = new Set([5, 5 + levels.length]);
  const cls = (i: number) => [numeric.has(i) ? 'num' : '', groupStart.has(i) ? 'group' : ''].filter(Boolean).join(' ') || undefined;
  return el(
    'tr',
    { id: layerId(l.index), class: l.tunable ? undefined : 'untuned' },
    cells.map((c, i) => el('td', { class: cls(i) }, c)),
  );
}

/** The layer table: two header rows, the levels grouped under best latency and regret. */
export function layerTable(m: Manifest): Html {
  const levels = m.options.levels;
  const th = (text: Content, attrs: Record<string, string> = {}) => el('th', { scope: 'col', ...attrs }, text);
  const top = el(
    'tr',
    {},
    th('#', { rowspan: '2', class: 'num' }),
    th('name', { rowspan: '2' }),
    th('op', { rowspan: '2' }),
    th('output', { rowspan: '2' }),
    th('versions', { rowspan: '2', class: 'num' }),
    th('best latency (ms) at level', { colspan: String(levels.length), class: 'group' }),
    th('regret of kept family (%) at level', { colspan: String(levels.length), class: 'group' }),
    th('figure', { rowspan: '2' }),
  );
  const sub = el(
    'tr',
    {},
    [...levels, ...levels].map((v, i) => th(v, { class: i % levels.length === 0 ? 'num group' : 'num' })),
  );
  return el(
    'div',
    { class: 'scroll' },
    el(
      'table',
      { class: 'layers' },
      el('thead', {}, top, sub),
      el(
        'tbody',
        {},
        m.layers.map((l) => layerRow(l, levels)),
      ),
    ),
  );
}
