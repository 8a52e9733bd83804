/**
 * Einsum in batched-matmul form (MaxViT's attention: `bghid,bghjd->bghij` and `bghij,bghjd->bghid`) is
 * rewritten into Transpose + MatMul + Transpose before lowering, so attention written as Einsum reaches the
 * same matmul layers (and the transB fold) as attention written as MatMul. The form: two operands, every
 * label once per operand, batch labels in both operands and the output, exactly one contracted label and one
 * free label per operand. Any other equation is left alone, and the runtime's preflight refuses it by name.
 */
import type { OnnxNode } from '../onnx/model.js';
import { attrString } from '../onnx/attributes.js';
import { parseEinsum } from '../onnx/ops/einsum.js';
import { freshName, replaceNodes, shapeOf, synthNode, type WorkGraph } from './work-graph.js';

export interface MatmulForm {
  readonly batch: string;
  readonly free: readonly [string, string];
  readonly contracted: string;
}

/** The batched-matmul reading of an equation, or undefined when it has none. */
export function matmulForm(equation: string): MatmulForm | undefined {
  const eq = parseEinsum(equation);
  if (eq === undefined || eq.operands.length !== 2) return undefined;
  const [a, b] = eq.operands as [string, string];
  const out = eq.output;
  const distinct = (s: string): boolean => new Set(s).size === s.length;
  if ([a, b, out].some((t) => t.includes('*'))) return undefined;
  if (!distinct(a) || !distinct(b) || !distinct(out)) return undefined;
  const inA = (l: string): boolean => a.includes(l);
  const inB = (l: string): boolean => b.includes(l);
  const contracted = [...a].filter((l) => inB(l) && !out.includes(l));
  const freeA = [...a].filter((l) => !inB(l));
  const freeB = [...b].filter((l) => !inA(l));
  const batch = [...out].filter((l) => inA(l) && inB(l)).join('');
  const accounted = batch.length + 2 === out.length && [...out].every((l) => inA(l) || inB(l));
  if (contracted.length !== 1 || freeA.length !== 1 || freeB.length !== 1 || !accounted) return undefined;
  if (!out.includes(freeA[0]!) || !out.includes(freeB[0]!)) return undefined;
  return { batch, free: [freeA[0]!, freeB[0]!], contracted: contracted[0]! };
}

function permutation(from: string, to: string): number[] {
  return [...to].map((l) => from.indexOf(l));
}

function isIdentity(perm: readonly number[]): boolean {
  return perm.every((p, i) => p === i);
}

function rewrite(g: WorkGraph, node: OnnxNode, form: MatmulForm): OnnxNode[] | undefined {
  const eq = parseEinsum(attrString(node, 'equation', ''))!;
  const [a, b] = eq.operands as [string, string];
  const y = node.outputs[0] ?? '';
  const dtype = g.types.get(y)?.dtype ?? 'float32';
  const [aShape, bShape] = [shapeOf(g, node.inputs[0] ?? ''), shapeOf(g, node.inputs[1] ?? '')];
  // Broadcast batch or contracted labels (size 1 against n) would need an Expand; exports write equal sizes.
  if ([...form.batch, form.contracted].some((l) => aShape[a.indexOf(l)] !== bShape[b.indexOf(l)])) return undefined;
  const out: OnnxNode[] = [];
  const arrange = (value: string, labels: string, wanted: string, shape: readonly number[], tag: string): string => {
    const perm = permutation(labels, wanted);
    if (isIdentity(perm)) return value;
    const t = freshName(g, y, tag);
    g.types.set(t, { dtype, shape: perm.map((p) => shape[p]!) });
    out.push(synthNode(`${node.name}/${tag}`, 'Transpose', [value], [t], { perm: { kind: 'ints', value: perm } }));
    return t;
  };
  const [i, j] = form.free;
  const k = form.contracted;
  const lhs = arrange(node.inputs[0] ?? '', a, form.batch + i + k, aShape, 'lhs');
  const rhs = arrange(node.inputs[1] ?? '', b, form.batch + k + j, bShape, 'rhs');
  const productLabels = form.batch + i + j;
  const finalPerm = permutation(productLabels, eq.output);
  const product = isIdentity(finalPerm) ? y : freshName(g, y, 'product');
  if (product !== y) g.types.set(product, { dtype, shape: finalPerm.map((_, axis) => shapeOf(g, y)[finalPerm.indexOf(axis)]!) });
  out.push(synthNode(node.name, 'MatMul', [lhs, rhs], [product]));
  if (product !== y) out.push(synthNode(`${node.name}/out`, 'Transpose', [product], [y], { perm: { kind: 'ints', value: finalPerm } }));
  return out;
}

export function desugarEinsums(g: WorkGraph): void {
  for (const node of [...g.nodes]) {
    if (node.domain !== '' || node.opType !== 'Einsum' || node.inputs.length !== 2) continue;
    const form = matmulForm(attrString(node, 'equation', ''));
    const replacement = form && rewrite(g, node, form);
    if (replacement !== undefined) replaceNodes(g, new Set([node]), replacement);
  }
}
