/**
 * The recall–latency frontier of a bundle's sparse output layer (`veltair plot BUNDLE --sparse`):
 * every measured version at (quiet latency per input, recall@1 against dense), the kept family
 * large, outlined, labelled by sparsity and joined as the frontier; recall@5 as hollow marks.
 * Latency is the compile-time quiet measurement (level 0; the other levels are in head.json).
 */
import type { TopLevelSpec } from 'vega-lite';
import type { HeadMeta } from '../sparse-head/format.js';
import type { FigureData } from './figure-data.js';
import { figureText } from './label.js';
import { FIGURE_FONT, logTicks, PANEL_HEIGHT, PANEL_WIDTH } from './specs.js';

export interface SparseVersionPoint {
  readonly version: string;
  readonly sparsity: number;
  readonly latencyMs: number;
  readonly recallAt1: number;
  readonly recallAt5: number;
  readonly precisionAt1: number | null;
  readonly neuronsScored: number;
  readonly kept: boolean;
}

export function sparsePoints(meta: HeadMeta): SparseVersionPoint[] {
  return meta.versions.map((v) => ({
    version: v.id,
    sparsity: v.sparsity,
    latencyMs: v.latencyMs['0']!,
    recallAt1: v.recallAt1,
    recallAt5: v.recallAt5,
    precisionAt1: v.precisionAt1,
    neuronsScored: Math.round(v.scoredMean),
    kept: v.kept,
  }));
}

export function sparseFigureData(meta: HeadMeta): FigureData {
  return {
    figure: 'layer',
    layer: { index: meta.layer.index, name: meta.layer.name, op: 'dense (sparse family)', workload: null },
    panels: { sparseVersions: sparsePoints(meta) as unknown as FigureData['panels'][string] },
  };
}

/** Where recall was measured, without file paths (a report is the same bytes wherever the bundle sits). */
export function calibrationText(c: HeadMeta['calibration']): string {
  const what = { file: 'a calibration file', 'training-data': "the training run's data", generated: 'GENERATED inputs (not real data)' }[
    c.source
  ];
  return `${c.rows} rows of ${what}${c.labelled ? ', with labels' : ''}`;
}

export function sparseFrontierFigure(meta: HeadMeta): TopLevelSpec {
  const points = sparsePoints(meta);
  const lat = points.map((p) => p.latencyMs);
  const domain: [number, number] = [Math.min(...lat) / 1.8, Math.max(...lat) * 2.2];
  const x = {
    field: 'latencyMs',
    type: 'quantitative',
    title: 'latency per input (ms, quiet)',
    scale: { type: 'log', domain, nice: false },
    axis: { values: logTicks(domain), format: '~g' },
  };
  const y = (field: string, title: string) => ({
    field,
    type: 'quantitative',
    title,
    scale: { domain: [0, 1.05], nice: false },
    axis: { format: '.0%' },
  });
  const kept = points.filter((p) => p.kept).length;
  return {
    title: {
      text: `sparse output layer ${figureText(meta.layer.name)}: recall vs latency`,
      subtitle: [
        `${meta.layer.n} classes · top-${meta.layer.k} · ${kept} of ${points.length} versions kept (outlined, joined) · index ${meta.index.source}`,
        'filled circles: recall@1 (grey: not kept) · hollow diamonds: recall@5 of the dense top-5',
        `calibration: ${calibrationText(meta.calibration)}`,
      ],
    },
    width: PANEL_WIDTH + 120,
    height: PANEL_HEIGHT,
    data: { values: points },
    layer: [
      {
        transform: [{ filter: 'datum.kept' }],
        mark: { type: 'line', color: '#1f77b4', strokeWidth: 2 },
        encoding: { x, y: y('recallAt1', 'recall against dense'), order: { field: 'latencyMs' } },
      },
      { mark: { type: 'point', shape: 'diamond', filled: false, size: 90, color: '#ff7f0e' }, encoding: { x, y: y('recallAt5', '') } },
      {
        transform: [{ filter: '!datum.kept' }],
        mark: { type: 'point', filled: true, size: 90, color: '#9a9a9a' },
        encoding: { x, y: y('recallAt1', '') },
      },
      {
        transform: [{ filter: 'datum.kept' }],
        mark: { type: 'point', filled: true, size: 260, color: '#1f77b4', stroke: '#111', strokeWidth: 2 },
        encoding: { x, y: y('recallAt1', '') },
      },
      ...[0, 1].map((parity) => ({
        transform: [{ window: [{ op: 'row_number', as: 'labelRank' }] }, { filter: `datum.labelRank % 2 == ${parity}` }],
        mark: { type: 'text', align: 'left', dx: 12, dy: parity === 1 ? -12 : 16, fontSize: 12, fontWeight: 'bold' },
        encoding: { x, y: y('recallAt1', ''), text: { field: 'version' } },
      })),
    ],
    config: {
      font: FIGURE_FONT,
      background: 'white',
      padding: 12,
      title: { fontSize: 15, subtitleFontSize: 11, anchor: 'start' },
      axis: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', gridColor: '#e6e6e6' },
      view: { stroke: '#bbb' },
    },
  } as unknown as TopLevelSpec;
}
