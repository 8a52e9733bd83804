/**
 * `veltair load URL [URL…] --qps-sweep FROM:TO:STEPS [--labels A,B…] [--plot PREFIX] [--json]`:
 * each server in turn (all at the first server's QoS, as `--find-max` compares them) takes the
 * sweep's rates (src/load/sweep.ts); per server, model and step: offered and achieved QPS,
 * QoS attainment and p99. `--plot` draws attainment and p99 against offered load, one curve per
 * server (src/plot/serving.ts), as SVG and PNG, written atomically.
 */
import { readFileSync } from 'node:fs';
import { quoteForMessage, userError } from '../errors.js';
import { loopbackUrl, type LoadModel } from '../load/generator.js';
import { parseSweep, runSweep, sweepPoints, sweepRates, type SweepPoint } from '../load/sweep.js';
import { commitFiles, discardFiles, planOutput, stageFile, type StagedFile } from '../plot/output-file.js';
import { renderPng, renderSvg } from '../plot/render.js';
import { attainmentFigure, p99Figure, type ServingArm } from '../plot/serving.js';
import { parsePositiveInt } from '../terminal/args.js';
import { formatTable, note, printJson, printLine } from '../terminal/output.js';
import type { LoadFlags } from './load-models.js';

type LoadModels = (base: URL, flags: LoadFlags, seed: number) => Promise<LoadModel[]>;

export interface SweepArm {
  readonly label: string;
  readonly url: string;
  readonly points: SweepPoint[];
}

function labelsFor(flags: LoadFlags, bases: readonly URL[]): string[] {
  if (flags.labels === undefined) return bases.map((b) => b.host);
  const labels = flags.labels.split(',').map((l) => l.trim());
  if (labels.length !== bases.length || labels.some((l) => !/^[A-Za-z0-9][A-Za-z0-9_.:#+-]{0,63}$/.test(l))) {
    throw userError(
      'BAD_ARGUMENT',
      `--labels ${JSON.stringify(flags.labels.slice(0, 80))}: ` +
        `give one label per server (${bases.length}), letters, digits and _ . : # + -`,
      'e.g. --labels ort,veltair',
    );
  }
  return labels;
}

type Figures = ReturnType<typeof planFigures>;

/** PREFIX-attainment and PREFIX-p99, .svg and .png, checked before any work. */
function planFigures(flags: LoadFlags) {
  return (['attainment', 'p99'] as const).flatMap((f) =>
    (['svg', 'png'] as const).map((ext) => planOutput('--plot', `${flags.plot}-${f}.${ext}`, [ext], flags.force === true, 'veltair load')),
  );
}

async function writeFigures(plot: Figures, arms: readonly ServingArm[], title: string): Promise<void> {
  const staged: StagedFile[] = [];
  try {
    for (const [f, spec] of [
      ['attainment', attainmentFigure(arms, title)],
      ['p99', p99Figure(arms, title)],
    ] as const) {
      const svg = await renderSvg(spec);
      staged.push(stageFile(plot.find((p) => p.path.endsWith(`-${f}.svg`))!.path, svg));
      staged.push(stageFile(plot.find((p) => p.path.endsWith(`-${f}.png`))!.path, renderPng(svg)));
    }
  } catch (e) {
    discardFiles(staged);
    throw e;
  }
  commitFiles(staged);
}

/** `--plot-from FILE --plot PREFIX`: the figures of a saved sweep (this command's --json, or serve-bench --sweep). */
export async function plotFromAction(urlTexts: readonly string[], flags: LoadFlags): Promise<void> {
  if (urlTexts.length > 0 || flags.plot === undefined) {
    throw userError(
      'BAD_ARGUMENT',
      '--plot-from draws a saved sweep: give --plot PREFIX and no server URL',
      'e.g. veltair load --plot-from sweep.json --plot figs/het1',
    );
  }
  const plot = planFigures(flags);
  const file = quoteForMessage(flags.plotFrom!);
  const hint = 'save one with veltair load … --qps-sweep … --json > FILE';
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(flags.plotFrom!, 'utf8'));
  } catch (e) {
    throw userError(
      'BAD_ARGUMENT',
      `--plot-from ${file} ${(e as { code?: string }).code === 'ENOENT' ? 'does not exist' : 'is not JSON'}`,
      hint,
    );
  }
  const arms = (parsed as { arms?: unknown } | null)?.arms;
  if (!Array.isArray(arms) || arms.length === 0 || !arms.every(isSweepArm)) {
    throw userError(
      'BAD_ARGUMENT',
      `--plot-from ${file} is not a saved sweep (arms: [{ label, points: [{ offeredQps, model, attainment, p99Ms, qosMs }] }])`,
      hint,
    );
  }
  const sweepArms = arms as ServingArm[];
  const mix = (parsed as { mix?: unknown }).mix;
  const models = [...new Set(sweepArms.flatMap((a) => a.points.map((p) => p.model)))].join(' + ');
  await writeFigures(plot, sweepArms, typeof mix === 'string' ? `${mix} (${models})` : models);
  printLine(`figures: ${plot.map((p) => p.path).join(', ')}`);
}

function isSweepArm(a: unknown): boolean {
  const arm = a as { label?: unknown; points?: unknown } | null;
  return (
    typeof arm === 'object' &&
    arm !== null &&
    typeof arm.label === 'string' &&
    Array.isArray(arm.points) &&
    arm.points.every((p: unknown) => {
      const q = p as Record<string, unknown> | null;
      return (
        typeof q === 'object' &&
        q !== null &&
        typeof q['model'] === 'string' &&
        (q['p99Ms'] === null || typeof q['p99Ms'] === 'number') &&
        ['offeredQps', 'attainment', 'qosMs'].every((k) => typeof q[k] === 'number')
      );
    })
  );
}

export async function sweepAction(urlTexts: readonly string[], flags: LoadFlags, loadModels: LoadModels): Promise<void> {
  if (flags.findMax || flags.qps !== undefined)
    throw userError('BAD_ARGUMENT', '--qps-sweep goes alone, without --qps or --find-max', 'e.g. --qps-sweep 5:50:10');
  const spec = parseSweep(flags.qpsSweep!);
  const bases = urlTexts.map((u) => loopbackUrl(u));
  const labels = labelsFor(flags, bases);
  const durationS = parsePositiveInt('--duration', flags.duration, 3600);
  const seed = parsePositiveInt('--seed', flags.seed);
  const plot = flags.plot === undefined ? undefined : planFigures(flags);
  const first = await loadModels(bases[0]!, flags, seed);
  const sameQos = { ...flags, qos: first.map((m) => `${m.name}=${m.qosMs.toFixed(3)}`) };
  const arms: SweepArm[] = [];
  for (const [i, base] of bases.entries()) {
    const models = i === 0 ? first : await loadModels(base, sameQos, seed);
    const runs = await runSweep(base, models, spec, durationS, seed, (r) => {
      if (!flags.json) note(`${labels[i]}: ${r.totalQps.toFixed(2)} QPS offered, worst within-QoS ${(r.satisfaction * 100).toFixed(1)}%`);
    });
    arms.push({ label: labels[i]!, url: base.origin, points: sweepPoints(runs) });
  }
  if (plot) await writeFigures(plot, arms, first.map((m) => m.name).join(' + '));
  const qosMs = Object.fromEntries(first.map((m) => [m.name, m.qosMs]));
  if (flags.json) {
    printJson({
      sweep: { ...spec, rates: sweepRates(spec) },
      durationS,
      seed,
      qosMs,
      arms,
      ...(plot ? { figures: plot.map((p) => p.path) } : {}),
    });
    return;
  }
  printLine(
    `QoS (the first server's): ${first.map((m) => `${m.name} ${m.qosMs.toFixed(1)} ms`).join(', ')}; one ${durationS} s run per step`,
  );
  printLine(
    formatTable(
      [
        ['arm', 'offered QPS', 'model', 'achieved QPS', 'within QoS', 'p99 ms'],
        ...arms.flatMap((a) =>
          a.points.map((p) => [
            a.label,
            p.offeredQps.toFixed(2),
            p.model,
            p.achievedQps.toFixed(2),
            `${(p.attainment * 100).toFixed(1)}%`,
            p.p99Ms === null ? '-' : p.p99Ms.toFixed(2),
          ]),
        ),
      ],
      new Set([1, 3, 4, 5]),
    ),
  );
  if (plot) printLine(`figures: ${plot.map((p) => p.path).join(', ')}`);
}
