/** Shape arithmetic shared by inference rules, the evaluator and later stages. */
import { quoteForMessage, userError } from '../errors.js';

export function product(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

/** Element count of a value, refusing counts beyond 2^53 (where doubles stop counting exactly). */
export function checkedElementCount(dims: readonly number[], valueName: string): number {
  const n = product(dims);
  if (!Number.isSafeInteger(n)) {
    throw userError(
      'DIM_OVERFLOW',
      `value ${quoteForMessage(valueName)} has shape [${dims.join('x')}]: ${n.toExponential(3)} elements exceed 2^53`,
      'the dimensions are absurd; check the input shapes (--input-shape) and the model',
    );
  }
  return n;
}

/** Multidirectional (numpy) broadcasting; undefined when the shapes cannot broadcast. */
export function broadcastShapes(shapes: readonly (readonly number[])[]): number[] | undefined {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    let dim = 1;
    for (const s of shapes) {
      const d = s[s.length - rank + i] ?? 1;
      if (d === 1) continue;
      if (dim !== 1 && dim !== d) return undefined;
      dim = d;
    }
    out.push(dim);
  }
  return out;
}

export function formatShape(dims: readonly number[]): string {
  return `[${dims.join(', ')}]`;
}

export function stridesOf(dims: readonly number[]): number[] {
  const s = new Array<number>(dims.length);
  let acc = 1;
  for (let i = dims.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= dims[i]!;
  }
  return s;
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
