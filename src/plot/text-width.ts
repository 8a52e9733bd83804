/**
 * Text widths for vega's layout in Node, where it has no canvas to measure with and would guess
 * 0.8 em per character (far too wide: titles then push panels apart and legends get cut). These
 * are DejaVu Sans's advance widths (em) for printable ASCII, read from the font's hmtx table, the
 * family the figures name first and the PNG renderer uses.
 */

/** Advance widths (em) of ' ' (32) … '~' (126), DejaVu Sans Book. */
const REGULAR = [
  0.318, 0.401, 0.46, 0.838, 0.636, 0.95, 0.78, 0.275, 0.39, 0.39, 0.5, 0.838, 0.318, 0.361, 0.318, 0.337, 0.636, 0.636, 0.636, 0.636,
  0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.337, 0.337, 0.838, 0.838, 0.838, 0.531, 1.0, 0.684, 0.686, 0.698, 0.77, 0.632, 0.575, 0.775,
  0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787, 0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.39,
  0.337, 0.39, 0.838, 0.5, 0.5, 0.613, 0.635, 0.55, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612,
  0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337, 0.636, 0.838,
];
/** The same for DejaVu Sans Bold. */
const BOLD = [
  0.348, 0.456, 0.521, 0.838, 0.696, 1.002, 0.872, 0.306, 0.457, 0.457, 0.523, 0.838, 0.38, 0.415, 0.38, 0.365, 0.696, 0.696, 0.696, 0.696,
  0.696, 0.696, 0.696, 0.696, 0.696, 0.696, 0.4, 0.4, 0.838, 0.838, 0.838, 0.58, 1.0, 0.774, 0.762, 0.734, 0.83, 0.683, 0.683, 0.821, 0.837,
  0.372, 0.372, 0.775, 0.637, 0.995, 0.837, 0.85, 0.733, 0.85, 0.77, 0.72, 0.682, 0.812, 0.774, 1.103, 0.771, 0.724, 0.725, 0.457, 0.365,
  0.457, 0.838, 0.5, 0.5, 0.675, 0.716, 0.593, 0.716, 0.678, 0.435, 0.716, 0.712, 0.343, 0.343, 0.665, 0.343, 1.042, 0.712, 0.687, 0.716,
  0.716, 0.493, 0.595, 0.478, 0.712, 0.652, 0.924, 0.645, 0.652, 0.582, 0.712, 0.365, 0.712, 0.838,
];
/** Symbols the figures use (same advance in both weights but '·'). */
const SYMBOLS: Readonly<Record<string, number>> = { '→': 0.838, '…': 1, '·': 0.318, '×': 0.838, '–': 0.5, '—': 1, '≤': 0.838, '≥': 0.838 };
/** Anything else: roughly a wide Latin letter. */
const OTHER_EM = 0.75;

export function textWidthPx(text: string, fontSizePx: number, bold = false): number {
  const table = bold ? BOLD : REGULAR;
  let em = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    em += code >= 32 && code <= 126 ? table[code - 32]! : (SYMBOLS[ch] ?? OTHER_EM);
  }
  return em * fontSizePx;
}

/** vega's textMetrics.width signature: the scenegraph item (font props) and one line of text. */
export function vegaTextWidth(item: { text?: unknown; fontSize?: unknown; fontWeight?: unknown }, text?: unknown): number {
  const value = text ?? item.text;
  const line = Array.isArray(value) ? value.join(' ') : value == null ? '' : String(value);
  const size = typeof item.fontSize === 'number' ? item.fontSize : 11;
  const weight = item.fontWeight;
  const bold =
    weight === 'bold' ||
    weight === 'bolder' ||
    (typeof weight === 'number' && weight >= 600) ||
    (typeof weight === 'string' && Number(weight) >= 600);
  return textWidthPx(line, size, bold);
}
