/**
 * Einsum's shape rule. Exports write it for attention (MaxViT: `bghid,bghjd->bghij`); the IR rewrites the
 * batched-matmul equations into Transpose + MatMul (src/ir/einsum.ts), and the runtime's preflight refuses
 * any other equation by name. The shape rule reads every form (implicit output, ellipsis, broadcasting).
 */
import { attrString } from '../attributes.js';
import { formatShape } from '../shapes.js';
import { quoteForMessage } from '../../errors.js';
import { attrError, input, shapeError, type OpContext, type OpDef } from './context.js';

export interface EinsumEquation {
  /** One label string per operand, e.g. ['bghid', 'bghjd']; '*' stands for an ellipsis. */
  readonly operands: readonly string[];
  /** The output labels: as written after '->', or (implicit form) the ellipsis then every label used once, sorted. */
  readonly output: string;
}

const TERM = /^[A-Za-z]*(?:\*[A-Za-z]*)?$/;

/** Parse `ab,bc->ac`, `...ij,...jk`, `i,i` (spaces ignored); undefined when it is not an equation. */
export function parseEinsum(equation: string): EinsumEquation | undefined {
  const compact = equation.replace(/\s+/g, '').replace(/\.\.\./g, '*');
  const [lhs, rhs, extra] = compact.split('->');
  if (lhs === undefined || extra !== undefined) return undefined;
  const operands = lhs.split(',');
  if (operands.some((t) => !TERM.test(t)) || (rhs !== undefined && !TERM.test(rhs))) return undefined;
  if (rhs !== undefined) return { operands, output: rhs };
  const counts = new Map<string, number>();
  for (const l of operands.join('').replace(/\*/g, '')) counts.set(l, (counts.get(l) ?? 0) + 1);
  const once = [...counts]
    .filter(([, n]) => n === 1)
    .map(([l]) => l)
    .sort()
    .join('');
  return { operands, output: (operands.some((t) => t.includes('*')) ? '*' : '') + once };
}

function equationOf(ctx: OpContext): EinsumEquation {
  const text = attrString(ctx.node, 'equation', '');
  const eq = parseEinsum(text);
  if (eq === undefined) throw attrError(ctx, `equation ${quoteForMessage(text, 80)} is not an einsum equation like "ij,jk->ik"`);
  return eq;
}

/** Each label's size and the broadcast ellipsis dims, checked across the operands. */
function labelSizes(ctx: OpContext, eq: EinsumEquation): { sizes: Map<string, number>; ellipsis: number[] } {
  const sizes = new Map<string, number>();
  let ellipsis: number[] = [];
  const merge = (seen: number | undefined, d: number, what: string): number => {
    if (seen !== undefined && seen !== d && seen !== 1 && d !== 1)
      throw shapeError(ctx, `${what} is ${seen} in one operand and ${d} in another`);
    return seen === undefined || seen === 1 ? d : seen;
  };
  eq.operands.forEach((labels, i) => {
    const shape = input(ctx, i).shape;
    const letters = labels.replace('*', '');
    const spread = shape.length - letters.length;
    if (spread < 0 || (spread > 0 && !labels.includes('*'))) {
      throw shapeError(
        ctx,
        `operand ${i} is ${formatShape(shape)} but its labels "${labels.replace('*', '...')}" have rank ${letters.length}`,
      );
    }
    const at = labels.indexOf('*');
    const own = at < 0 ? [] : shape.slice(at, at + spread);
    const width = Math.max(ellipsis.length, own.length);
    const padded = (dims: readonly number[]) => [...new Array<number>(width - dims.length).fill(1), ...dims];
    const [old, mine] = [padded(ellipsis), padded(own)];
    ellipsis = old.map((d, k) => merge(d, mine[k]!, 'the ellipsis'));
    [...letters].forEach((label, k) => {
      const axis = at < 0 || k < at ? k : k + spread;
      sizes.set(label, merge(sizes.get(label), shape[axis]!, `label "${label}"`));
    });
  });
  return { sizes, ellipsis };
}

const einsumOp: OpDef = {
  infer: (ctx) => {
    const eq = equationOf(ctx);
    if (eq.operands.length !== ctx.inputs.length)
      throw attrError(ctx, `the equation names ${eq.operands.length} operands, the node has ${ctx.inputs.length}`);
    const { sizes, ellipsis } = labelSizes(ctx, eq);
    const shape = [...eq.output].flatMap((label) => {
      if (label === '*') return ellipsis;
      const d = sizes.get(label);
      if (d === undefined) throw attrError(ctx, `output label "${label}" appears in no operand`);
      return [d];
    });
    return [{ dtype: input(ctx, 0).dtype, shape }];
  },
};

export const einsumOps: Readonly<Record<string, OpDef>> = { Einsum: einsumOp };
