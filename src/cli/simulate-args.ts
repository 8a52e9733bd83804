/** Flag parsing shared by `veltair simulate` and `veltair profile`: one clear error per bad value. */
import { quoteForMessage, userError } from '../errors.js';

export function parseCount(flag: string, text: string, min: number, max: number): number {
  const t = text.trim();
  if (!/^\d+$/.test(t) || Number(t) < min || Number(t) > max) {
    throw userError(
      'BAD_ARGUMENT',
      `${flag} ${quoteForMessage(text)} is not an integer from ${min} to ${max}`,
      `e.g. ${flag} ${Math.max(min, Math.min(max, 64))}`,
    );
  }
  return Number(t);
}

export function parsePositiveNumber(flag: string, text: string, max = Number.MAX_VALUE): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n) || !(n > 0) || n > max) {
    throw userError(
      'BAD_ARGUMENT',
      `${flag} ${quoteForMessage(text)} is not a positive number${max < Number.MAX_VALUE ? ` up to ${max}` : ''}`,
      `e.g. ${flag} 1`,
    );
  }
  return n;
}

export function parseNonNegative(flag: string, text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw userError('BAD_ARGUMENT', `${flag} ${quoteForMessage(text)} is not a non-negative number`, `e.g. ${flag} 0`);
  }
  return n;
}

export function parseNumberList(flag: string, text: string, max = Number.MAX_VALUE): number[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length === 0) throw userError('BAD_ARGUMENT', `${flag} is empty`, `e.g. ${flag} 0.25,0.5,0.75`);
  return parts.map((p) => parsePositiveNumber(flag, p, max));
}

/** NAME=VALUE pairs (repeatable flag), each value checked by `value`. */
export function parsePairs<T>(flag: string, values: readonly string[] | undefined, value: (text: string) => T): Map<string, T> {
  const out = new Map<string, T>();
  for (const v of values ?? []) {
    const eq = v.indexOf('=');
    if (eq <= 0 || eq === v.length - 1)
      throw userError('BAD_ARGUMENT', `${flag} ${quoteForMessage(v)} is not NAME=VALUE`, `e.g. ${flag} resnet50=15`);
    const name = v.slice(0, eq).trim();
    if (out.has(name)) throw userError('BAD_ARGUMENT', `${flag} gives ${quoteForMessage(name)} twice`, 'give each model once');
    out.set(name, value(v.slice(eq + 1)));
  }
  return out;
}

export const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

export function parseList(flag: string, text: string): string[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length === 0) throw userError('BAD_ARGUMENT', `${flag} is empty`, `e.g. ${flag} a,b`);
  return parts;
}
