/**
 * Text that reaches a figure from the model (node names, the model file's name): vega escapes
 * markup itself, but XML also forbids control characters, lone surrogates and U+FFFE/U+FFFF, which
 * an ONNX string may carry and which would make the SVG unparsable. So such characters become
 * U+FFFD, and long names are cut so a title stays on the page.
 */

// eslint-disable-next-line no-control-regex -- these are exactly the characters XML forbids
const XML_INVALID = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]/g;
const LINE_BREAKS = /[\t\n\r\u2028\u2029]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function figureText(s: string, max = 60): string {
  const clean = s.replace(LONE_SURROGATE, '\ufffd').replace(LINE_BREAKS, ' ').replace(XML_INVALID, '\ufffd');
  const chars = [...clean];
  return chars.length > max ? chars.slice(0, max).join('') + '…' : clean;
}

/** "1x64x56x56" */
export const shapeText = (dims: readonly number[]): string => dims.join('x') || 'scalar';

/** Bytes as KiB with a sensible number of digits. */
export function kibText(bytes: number): string {
  const kib = bytes / 1024;
  return kib >= 100 ? `${Math.round(kib)} KiB` : kib >= 10 ? `${kib.toFixed(1)} KiB` : `${kib.toFixed(2)} KiB`;
}
