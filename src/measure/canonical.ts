/**
 * The canonical form of a kernel translation unit: what it compiles to, whatever symbol it was
 * asked for under. A symbol hashes the whole schedule, threads included, but the generated C does
 * not depend on the thread count (it takes `nthreads` at run time), so a 1-thread and a 2-thread
 * candidate of one schedule are the same code under two names. The builder compiles each canonical
 * form once and makes every requesting symbol an alias of it (build.ts).
 *  - Every occurrence of the unit's symbol as a name or name prefix (`<sym>`, `<sym>_run`,
 *    `<sym>_block_q1`…: not preceded by an identifier character, not followed by a letter or digit)
 *    is cut out; the pieces left identify the code. The canonical symbol is `vt_c` + 16 hex of
 *    their sha256, and the canonical source is the pieces joined by it: equal pieces, equal
 *    canonical source; the object's names are the unit's with `<sym>` read as `<canonical>`.
 *  - The generated first line (`/* veltair candidate <sym>: … schedule {…} *\/`, which names the
 *    threads) becomes one fixed comment line, so line numbers in compiler messages still hold.
 */
import { createHash } from 'node:crypto';

export interface CanonicalUnit {
  /** `vt_c` + 16 hex: the name prefix the canonical source defines in place of the unit's symbol. */
  readonly symbol: string;
  readonly source: string;
}

const HEADER = /^\/\* veltair candidate [^\n]*\*\/(?=\n|$)/;
const NEUTRAL_HEADER = '/* veltair candidate: generated, do not edit. */';

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `symbol` as a whole name or the prefix of one (`<symbol>_…`), never inside a longer name. */
function nameOf(symbol: string): RegExp {
  return new RegExp(`(?<![A-Za-z0-9_])${escapeRegExp(symbol)}(?![A-Za-z0-9])`, 'g');
}

/** `text` with every name `from`/`from_…` renamed to `to`/`to_…` (e.g. a compiler message about the canonical source). */
export function renameSymbol(text: string, from: string, to: string): string {
  return text.split(nameOf(from)).join(to);
}

export function canonicalUnit(unit: { readonly symbol: string; readonly source: string }): CanonicalUnit {
  const pieces = unit.source.replace(HEADER, NEUTRAL_HEADER).split(nameOf(unit.symbol));
  const symbol = `vt_c${createHash('sha256').update('canonical-v1\0').update(JSON.stringify(pieces)).digest('hex').slice(0, 16)}`;
  return { symbol, source: pieces.join(symbol) };
}
