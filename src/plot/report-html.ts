/**
 * The HTML building blocks of `veltair report`: one escaping function every model-supplied string
 * goes through, small element helpers that apply it, a table builder, the stylesheet and the
 * document shell. The page is self-contained: no script, no external font, stylesheet or image,
 * and a Content-Security-Policy that forbids loading anything, so a report opened from a mail or
 * an artifact store never reaches the network (and an escaping slip could not run a script).
 */

/** Text or an attribute value made inert for HTML: & < > " ' become character references. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Markup that is already safe (built by these helpers or escaped), as opposed to plain text. */
export interface Html {
  readonly html: string;
}

export const raw = (html: string): Html => ({ html });
const isHtml = (x: unknown): x is Html => typeof x === 'object' && x !== null && 'html' in x;

export type Content = string | number | Html | readonly Content[];

/** Plain strings and numbers are escaped; Html passes through; arrays are concatenated. */
export function render(content: Content): string {
  if (typeof content === 'string') return escapeHtml(content);
  if (typeof content === 'number') return escapeHtml(String(content));
  if (isHtml(content)) return content.html;
  return content.map(render).join('');
}

/** `<tag attr="…">content</tag>` with every attribute value escaped (undefined attributes left out). */
export function el(tag: string, attrs: Readonly<Record<string, string | undefined>>, ...content: Content[]): Html {
  const a = Object.entries(attrs)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${escapeHtml(v!)}"`)
    .join('');
  // A void element has no end tag: `</br>` would parse as a second line break.
  return raw(VOID.has(tag) ? `<${tag}${a}>` : `<${tag}${a}>${render(content)}</${tag}>`);
}

const VOID = new Set(['br', 'hr', 'img', 'meta', 'wbr']);

export interface Column {
  readonly title: Content;
  /** Right-aligned (numbers). */
  readonly numeric?: boolean;
}

/** A table: header cells, then one row per entry; cells are Content (escaped unless Html). */
export function table(
  columns: readonly Column[],
  rows: readonly (readonly Content[])[],
  attrs: Readonly<Record<string, string>> = {},
): Html {
  const cls = (c: Column | undefined) => (c?.numeric ? 'num' : undefined);
  const head = el(
    'tr',
    {},
    columns.map((c) => el('th', { class: cls(c), scope: 'col' }, c.title)),
  );
  const body = rows.map((r) =>
    el(
      'tr',
      {},
      r.map((cell, i) => el('td', { class: cls(columns[i]) }, cell)),
    ),
  );
  return el('table', attrs, el('thead', {}, head), el('tbody', {}, body));
}

/** A two-column key → value table (the summaries). */
export function facts(rows: readonly (readonly [string, Content])[]): Html {
  return el(
    'table',
    { class: 'facts' },
    el(
      'tbody',
      {},
      rows.map(([k, v]) => el('tr', {}, el('th', { scope: 'row' }, k), el('td', {}, v))),
    ),
  );
}

export function section(id: string, title: string, ...content: Content[]): Html {
  return el('section', { id }, el('h2', {}, title), ...content);
}

/** Forbids every fetch and every script; inline styles (ours and the SVGs' attributes) stay allowed. */
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE = `
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1b1f24; background: #fff;
  margin: 0 auto; padding: 24px 32px 64px; max-width: 1240px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 15px; margin: 24px 0 6px; }
p, li { max-width: 80ch; }
.sub { color: #57606a; margin: 0 0 12px; }
nav ol { display: flex; flex-wrap: wrap; gap: 4px 18px; padding: 0; margin: 8px 0 0; list-style: none; }
a { color: #0b57d0; text-decoration: none; }
a:hover { text-decoration: underline; }
code, .mono { font-family: "DejaVu Sans Mono", ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e4e8ec; text-align: left; vertical-align: top; }
thead th { background: #f3f5f7; border-bottom: 1px solid #c5ccd3; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.facts th { font-weight: 600; color: #3b434b; white-space: nowrap; }
table.layers { font-size: 13px; }
table.layers th, table.layers td { padding: 3px 6px; }
table.layers td:nth-child(2) { min-width: 12em; overflow-wrap: anywhere; }
table.layers td:nth-child(4) { white-space: nowrap; }
table.layers .group { border-left: 1px solid #c5ccd3; }
tr.untuned td { color: #6e7781; }
.scroll { overflow-x: auto; }
figure { margin: 16px 0 28px; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 13px; color: #3b434b; margin: 0 0 6px; }
figure:target figcaption { background: #fff5c2; }
details { margin: 6px 0; }
.muted { color: #6e7781; }
`;

/** The whole document. `title` is plain text (escaped here). */
export function htmlDocument(title: string, ...body: Content[]): string {
  return (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(CSP)}">\n` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    '<meta name="generator" content="veltair report">\n' +
    `<title>${escapeHtml(title)}</title>\n<style>${STYLE}</style>\n</head>\n<body>\n${render(body)}\n</body>\n</html>\n`
  );
}
