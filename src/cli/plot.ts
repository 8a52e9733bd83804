/**
 * `veltair plot BUNDLE [--layer ID] -o FILE.svg|FILE.png [--data FILE.csv|FILE.json] [--force] [--json]`
 * With --layer: that layer's candidates in the locality–parallelism plane and its versions' latency
 * per interference level. Without: kept versions per layer and adaptive vs fixed latency per level.
 * The bundle is read and hash-checked like any other reader does, except the CPU check: plotting
 * runs no kernel, so a bundle can be plotted on any machine.
 */
import type { Command } from 'commander';
import { readBundle } from '../bundle/read.js';
import { readBundleProfiles } from '../bundle/candidates-file.js';
import { userError } from '../errors.js';
import { figureDataCsv, figureDataJson, layerFigureData, modelFigureData } from '../plot/figure-data.js';
import { resolveLayer } from '../plot/layer-id.js';
import { commitFiles, discardFiles, planOutput, stageFile, type StagedFile } from '../plot/output-file.js';
import { layerFigure, modelFigure } from '../plot/specs.js';
import { sparseFigureData, sparseFrontierFigure } from '../plot/sparse-frontier.js';
import { readHeadMeta } from '../sparse-head/format.js';
import { hasSparseHead } from '../runtime/sparse-head.js';
import { printJson, printLine } from '../terminal/output.js';

interface PlotFlags {
  layer?: string;
  sparse?: boolean;
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
    throw userError(
      'BAD_ARGUMENT',
      'veltair plot needs -o FILE.svg or -o FILE.png (the figure to write)',
      'e.g. veltair plot model.bundle --layer 0 -o layer0.svg',
    );
  }
  const force = f.force === true;
  const figure = planOutput('-o', f.output, ['svg', 'png'] as const, force);
  const data = f.data === undefined ? undefined : planOutput('--data', f.data, ['csv', 'json'] as const, force);

  const bundle = await readBundle(bundlePath, { cpuFlags: ANY_CPU });
  const m = bundle.manifest;
  const profiles = readBundleProfiles(bundle);
  if (f.sparse && f.layer !== undefined)
    throw userError('BAD_ARGUMENT', '--sparse and --layer are two different figures', 'pass one of them');
  if (f.sparse && !hasSparseHead(m.files)) {
    throw userError(
      'BAD_ARGUMENT',
      `${bundlePath} has no sparse output layer`,
      'veltair compile gives a dense output layer of ≥ 10000 outputs a sparse family',
    );
  }
  const head = f.sparse ? await readHeadMeta(bundle.paths.dir) : undefined;
  const layer = f.layer === undefined ? undefined : resolveLayer(m, f.layer);

  const spec = head ? sparseFrontierFigure(head) : layer ? layerFigure(m, profiles, layer.index) : modelFigure(m);
  const rows = head ? sparseFigureData(head) : layer ? layerFigureData(m, profiles, layer.index) : modelFigureData(m);
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
    points: head ? head.versions.length : layer ? rows.panels['candidates']!.length : versionsPanel.length,
    versions: head
      ? head.versions.filter((v) => v.kept).length
      : layer
        ? layer.versions.length
        : versionsPanel.reduce((s, r) => s + Number(r['versions']), 0),
  };
  if (f.json) printJson(summary);
  else {
    const what = head
      ? `sparse output layer ${head.layer.name}: ${summary.points} measured versions, ${summary.versions} kept`
      : layer
        ? `layer ${layer.index} (${layer.op}): ${summary.points} candidate points, ${summary.versions} kept versions`
        : `model: ${summary.points} tunable layers, ${summary.versions} kept versions`;
    printLine(`wrote ${figure.path}${data ? ` and ${data.path}` : ''} (${what})`);
  }
}

export function registerPlotCommand(program: Command): void {
  program
    .command('plot')
    .description("draw a layer's Pareto family (--layer) or the model's versions and adaptive-vs-fixed latency, as SVG or PNG")
    .argument('<bundle>', 'bundle directory written by veltair compile')
    .option('--layer <id>', 'layer index (as veltair inspect prints it) or exact layer name; omit for the model figure')
    .option('--sparse', "the recall–latency frontier of the bundle's sparse output layer, kept versions marked")
    .option('-o, --output <file>', 'figure to write: .svg or .png (the format follows the extension)')
    .option('--data <file>', 'also write the rows behind the figure: .csv or .json')
    .option('--force', 'replace existing output files')
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(plotAction);
}
