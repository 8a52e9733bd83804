/**
 * `veltair report`: one self-contained HTML page about a bundle — model, target, tuning cost,
 * versions per layer (figure and table), the layer table and every layer's Pareto figure, inline.
 * Deterministic: the same bundle gives the same bytes (no timestamps, no absolute paths).
 */
import type { Manifest } from '../bundle/manifest.js';
import { readBundleProfiles, type BundleProfiles } from '../bundle/candidates-file.js';
import { readBundle, type LoadedBundle } from '../bundle/read.js';
import { el, htmlDocument, section, type Html } from './report-html.js';
import { layerFiguresHtml, modelFigureHtml, sparseFigureHtml, type LayerFigureProgress } from './report-figures.js';
import type { HeadMeta } from '../sparse-head/format.js';
import { layerTable, versionsTable } from './report-layers.js';
import { modelSection, targetSection, tuningCostSection } from './report-summary.js';

/**
 * Every CPU flag: a report reads the bundle's numbers and runs none of its kernels, so a bundle
 * built for another machine is reported like any other (the sizes and hashes are still checked).
 */
class EveryFlag extends Set<string> {
  override has(): boolean {
    return true;
  }
}

/** The bundle (checked as the runtime checks it, except the ISA) and its candidate profiles. */
export async function readReportBundle(dir: string): Promise<{ bundle: LoadedBundle; profiles: BundleProfiles | undefined }> {
  const bundle = await readBundle(dir, { cpuFlags: new EveryFlag() });
  return { bundle, profiles: readBundleProfiles(bundle) };
}

export interface Report {
  readonly html: string;
  /** Rows of the layer table (every layer of the model). */
  readonly layers: number;
  /** Inline SVG figures (the model figure and one per tunable workload). */
  readonly figures: number;
}

const NAV: readonly (readonly [string, string])[] = [
  ['model', 'Model'],
  ['target', 'Target'],
  ['tuning-cost', 'Tuning cost'],
  ['versions', 'Versions per layer'],
  ['layers', 'Layers'],
  ['figures', 'Layer figures'],
];

function header(m: Manifest, sparse: boolean): Html {
  const nav = sparse ? [...NAV, ['sparse', 'Sparse output layer'] as const] : NAV;
  return el(
    'header',
    {},
    el('h1', {}, `veltair report: ${m.model.path}`),
    el(
      'p',
      { class: 'sub' },
      `Pareto kernel families of ${m.layers.filter((l) => l.tunable).length} tunable layers, tuned on ${m.target.spec.cpuModel} ` +
        `(${m.target.spec.cores} cores) at interference levels ${m.options.levels.join(', ')}. Level 0 is a quiet machine; 1–4 run a calibrated ` +
        'co-runner of increasing L3 and memory-bandwidth pressure on the other cores.',
    ),
    el(
      'nav',
      {},
      el(
        'ol',
        {},
        nav.map(([id, title]) => el('li', {}, el('a', { href: `#${id}` }, title))),
      ),
    ),
  );
}

/** `sparse`: the bundle's sparse output layer (sparse/head.json), when it has one: one more section and figure. */
export async function buildReport(
  m: Manifest,
  profiles: BundleProfiles | undefined,
  onProgress?: LayerFigureProgress,
  sparse?: HeadMeta,
): Promise<Report> {
  const model = await modelFigureHtml(m);
  const figures = await layerFiguresHtml(m, profiles, onProgress);
  const sparseFigure = sparse ? await sparseFigureHtml(sparse) : undefined;
  const html = htmlDocument(
    `veltair report: ${m.model.path}`,
    header(m, sparse !== undefined),
    modelSection(m),
    targetSection(m),
    tuningCostSection(m, profiles),
    section('versions', 'Versions per layer', model.html, versionsTable(m)),
    section(
      'layers',
      'Layers',
      el(
        'p',
        { class: 'sub' },
        'Best latency: the fastest candidate measured at that level. Regret: how much slower the fastest kept ' +
          'version is than that at the same level (0 = the family holds the best). Untuned layers run fixed kernels.',
      ),
      layerTable(m),
    ),
    section(
      'figures',
      'Layer figures',
      el(
        'p',
        { class: 'sub' },
        'For each tunable workload: every measured candidate in the parallelism–locality plane with the kept ' +
          'family highlighted, and the kept versions\u2019 latency against the interference level with the oracle envelope.',
      ),
      figures.length ? figures.map((f) => f.html) : el('p', { class: 'muted' }, 'No tunable layer has kept versions to plot.'),
    ),
    ...(sparseFigure ? [section('sparse', 'Sparse output layer', sparseFigure.html)] : []),
  );
  return { html, layers: m.layers.length, figures: 1 + figures.length + (sparseFigure ? 1 : 0) };
}
