/**
 * Serving figures from `veltair load --qps-sweep` runs, one curve per arm (server), one panel per
 * model: QoS attainment (answered within QoS / sent) against offered load, with the 99% line the
 * max-QPS search holds every model to, and p99 latency against offered load, with each model's
 * QoS as a dashed rule. Points are measured (live) steps; lines join them in rate order.
 */
import type { TopLevelSpec } from 'vega-lite';
import { FIGURE_FONT, PANEL_HEIGHT, PANEL_WIDTH } from './specs.js';

export interface ServingArm {
  readonly label: string;
  readonly points: readonly {
    readonly offeredQps: number;
    readonly model: string;
    readonly attainment: number;
    readonly p99Ms: number | null;
    readonly qosMs: number;
  }[];
}

function rows(arms: readonly ServingArm[]) {
  return arms.flatMap((a) =>
    a.points.map((p) => ({
      arm: a.label,
      model: p.model,
      offeredQps: p.offeredQps,
      attainment: p.attainment,
      p99Ms: p.p99Ms,
      qosMs: p.qosMs,
    })),
  );
}

const common = (title: string, subtitle: string, values: unknown[]) => ({
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json' as const,
  title: { text: title, subtitle },
  data: { values },
  config: { font: FIGURE_FONT },
});

const x = { field: 'offeredQps', type: 'quantitative' as const, title: 'offered load (total QPS over the mix)' };
const color = { field: 'arm', type: 'nominal' as const, title: 'arm' };

/** QoS attainment against offered load, a panel per model. */
export function attainmentFigure(arms: readonly ServingArm[], mix: string): TopLevelSpec {
  return {
    ...common(`${mix}: QoS attainment vs offered load`, 'live, one run per step; dashed: the 99% every model must keep', rows(arms)),
    facet: { column: { field: 'model', type: 'nominal', title: null } },
    spec: {
      width: PANEL_WIDTH,
      height: PANEL_HEIGHT,
      layer: [
        {
          mark: { type: 'line', point: true },
          encoding: {
            x,
            color,
            y: {
              field: 'attainment',
              type: 'quantitative',
              title: 'answered within QoS',
              scale: { domain: [0, 1] },
              axis: { format: '.0%' },
            },
          },
        },
        { mark: { type: 'rule', strokeDash: [4, 4], color: '#555' }, encoding: { y: { datum: 0.99 } } },
      ],
    },
    resolve: { scale: { x: 'independent' } },
  } as TopLevelSpec;
}

/** p99 latency against offered load, a panel per model, log scale, the model's QoS dashed. */
export function p99Figure(arms: readonly ServingArm[], mix: string): TopLevelSpec {
  const values = rows(arms).filter((r) => r.p99Ms !== null && r.p99Ms > 0);
  return {
    ...common(`${mix}: p99 latency vs offered load`, "live, answered requests; dashed: the model's QoS", values),
    facet: { column: { field: 'model', type: 'nominal', title: null } },
    spec: {
      width: PANEL_WIDTH,
      height: PANEL_HEIGHT,
      layer: [
        {
          mark: { type: 'line', point: true },
          encoding: { x, color, y: { field: 'p99Ms', type: 'quantitative', title: 'p99 latency (ms)', scale: { type: 'log' } } },
        },
        {
          mark: { type: 'rule', strokeDash: [4, 4], color: '#555' },
          encoding: { y: { aggregate: 'max', field: 'qosMs', type: 'quantitative' } },
        },
      ],
    },
    resolve: { scale: { x: 'independent', y: 'independent' } },
  } as TopLevelSpec;
}
