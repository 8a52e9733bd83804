/**
 * Vega-Lite spec → SVG (vega's headless renderer, no browser, no canvas) → PNG (resvg, which
 * rasterises SVG in Rust without a browser). Vega's warnings go to stderr, never stdout.
 */
import { execFileSync } from 'node:child_process';
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { vegaTextWidth } from './text-width.js';

/** vega lays out text with this (its typings omit it); ours knows the font instead of guessing. */
const metrics = (vega as unknown as { textMetrics: { width: (item: object, text?: unknown) => number } }).textMetrics;
metrics.width = vegaTextWidth;

/** The spec as an SVG document (text is escaped by vega; sizes in px). */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const compiled = compile(spec, { logger: stderrLogger() }).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none', logger: stderrLogger() });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** vega's logger interface, writing warnings and errors to stderr only. */
function stderrLogger(): vega.LoggerInterface {
  let level = vega.Warn;
  const write =
    (min: number, kind: string) =>
    (...args: readonly unknown[]) => {
      if (level >= min) process.stderr.write(`${kind}: ${args.map(String).join(' ')}\n`);
      return logger;
    };
  const logger: vega.LoggerInterface = {
    level(l?: number) {
      if (l === undefined) return level;
      level = l;
      return logger;
    },
    error: write(vega.Error, 'plot error'),
    warn: write(vega.Warn, 'plot warning'),
    info: write(vega.Info, 'plot info'),
    debug: write(vega.Debug, 'plot debug'),
  } as vega.LoggerInterface;
  return logger;
}

let fontFamily: string | undefined;

/**
 * The family resvg falls back to: DejaVu Sans when fontconfig knows it (a bare Debian has it), else
 * whatever sans family it lists first. Looked up once.
 */
function defaultFontFamily(): string {
  if (fontFamily !== undefined) return fontFamily;
  let families: string[] = [];
  try {
    families = execFileSync('fc-list', [':', 'family'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\n')
      .flatMap((l) => l.split(','))
      .map((s) => s.trim())
      .filter(Boolean);
  } catch {
    /* no fontconfig: let resvg pick */
  }
  fontFamily = families.includes('DejaVu Sans') ? 'DejaVu Sans' : (families.find((f) => /sans/i.test(f)) ?? families[0] ?? 'DejaVu Sans');
  return fontFamily;
}

/** The SVG rasterised at `scale` × its own size (2 = print quality for a 7-inch-wide figure). */
export function renderPng(svg: string, scale = 2): Buffer {
  const resvg = new Resvg(svg, {
    fitTo: { mode: 'zoom', value: scale },
    background: 'white',
    font: { loadSystemFonts: true, defaultFontFamily: defaultFontFamily(), sansSerifFamily: defaultFontFamily() },
  });
  return resvg.render().asPng();
}
