/**
 * `veltair plot BUNDLE [--layer ID] -o FILE.svg|FILE.png [--data FILE.csv|FILE.json] [--force] [--json]`
 * With --layer: that layer's candidates in the locality–parallelism plane and its versions' latency
 * per interference level. Without: kept versions per layer and adaptive vs fixed latency per level.
 * The bundle is read and hash-checked like any other reader does, except the CPU check: plotting
 * runs no kernel, so a bundle can be plotted on any machine.
 */
import type { Command } from 'commander';
import { readBundle } from '../bundle/read.js';
import { readBundleProfiles } from '../bundle/profiles.js';
import { userError } from '../errors.js';
import { figureDataCsv, figureDataJson, layerFigureData, modelFigureData } from '../plot/figure-data.js';
import { resolveLayer } from '../plot/layer-id.js';
import { commitFiles, discardFiles, planOutput, stageFile, type StagedFile } from '../plot/output-file.js';
import { layerFigure, modelFigure } from '../plot/specs.js';
import { printJson, printLine } from '../terminal/output.js';

interface PlotFlags {
  layer?: string;
  output?: string;
  data?: string;
  force?: boolean;
  json?: boolean;
}

export interface PlotSummary {
  readonly output: string;
  readonly data?: string;
  readonly layer?: { readonly index: number; readonly name: string; readonly op: string };
  /** Layer figure: candidate points drawn; model figure: tunable layers (bars). */
  readonly points: number;
  /** Kept versions in the figure (the layer's, or the whole model's). */
  readonly versions: number;
}

/** Every instruction set "present": the reader's CPU check guards running kernels, not reading numbers. */
const ANY_CPU = { has: () => true } as unknown as ReadonlySet<string>;

async function plotAction(bundlePath: string, f: PlotFlags): Promise<void> {
  if (!f.output) {
    throw userError('BAD_ARGUMENT', 'veltair plot needs -o FILE.svg or -o FILE.png (the figure to write)',
      'e.g. veltair plot model.bundle --layer 0 -o layer0.svg');
  }
  const force = f.force === true;
  const figure = planOutput('-o', f.output, ['svg', 'png'] as const, force);
  const data = f.data === undefined ? undefined : planOutput('--data', f.data, ['csv', 'json'] as const, force);

  const bundle = await readBundle(bundlePath, { cpuFlags: ANY_CPU });
  const m = bundle.manifest;
  const profiles = readBundleProfiles(bundle);
  const layer = f.layer === undefined ? undefined : resolveLayer(m, f.layer);

  const spec = layer ? layerFigure(m, profiles, layer.index) : modelFigure(m);
  const rows = layer ? layerFigureData(m, profiles, layer.index) : modelFigureData(m);
  // vega, vega-lite and resvg load here, not at startup: every other command would pay for them.
  const { renderPng, renderSvg } = await import('../plot/render.js');
  const svg = await renderSvg(spec);
  const staged: StagedFile[] = [];
  try {
    staged.push(stageFile(figure.path, figure.format === 'png' ? renderPng(svg) : svg));
    if (data) staged.push(stageFile(data.path, data.format === 'csv' ? figureDataCsv(rows) : figureDataJson(rows)));
  } catch (e) {
    discardFiles(staged);
    throw e;
  }
  commitFiles(staged);

  const versionsPanel = rows.panels['versionsPerLayer'] ?? [];
  const summary: PlotSummary = {
    output: figure.path,
    ...(data ? { data: data.path } : {}),
    ...(layer ? { layer: { index: layer.index, name: layer.name, op: layer.op } } : {}),
    points: layer ? rows.panels['candidates']!.length : versionsPanel.length,
    versions: layer ? layer.versions.length : versionsPanel.reduce((s, r) => s + Number(r['versions']), 0),
  };
  if (f.json) printJson(summary);
  else {
    const what = layer ? `layer ${layer.index} (${layer.op}): ${summary.points} candidate points, ${summary.versions} kept versions`
      : `model: ${summary.points} tunable layers, ${summary.versions} kept versions`;
    printLine(`wrote ${figure.path}${data ? ` and ${data.path}` : ''} (${what})`);
  }
}

export function registerPlotCommand(program: Command): void {
  program
    .command('plot')
    .description('draw a layer\'s Pareto family (--layer) or the model\'s versions and adaptive-vs-fixed latency, as SVG or PNG')
    .argument('<bundle>', 'bundle directory written by veltair compile')
    .option('--layer <id>', 'layer index (as veltair inspect prints it) or exact layer name; omit for the model figure')
    .option('-o, --output <file>', 'figure to write: .svg or .png (the format follows the extension)')
    .option('--data <file>', 'also write the rows behind the figure: .csv or .json')
    .option('--force', 'replace existing output files')
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(plotAction);
}
