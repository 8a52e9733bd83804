/**
 * Vega-Lite specs for the two figures, data inlined (the rows of data.ts), sized for a paper page:
 * two ~360 px panels side by side, fonts ≥ 11 px, every axis titled with its unit.
 *  - layer figure: (a) every measured candidate in the locality–parallelism plane (L2 tile
 *    footprint × parallel chunks, both log), coloured by quiet latency, kept versions large,
 *    outlined and labelled v1…; (b) latency vs interference level per kept version plus the oracle
 *    (best any candidate measured) dashed.
 *  - model figure: kept versions per tunable layer along the network; adaptive vs fixed latency per
 *    level as sums of profiled layer latencies (said so in the figure: not a whole-model run).
 * Model-supplied text only reaches the spec through figureText (vega escapes markup itself).
 */
import type { TopLevelSpec } from 'vega-lite';
import type { Manifest, ManifestLayer } from '../bundle/manifest.js';
import type { BundleProfiles } from '../bundle/candidates-file.js';
import {
  ADAPTIVE_POLICY,
  candidatePoints,
  FIXED_POLICY,
  levelLatencies,
  modelLatencyPerLevel,
  modelVersionsPerLayer,
  ORACLE_SERIES,
  workloadProfileOf,
  type CandidatePoint,
  type LayerVersionCount,
  type LevelLatency,
  type PolicyLatency,
} from './data.js';
import { figureText, shapeText } from './label.js';
import { tunableLayer } from './layer-id.js';

type Json = Record<string, unknown>;

export const PANEL_WIDTH = 360;
export const PANEL_HEIGHT = 270;
/** DejaVu first: it is what the PNG renderer finds on a bare Linux machine. */
export const FIGURE_FONT = 'DejaVu Sans, Helvetica, Arial, sans-serif';
const VERSION_COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];

const CONFIG: Json = {
  font: FIGURE_FONT,
  background: 'white',
  padding: 12,
  title: { fontSize: 15, subtitleFontSize: 12, subtitleColor: '#333', anchor: 'start', offset: 12 },
  axis: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', titlePadding: 8, gridColor: '#e6e6e6' },
  legend: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', labelLimit: 420, orient: 'bottom', direction: 'vertical' },
  header: { labelFontSize: 12, titleFontSize: 12 },
  view: { stroke: '#bbb' },
  concat: { spacing: 48 },
};

const panelTitle = (text: string, subtitle?: string): Json => ({
  text,
  fontSize: 13,
  fontWeight: 'bold',
  anchor: 'start',
  ...(subtitle ? { subtitle, subtitleFontSize: 11 } : {}),
});

/** A log-scale domain padded around the data so marks and labels stay inside the frame. */
function paddedLogDomain(values: readonly number[]): [number, number] {
  const ok = values.filter((v) => v > 0 && Number.isFinite(v));
  if (ok.length === 0) return [1, 10];
  return [Math.min(...ok) / 1.8, Math.max(...ok) * 2.2];
}

/** 1-2-5 ticks inside a log domain: labelled gridlines without the unlabelled 3…9 clutter. */
export function logTicks([lo, hi]: readonly [number, number]): number[] {
  const out: number[] = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** k;
      if (v >= lo && v <= hi) out.push(k < 0 ? Number(v.toPrecision(1)) : v);
    }
  }
  return out;
}

/** Integer levels on a linear axis, padded half a step so end points are not on the frame. */
function levelScale(levels: readonly number[]): Json {
  const lo = Math.min(...levels),
    hi = Math.max(...levels);
  return { domain: [lo - 0.3, hi + 0.3], nice: false, zero: false };
}

function layerTitle(layer: ManifestLayer): string {
  const w = layer.workloadSpec;
  const kernel = w && 'kh' in w ? ` ${w.kh}x${w.kw}/${w.strideH}` : '';
  const inputs = layer.inputShapes.length > 0 ? shapeText(layer.inputShapes[0]!) : '';
  return `layer ${layer.index}: ${layer.op}${kernel}, ${inputs} → ${shapeText(layer.outputShape)}`;
}

function candidateSummary(points: readonly CandidatePoint[], fromProfiles: boolean): string {
  if (!fromProfiles) {
    return `${points.length} kept version${points.length === 1 ? '' : 's'}; this bundle has no candidate profiles, so other candidates are not shown`;
  }
  const failed = points.filter((p) => p.latencyQuietMs === null).length;
  const kept = points.filter((p) => p.kept).length;
  const dominated = points.filter((p) => p.dominated).length;
  return `${points.length} measured candidates: ${kept} kept, ${dominated} dominated${failed > 0 ? `, ${failed} without a quiet latency (grey ×)` : ''}`;
}

function threadsNote(points: readonly CandidatePoint[]): string {
  const threads = [...new Set(points.map((p) => p.threads))].sort((a, b) => a - b);
  return threads.length === 1
    ? `every candidate runs ${threads[0]} thread${threads[0] === 1 ? '' : 's'}`
    : `threads ${threads.join(', ')} (marker shape)`;
}

function candidatePanel(points: readonly CandidatePoint[]): Json {
  const xDomain = paddedLogDomain(points.map((p) => p.footprintKiB));
  const yDomain = paddedLogDomain(points.map((p) => p.parallelChunks));
  const x = {
    field: 'footprintKiB',
    type: 'quantitative',
    title: 'L2 tile footprint (KiB)',
    scale: { type: 'log', domain: xDomain, nice: false },
    axis: { values: logTicks(xDomain), format: '~g' },
  };
  const y = {
    field: 'parallelChunks',
    type: 'quantitative',
    title: 'parallel chunks (work items)',
    scale: { type: 'log', domain: yDomain, nice: false },
    axis: { values: logTicks(yDomain), format: '~g' },
  };
  const color = {
    field: 'latencyQuietMs',
    type: 'quantitative',
    title: 'quiet latency (ms, level 0)',
    scale: { type: 'log', scheme: { name: 'viridis', extent: [0, 0.85] } },
    legend: { direction: 'horizontal', gradientLength: 240, format: '~g' },
  };
  const multiThread = new Set(points.map((p) => p.threads)).size > 1;
  const shape = multiThread ? { shape: { field: 'threads', type: 'nominal', title: 'threads' } } : {};
  const label = (parity: 0 | 1) => ({
    transform: [
      { filter: 'datum.kept' },
      { window: [{ op: 'row_number', as: 'labelRank' }] },
      { filter: `datum.labelRank % 2 == ${parity}` },
    ],
    mark: { type: 'text', align: 'left', dx: 11, dy: parity === 1 ? -11 : 15, fontSize: 13, fontWeight: 'bold', color: '#111' },
    encoding: { x, y, text: { field: 'versionLabel' } },
  });
  return {
    title: panelTitle(
      '(a) candidates in the locality–parallelism plane',
      'large outlined: kept versions v1 (most locality) … vN (most parallelism)',
    ),
    width: PANEL_WIDTH,
    height: PANEL_HEIGHT,
    data: { values: points },
    layer: [
      {
        transform: [{ filter: '!datum.kept && datum.latencyQuietMs != null' }],
        mark: { type: 'point', filled: true, size: 70, opacity: 0.9 },
        encoding: { x, y, color, ...shape },
      },
      {
        transform: [{ filter: 'datum.latencyQuietMs == null' }],
        mark: { type: 'point', shape: 'cross', filled: true, size: 80, color: '#9a9a9a' },
        encoding: { x, y },
      },
      {
        transform: [{ filter: 'datum.kept' }],
        mark: { type: 'point', filled: true, size: 280, stroke: '#111', strokeWidth: 2, opacity: 1 },
        encoding: { x, y, color, ...shape },
      },
      label(1),
      label(0),
    ],
  };
}

function levelPanel(rows: readonly LevelLatency[], levels: readonly number[]): Json {
  const series = [...new Set(rows.map((r) => r.series))];
  const versions = series.filter((s) => s !== ORACLE_SERIES);
  const domain = [...versions, ...(series.includes(ORACLE_SERIES) ? [ORACLE_SERIES] : [])];
  const range = domain.map((s, i) => (s === ORACLE_SERIES ? '#000000' : VERSION_COLORS[i % VERSION_COLORS.length]!));
  const legend = { title: 'kept version (L2 tile, chunks)', symbolType: 'stroke', symbolStrokeWidth: 2.5, symbolSize: 300 };
  return {
    title: panelTitle('(b) latency vs interference', 'median per level from tuning; oracle = best candidate at each level'),
    width: PANEL_WIDTH,
    height: PANEL_HEIGHT,
    data: { values: rows },
    mark: { type: 'line', strokeWidth: 2.2, point: { filled: true, size: 45 } },
    encoding: {
      x: {
        field: 'level',
        type: 'quantitative',
        title: 'interference level (0 = quiet)',
        scale: levelScale(levels),
        axis: { values: [...levels], format: 'd', tickMinStep: 1, grid: false },
      },
      y: { field: 'latencyMs', type: 'quantitative', title: 'latency (ms)', scale: { zero: false, nice: true } },
      color: { field: 'series', type: 'nominal', scale: { domain, range }, legend },
      strokeDash: {
        field: 'series',
        type: 'nominal',
        scale: { domain, range: domain.map((s) => (s === ORACLE_SERIES ? [7, 4] : [1, 0])) },
        legend,
      },
    },
  };
}

/** The layer figure: (a) candidates in the parallelism–locality plane, (b) latency per level. */
export function layerFigure(m: Manifest, profiles: BundleProfiles | undefined, layerIndex: number): TopLevelSpec {
  const layer = tunableLayer(m, layerIndex);
  const points = candidatePoints(m, profiles, layerIndex);
  const fromProfiles = workloadProfileOf(m, profiles, layerIndex) !== undefined;
  const subtitle = [
    `${figureText(layer.name)} · workload ${layer.workload ?? '-'}`,
    `${candidateSummary(points, fromProfiles)}; ${threadsNote(points)}`,
  ];
  return {
    title: { text: layerTitle(layer), subtitle },
    hconcat: [candidatePanel(points), levelPanel(levelLatencies(m, layerIndex), m.options.levels)],
    resolve: { scale: { color: 'independent', strokeDash: 'independent', shape: 'independent' }, legend: { color: 'independent' } },
    config: CONFIG,
  } as unknown as TopLevelSpec;
}

function versionsPanel(rows: readonly LayerVersionCount[], maxVersions: number): Json {
  const last = rows.length > 0 ? rows[rows.length - 1]!.layer : 0;
  const step = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000].find((s) => last / s <= 12) ?? Math.ceil(last / 12);
  const shown = rows.map((r) => r.layer).filter((i) => i % step === 0);
  const top = Math.max(maxVersions, ...rows.map((r) => r.versions), 1);
  return {
    title: panelTitle('(a) kept versions per tunable layer', `${rows.length} tunable layers in network order`),
    width: PANEL_WIDTH,
    height: PANEL_HEIGHT,
    data: { values: rows.map(({ layer, op, versions }) => ({ layer, op, versions })) },
    mark: { type: 'bar' },
    encoding: {
      x: {
        field: 'layer',
        type: 'ordinal',
        sort: null,
        title: 'layer index (network order)',
        axis: { values: shown, labelAngle: 0, labelOverlap: true },
      },
      y: {
        field: 'versions',
        type: 'quantitative',
        title: 'kept versions (count)',
        scale: { domain: [0, top], nice: false },
        axis: { tickMinStep: 1, format: 'd', values: Array.from({ length: top + 1 }, (_, i) => i) },
      },
      color: { field: 'op', type: 'nominal', title: 'layer op', scale: { scheme: 'tableau10' }, legend: { direction: 'horizontal' } },
    },
  };
}

function policyPanel(rows: readonly PolicyLatency[], levels: readonly number[]): Json {
  const legend = { title: 'version policy', symbolType: 'stroke', symbolStrokeWidth: 2.5, symbolSize: 300 };
  return {
    title: panelTitle('(b) adaptive vs fixed versions per level', 'sum of profiled layer latencies, not a whole-model run'),
    width: PANEL_WIDTH,
    height: PANEL_HEIGHT,
    data: { values: rows },
    mark: { type: 'line', strokeWidth: 2.2, point: { filled: true, size: 50 } },
    encoding: {
      x: {
        field: 'level',
        type: 'quantitative',
        title: 'interference level (0 = quiet)',
        scale: levelScale(levels),
        axis: { values: [...levels], format: 'd', tickMinStep: 1, grid: false },
      },
      y: { field: 'latencyMs', type: 'quantitative', title: 'sum of layer latencies (ms)', scale: { zero: true, nice: true } },
      color: {
        field: 'policy',
        type: 'nominal',
        scale: { domain: [ADAPTIVE_POLICY, FIXED_POLICY], range: ['#1f77b4', '#d62728'] },
        legend,
      },
      strokeDash: {
        field: 'policy',
        type: 'nominal',
        scale: {
          domain: [ADAPTIVE_POLICY, FIXED_POLICY],
          range: [
            [1, 0],
            [6, 3],
          ],
        },
        legend,
      },
    },
  };
}

/** The model figure: versions per layer along the network; adaptive vs fixed latency per level. */
export function modelFigure(m: Manifest): TopLevelSpec {
  const perLayer = modelVersionsPerLayer(m);
  const total = perLayer.reduce((s, r) => s + r.versions, 0);
  return {
    title: {
      text: `${figureText(m.model.path)}: ${perLayer.length} tunable layers, ${total} kept versions`,
      subtitle: [
        `target ${figureText(m.target.spec.cpuModel)}; tuned at levels ${m.options.levels.join(', ')} with ${m.options.trials} trials per workload`,
        'right panel: SUMS OF PROFILED LAYER LATENCIES from the tuning measurements, not whole-model measurements',
      ],
    },
    hconcat: [versionsPanel(perLayer, m.options.maxVersions), policyPanel(modelLatencyPerLevel(m), m.options.levels)],
    resolve: { scale: { color: 'independent', strokeDash: 'independent' }, legend: { color: 'independent' } },
    config: CONFIG,
  } as unknown as TopLevelSpec;
}
