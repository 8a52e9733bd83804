/**
 * The report's figures: the model figure and one figure per tunable workload (layers that compute
 * the same workload have the same family and profiles, so they share it; each layer's table row
 * links to it and its caption links back to every layer). The SVGs come from the plot specs and
 * are inlined; vega numbers its clip paths and gradients per process, and ids are global in an HTML
 * document, so every id in a figure is prefixed with that figure's anchor.
 */
import type { Manifest, ManifestLayer } from '../bundle/manifest.js';
import type { BundleProfiles } from '../bundle/candidates-file.js';
import { layerFigure, modelFigure } from './specs.js';
import { sparseFrontierFigure } from './sparse-frontier.js';
import type { HeadMeta } from '../sparse-head/format.js';
import type { TopLevelSpec } from 'vega-lite';
import { renderSvg } from './render.js';
import { el, raw, type Content, type Html } from './report-html.js';
import { workloadLayers } from './report-cost.js';
import { figureId, layerId, plottable } from './report-layers.js';
import { shapeText } from './report-summary.js';

const TAG = /<[^>]*>/g;

/**
 * `svg` with every `id="x"` and every reference to it (`url(#x)`, `href="#x"`) renamed `prefix-x`.
 * Only markup is rewritten: vega escapes `<`, `>` in text and attribute values, so a tag never
 * holds a raw `>` and text (a layer name) is left as it is.
 */
export function scopeSvgIds(svg: string, prefix: string): string {
  return svg.replace(TAG, (tag) =>
    tag
      .replace(/(\sid=")([^"]*")/g, `$1${prefix}-$2`)
      .replace(/url\(#([^)]*)\)/g, `url(#${prefix}-$1)`)
      .replace(/(\s(?:xlink:)?href=")#([^"]*")/g, `$1#${prefix}-$2`),
  );
}

export interface Figure {
  readonly id: string;
  readonly html: Html;
}

/** The SVG inline, without its XML declaration (not allowed inside HTML). */
function inline(svg: string, id: string): Html {
  return raw(scopeSvgIds(svg.replace(/^\s*<\?xml[^>]*\?>\s*/, ''), id));
}

/** A figure of its own: the plot rendered and inlined under an anchor, with a caption above it. */
async function captionedFigure(id: string, spec: TopLevelSpec, ...captionContent: Content[]): Promise<Figure> {
  const svg = await renderSvg(spec);
  return { id, html: el('figure', { id }, el('figcaption', {}, ...captionContent), inline(svg, id)) };
}

export function modelFigureHtml(m: Manifest): Promise<Figure> {
  return captionedFigure(
    'fig-model',
    modelFigure(m),
    'Versions kept per tunable layer along the network, and per interference level the sum of the layers\u2019 ' +
      'profiled latencies when each layer runs its best kept version for that level (adaptive) or its best quiet version (fixed).',
  );
}

const layerRef = (l: ManifestLayer): Content => [
  el('a', { href: `#${layerId(l.index)}` }, `layer ${l.index}`),
  ' ',
  el('code', {}, l.name),
];

function caption(layers: readonly ManifestLayer[], workload: string, profiles: BundleProfiles | undefined): Html {
  const first = layers[0]!;
  const measured = profiles?.workloads.find((w) => w.workload === workload)?.candidates.length;
  const who: Content =
    layers.length === 1
      ? layerRef(first)
      : [`${layers.length} layers share this workload: `, layers.flatMap((l, i) => [i === 0 ? '' : ', ', layerRef(l)])];
  return el(
    'figcaption',
    {},
    el('strong', {}, who),
    raw('<br>'),
    el(
      'span',
      { class: 'muted' },
      `${first.op}, output ${shapeText(first.outputShape)}, workload `,
      el('code', {}, workload),
      `: ${first.versions.length} kept version${first.versions.length === 1 ? '' : 's'}` +
        (measured === undefined ? '' : ` of ${measured} measured candidates`) +
        '.',
    ),
  );
}

export interface LayerFigureProgress {
  (done: number, total: number): void;
}

/** One figure per plottable workload, in model order. */
export async function layerFiguresHtml(
  m: Manifest,
  profiles: BundleProfiles | undefined,
  onProgress: LayerFigureProgress = () => {},
): Promise<Figure[]> {
  const byIndex = new Map(m.layers.map((l) => [l.index, l]));
  const groups = [...workloadLayers(m)]
    .map(([workload, indices]) => ({ workload, layers: indices.map((i) => byIndex.get(i)!).filter(plottable) }))
    .filter((g) => g.layers.length > 0);
  const out: Figure[] = [];
  for (const [i, g] of groups.entries()) {
    onProgress(i, groups.length);
    const id = figureId(g.workload);
    const svg = await renderSvg(layerFigure(m, profiles, g.layers[0]!.index));
    out.push({ id, html: el('figure', { id }, caption(g.layers, g.workload, profiles), inline(svg, id)) });
  }
  onProgress(groups.length, groups.length);
  return out;
}

/** The sparse output layer's recall–latency frontier (sparse-frontier.ts). */
export function sparseFigureHtml(meta: HeadMeta): Promise<Figure> {
  return captionedFigure(
    'fig-sparse',
    sparseFrontierFigure(meta),
    'Output layer ',
    el('code', {}, meta.layer.name),
    `: ${meta.layer.n} classes compiled into versions at sparsities ${meta.versions.map((v) => v.sparsity).join(', ')}; ` +
      'each measured for quiet latency and recall against dense; the kept family outlined.',
  );
}
