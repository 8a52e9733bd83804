/**
 * Gemm (Y = alpha·A'·B' + beta·C) is rewritten into MatMul + Add before lowering, so one code path
 * (MatMul with a constant K×N weight → dense, then epilogue fusion of the Add as a bias) serves both
 * exporters' spellings. A constant B is transposed and scaled at compile time; anything else becomes
 * explicit Transpose / Mul nodes.
 */
import type { OnnxNode, Tensor } from '../onnx/model.js';
import { attrFloat, attrInt } from '../onnx/attributes.js';
import { addConstant, float32Tensor, freshName, numbers, replaceNodes, shapeOf, synthNode, type WorkGraph } from './work-graph.js';

/** [K,N] (or [N,K] transposed) times alpha, as a float32 K×N tensor. */
export function denseWeightFromGemmB(b: Tensor, transB: boolean, alpha: number): Tensor {
  const src = numbers(b);
  const [r, c] = b.dims as [number, number];
  const [k, n] = transB ? [c, r] : [r, c];
  const out = new Float32Array(k * n);
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < n; j++) out[i * n + j] = alpha * (transB ? src[j * c + i]! : src[i * n + j]!);
  }
  return { dtype: 'float32', dims: [k, n], data: out };
}

function scaled(t: Tensor, factor: number): Tensor {
  return float32Tensor(
    t.dims,
    numbers(t).map((v) => v * factor),
  );
}

function desugar(g: WorkGraph, node: OnnxNode): OnnxNode[] {
  const [a, b, c] = [node.inputs[0] ?? '', node.inputs[1] ?? '', node.inputs[2] ?? ''];
  const y = node.outputs[0] ?? '';
  const alpha = attrFloat(node, 'alpha', 1);
  const beta = attrFloat(node, 'beta', 1);
  const transA = attrInt(node, 'transA', 0) !== 0;
  const transB = attrInt(node, 'transB', 0) !== 0;
  const dtype = g.types.get(y)?.dtype ?? 'float32';
  const out: OnnxNode[] = [];
  const temp = (tag: string, shape: readonly number[]): string => {
    const v = freshName(g, y, tag);
    g.types.set(v, { dtype, shape });
    return v;
  };
  const transpose = (v: string, tag: string): string => {
    const [r, cc] = shapeOf(g, v) as [number, number];
    const t = temp(tag, [cc, r]);
    out.push(synthNode(`${node.name}/${tag}`, 'Transpose', [v], [t], { perm: { kind: 'ints', value: [1, 0] } }));
    return t;
  };
  const lhs = transA ? transpose(a, 'transA') : a;
  const bConst = g.constants.get(b);
  let rhs: string;
  let alphaDone = false;
  if (bConst !== undefined && bConst.dims.length === 2) {
    rhs = addConstant(g, b, 'gemmB', denseWeightFromGemmB(bConst, transB, alpha));
    alphaDone = true;
  } else {
    rhs = transB ? transpose(b, 'transB') : b;
  }
  const yShape = shapeOf(g, y);
  const hasC = c !== '' && !(beta === 0);
  const needsAlpha = !alphaDone && alpha !== 1;
  let product = needsAlpha || hasC ? temp('matmul', yShape) : y;
  out.push(synthNode(node.name, 'MatMul', [lhs, rhs], [product]));
  if (needsAlpha) {
    const alphaName = addConstant(g, y, 'alpha', float32Tensor([], [alpha]));
    const next = hasC ? temp('alpha', yShape) : y;
    out.push(synthNode(`${node.name}/alpha`, 'Mul', [product, alphaName], [next]));
    product = next;
  }
  if (hasC) {
    const cConst = g.constants.get(c);
    let addend = c;
    if (cConst !== undefined) {
      if (beta !== 1) addend = addConstant(g, c, 'beta', scaled(cConst, beta));
    } else if (beta !== 1) {
      const betaName = addConstant(g, y, 'beta', float32Tensor([], [beta]));
      addend = temp('betaC', shapeOf(g, c));
      out.push(synthNode(`${node.name}/beta`, 'Mul', [c, betaName], [addend]));
    }
    out.push(synthNode(`${node.name}/bias`, 'Add', [product, addend], [y]));
  }
  return out;
}

export function desugarGemms(g: WorkGraph): void {
  for (const node of [...g.nodes]) {
    if (node.domain !== '' || node.opType !== 'Gemm') continue;
    replaceNodes(g, new Set([node]), desugar(g, node));
  }
}
