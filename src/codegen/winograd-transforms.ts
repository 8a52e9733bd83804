/**
 * The F(4×4, 3×3) transform matrices and the C that applies them to vectors.
 *
 * Interpolation points 0, 1, −1, 2, −2 and ∞: the standard, well-conditioned choice of Lavin & Gray
 * ("Fast Algorithms for Convolutional Neural Networks", 2016) and NNPACK. Small integer points keep
 * Bᵀ and Aᵀ integer (exact in float) and put all the rounding of the weight transform in G, which
 * runs once at pack time in double precision. For output tile y (4×4), input tile d (6×6) and
 * kernel g (3×3): y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A.
 */
import { internalError } from '../errors.js';

export const WINO_BT: readonly (readonly number[])[] = [
  [4, 0, -5, 0, 1, 0],
  [0, -4, -4, 1, 1, 0],
  [0, 4, -4, -1, 1, 0],
  [0, -2, -1, 2, 1, 0],
  [0, 2, -1, -2, 1, 0],
  [0, 4, 0, -5, 0, 1],
];

export const WINO_G: readonly (readonly number[])[] = [
  [1 / 4, 0, 0],
  [-1 / 6, -1 / 6, -1 / 6],
  [-1 / 6, 1 / 6, -1 / 6],
  [1 / 24, 1 / 12, 1 / 6],
  [1 / 24, -1 / 12, 1 / 6],
  [0, 0, 1],
];

export const WINO_AT: readonly (readonly number[])[] = [
  [1, 1, 1, 1, 1, 0],
  [0, 1, -1, 2, -2, 0],
  [0, 1, 1, 4, 4, 0],
  [0, 1, -1, 8, -8, 1],
];

/** A float literal C parses exactly as the integer coefficient it is (the vector transforms' matrices are integer). */
function literal(c: number): string {
  if (!Number.isInteger(c)) throw internalError(`winograd: non-integer vector transform coefficient ${c}`);
  return `${c}.0f`;
}

/**
 * C statements `T out[i] = Σ_k m[i][k] · in[k]` on vectors of width `vec`, skipping zero
 * coefficients; ±1 become adds and subtracts, others one FMA each.
 */
export function emitLinear(
  vec: number,
  m: readonly (readonly number[])[],
  input: (k: number) => string,
  out: (i: number) => string,
): string[] {
  const v = `vt${vec}`;
  return m.map((row, i) => {
    const terms = row.map((c, k) => ({ c, k })).filter((t) => t.c !== 0);
    // start from a +1 term when there is one: no multiply for it
    terms.sort((a, b) => Number(b.c === 1) - Number(a.c === 1));
    let expr = '';
    for (const { c, k } of terms) {
      const x = input(k);
      if (expr === '') expr = c === 1 ? x : `${v}_mul(${v}_set1(${literal(c)}), ${x})`;
      else if (c === 1) expr = `${v}_add(${expr}, ${x})`;
      else if (c === -1) expr = `${v}_sub(${expr}, ${x})`;
      else expr = `${v}_fma(${v}_set1(${literal(c)}), ${x}, ${expr})`;
    }
    return `const ${v}_t ${out(i)} = ${expr === '' ? `${v}_zero()` : expr};`;
  });
}

/**
 * C statements for the 2-D transform `out = M x Mᵀ` of a square tile of vectors named
 * `${input}${r}_${c}` into `${output}${i}_${j}` (M: rows × n), through `${output}t` temporaries.
 */
export function emitTransform2d(vec: number, m: readonly (readonly number[])[], input: string, output: string): string[] {
  const n = m[0]!.length;
  const lines: string[] = [];
  // columns first: t[i][c] = Σ_k M[i][k] x[k][c]
  for (let c = 0; c < n; c++)
    lines.push(
      ...emitLinear(
        vec,
        m,
        (k) => `${input}${k}_${c}`,
        (i) => `${output}t${i}_${c}`,
      ),
    );
  // then rows: out[i][j] = Σ_k t[i][k] M[j][k]
  for (let i = 0; i < m.length; i++)
    lines.push(
      ...emitLinear(
        vec,
        m,
        (k) => `${output}t${i}_${k}`,
        (j) => `${output}${i}_${j}`,
      ),
    );
  return lines;
}

/** C initialiser `{{…}, …}` of G in double precision, for the pack-time weight transform. */
export function gMatrixLiteral(): string {
  const exact: Record<string, string> = { '0': '0.0', '1': '1.0', '0.25': '1.0 / 4' };
  const frac = (c: number) => {
    const key = String(c);
    if (key in exact) return exact[key]!;
    for (const d of [6, 12, 24]) if (Number.isInteger(Math.round(c * d * 1e9) / 1e9)) return `${Math.round(c * d)}.0 / ${d}`;
    throw internalError(`winograd: G coefficient ${c} is not a fraction over 6, 12 or 24`);
  };
  return `{${WINO_G.map((row) => `{${row.map(frac).join(', ')}}`).join(', ')}}`;
}
