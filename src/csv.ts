/**
 * CSV cells, one rule for every CSV veltair writes (`veltair db export --format csv`,
 * `veltair plot --data FILE.csv`). RFC 4180: a field holding a comma, quote, CR or LF is quoted and
 * its quotes doubled. OWASP's CSV-injection rule: a text cell that starts with `=`, `+`, `-`, `@`,
 * a tab or a carriage return would be run as a formula by a spreadsheet (model-supplied node names
 * and error messages reach these files), so it gets a leading `'`, which spreadsheets show as
 * text and do not evaluate. Numbers are written as numbers (a negative number is not a formula).
 */
export type CsvValue = string | number | boolean | null | undefined;

const FORMULA_START = /^[=+\-@\t\r]/;

export function csvField(v: CsvValue): string {
  if (v === null || v === undefined) return '';
  let s = String(v);
  if (typeof v === 'string' && FORMULA_START.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}
