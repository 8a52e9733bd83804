/**
 * `veltair simulate --plot DIR`: the scheduler's figures as SVG, each with the rows behind it as
 * JSON, written atomically into DIR (existing files of the same names are replaced):
 *  - qos-vs-load.svg: QoS satisfaction vs load per policy (needs two or more loads);
 *  - best-block-vs-load.svg: the best static:K per load (needs static policies and two loads);
 *  - blocks-<model>.svg: the blocks veltair cut the model into at the lightest and heaviest load.
 * Returns the paths written.
 */
import { join } from 'node:path';
import { commitFiles, discardFiles, stageFile, type StagedFile } from '../plot/output-file.js';
import { bestBlockFigure, blocksFigure, satisfactionFigure, type BlockRow } from '../plot/schedule-specs.js';
import type { ExperimentResult, PointResult } from './experiment.js';
import { bestStaticPerLoad } from './report.js';
import type { Setup } from './setup.js';

const safeName = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80) || 'model';

export async function writeSchedulePlots(dir: string, r: ExperimentResult, setup: Setup, label: string): Promise<string[]> {
  const { renderSvg } = await import('../plot/render.js');
  const figures: { name: string; spec: Parameters<typeof renderSvg>[0]; rows: unknown }[] = [];
  const loads = [...new Set(r.points.map((p) => p.load))].sort((a, b) => a - b);
  if (loads.length >= 2) {
    const rows = r.points
      .filter((p) => !p.policy.startsWith('static:') || r.points.every((q) => q.policy.startsWith('static:')))
      .map((p) => ({ policy: p.policy, load: p.load, qps: p.qps, satisfaction: p.metrics.satisfaction }));
    figures.push({ name: 'qos-vs-load', spec: satisfactionFigure(rows, label), rows });
    const best = bestStaticPerLoad(r.points).map((b) => ({ load: b.load, qps: b.qps, k: b.k }));
    if (best.length >= 2) figures.push({ name: 'best-block-vs-load', spec: bestBlockFigure(best, label), rows: best });
  }
  const adaptive = r.points.filter((p) => p.policy === 'veltair' || p.policy === 'veltair-sched');
  const policy = adaptive.some((p) => p.policy === 'veltair') ? 'veltair' : 'veltair-sched';
  const mine = adaptive.filter((p) => p.policy === policy).sort((a, b) => a.load - b.load);
  if (mine.length > 0) {
    const ends: PointResult[] = mine.length === 1 ? [mine[0]!] : [mine[0]!, mine[mine.length - 1]!];
    setup.plans.forEach((plan, m) => {
      const rows: BlockRow[] = ends.flatMap((p, i) =>
        plan.table.units.map((u, layer) => ({
          condition:
            `${i === 0 && ends.length > 1 ? 'light' : ends.length > 1 ? 'heavy' : 'load'}: load ${p.load.toFixed(2)} (${p.qps.toFixed(0)} QPS), ` +
            `${policy}`,
          layer,
          name: u.name,
          requirement: plan.requirement[layer]!,
          blockStart: p.metrics.models[m]!.blockStarts[layer] ?? 0,
        })),
      );
      figures.push({ name: `blocks-${safeName(plan.table.name)}`, spec: blocksFigure(plan.table.name, rows, label), rows });
    });
  }
  const staged: StagedFile[] = [];
  try {
    for (const fig of figures) {
      staged.push(stageFile(join(dir, `${fig.name}.svg`), await renderSvg(fig.spec)));
      staged.push(stageFile(join(dir, `${fig.name}.json`), JSON.stringify({ figure: fig.name, label, rows: fig.rows }, null, 2) + '\n'));
    }
  } catch (e) {
    discardFiles(staged);
    throw e;
  }
  commitFiles(staged);
  return staged.map((s) => s.path);
}
