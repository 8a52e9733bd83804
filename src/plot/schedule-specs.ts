/**
 * Vega-Lite specs for the scheduler's figures (`veltair simulate … --plot DIR`), data inlined:
 *  - QoS satisfaction vs load, one line per policy;
 *  - best static block size (K of static:K with the highest satisfaction, then lowest mean
 *    latency) vs load;
 *  - the blocks a model is cut into at the lightest and the heaviest simulated load: layers on
 *    the x axis, each layer's core requirement as a bar, and a rule at every layer where a block
 *    started, as wide as the share of requests whose block started there.
 * Every figure's subtitle says it is simulated and what the profiles were. Model-supplied names
 * go through figureText.
 */
import type { TopLevelSpec } from 'vega-lite';
import { FIGURE_FONT, PANEL_HEIGHT, PANEL_WIDTH } from './specs.js';
import { figureText } from './label.js';

type Json = Record<string, unknown>;

const CONFIG: Json = {
  font: FIGURE_FONT,
  background: 'white',
  padding: 12,
  title: { fontSize: 15, subtitleFontSize: 11, subtitleColor: '#333', anchor: 'start', offset: 12 },
  axis: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', titlePadding: 8, gridColor: '#e6e6e6' },
  legend: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', orient: 'right' },
  header: { labelFontSize: 12, titleFontSize: 12 },
  view: { stroke: '#bbb' },
};

export interface SatisfactionRow {
  readonly policy: string;
  readonly load: number;
  readonly qps: number;
  readonly satisfaction: number;
}
export interface BestBlockRow {
  readonly load: number;
  readonly qps: number;
  readonly k: number;
}
export interface BlockRow {
  readonly condition: string;
  readonly layer: number;
  readonly name: string;
  readonly requirement: number;
  readonly blockStart: number;
}

export function satisfactionFigure(rows: readonly SatisfactionRow[], subtitle: string): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: 'QoS satisfaction vs load', subtitle: figureText(subtitle) },
    width: PANEL_WIDTH * 1.4,
    height: PANEL_HEIGHT,
    data: { values: rows.map((r) => ({ ...r, policy: figureText(r.policy) })) },
    layer: [
      { mark: { type: 'rule', strokeDash: [4, 3], color: '#888' }, encoding: { y: { datum: 0.99 } } },
      {
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'load', type: 'quantitative', title: "offered load (fraction of the mix's capacity)" },
          y: { field: 'satisfaction', type: 'quantitative', title: 'requests within QoS', scale: { zero: false }, axis: { format: '%' } },
          color: { field: 'policy', type: 'nominal', title: 'policy' },
          tooltip: [{ field: 'policy' }, { field: 'qps', title: 'QPS' }, { field: 'satisfaction', format: '.4f' }],
        },
      },
    ],
    config: CONFIG,
  } as unknown as TopLevelSpec;
}

export function bestBlockFigure(rows: readonly BestBlockRow[], subtitle: string): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: 'Best static block size vs load', subtitle: figureText(subtitle) },
    width: PANEL_WIDTH * 1.4,
    height: PANEL_HEIGHT,
    data: { values: rows },
    mark: { type: 'line', point: { size: 60 }, interpolate: 'step-after' },
    encoding: {
      x: { field: 'load', type: 'quantitative', title: "offered load (fraction of the mix's capacity)" },
      y: { field: 'k', type: 'quantitative', title: 'best K (layers per static block)', scale: { zero: true } },
      tooltip: [{ field: 'qps', title: 'QPS' }, { field: 'k' }],
    },
    config: CONFIG,
  } as unknown as TopLevelSpec;
}

export function blocksFigure(model: string, rows: readonly BlockRow[], subtitle: string): TopLevelSpec {
  const values = rows.map((r) => ({ ...r, name: figureText(r.name), condition: figureText(r.condition) }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: `Blocks ${figureText(model)} is cut into: light vs heavy load`, subtitle: figureText(subtitle) },
    data: { values },
    facet: { row: { field: 'condition', type: 'nominal', title: null, sort: null } },
    spec: {
      width: PANEL_WIDTH * 2,
      height: PANEL_HEIGHT * 0.7,
      layer: [
        {
          mark: { type: 'bar', color: '#9ecae1' },
          encoding: {
            x: {
              field: 'layer',
              type: 'ordinal',
              title: 'layer (schedulable unit, execution order)',
              axis: { labelAngle: 0, labelOverlap: 'greedy' },
            },
            y: { field: 'requirement', type: 'quantitative', title: 'requirement (cores)' },
            tooltip: [
              { field: 'layer' },
              { field: 'name' },
              { field: 'requirement' },
              { field: 'blockStart', title: 'block starts here (share of requests)', format: '.2f' },
            ],
          },
        },
        {
          transform: [{ filter: 'datum.blockStart > 0.05' }],
          mark: { type: 'tick', color: '#d62728', thickness: 3, orient: 'vertical', height: PANEL_HEIGHT * 0.7 },
          encoding: {
            x: { field: 'layer', type: 'ordinal', bandPosition: 0 },
            opacity: { field: 'blockStart', type: 'quantitative', title: 'block starts (share of requests)', scale: { domain: [0, 1] } },
          },
        },
      ],
    },
    config: CONFIG,
  } as unknown as TopLevelSpec;
}
