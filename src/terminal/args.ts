/** Command-line values every command parses the same way, with the same one-line errors. */
import { userError, type VeltairError } from '../errors.js';

export function badArgument(flag: string, text: string, why: string, hint: string): VeltairError {
  return userError('BAD_ARGUMENT', `${flag} ${JSON.stringify(text.slice(0, 80))} ${why}`, hint);
}

export function parsePositiveInt(flag: string, text: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1 || Number(text) > max) {
    throw badArgument(
      flag,
      text,
      max === Number.MAX_SAFE_INTEGER ? 'is not a positive integer' : `is not an integer from 1 to ${max}`,
      flag === '--trials' ? 'give at least 1 trial per workload, e.g. --trials 32' : `e.g. ${flag} ${Math.min(max, 4)}`,
    );
  }
  return Number(text);
}
