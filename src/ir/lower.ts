/**
 * InferredModel → LayerGraph. The stages, in order:
 *  1. simplify: drop aliases (Identity, Dropout, no-op views/Transposes), merge view chains;
 *  2. fold quantized patterns (QDQ and QOperator) into integer layers (quantized.ts);
 *  3. desugar Gemm into MatMul (+ Mul) + Add so dense has one spelling, and batched-matmul Einsums
 *     into Transpose + MatMul (einsum.ts);
 *  4. recognise exporter patterns (decomposed LayerNorm, GELU, SiLU) and channel shuffles with the
 *     concat before and the slices after them (channel-moves.ts);
 *  5. lower tunable cores (Conv, MatMul) and fuse their epilogues (BN, bias, activations, residual);
 *  6. lower every remaining node to a non-tunable layer;
 *  7. fuse the non-tunable layers: batch norms into consumer convs, elementwise chains into one
 *     layer (fuse-ops.ts);
 *  8. order layers by where their last absorbed node stood, and freeze them (workload keys, MACs,
 *     overflow guard).
 */
import type { DType, InferredModel, OnnxNode } from '../onnx/model.js';
import { userError } from '../errors.js';
import type { Layer, LayerGraph } from './layer.js';
import { finishLayer, type LayerDraft } from './draft.js';
import { fuseEpilogue } from './fuse.js';
import { fuseNonTunable } from './fuse-ops.js';
import { desugarGemms } from './gemm.js';
import { lowerGeneric } from './generic.js';
import { recognisePatterns } from './patterns.js';
import { composeChannelGathers, recogniseChannelMoves } from './channel-moves.js';
import { orderGatherChannels } from './gather-order.js';
import { dropAliases, mergeViewChains } from './simplify.js';
import { lowerConv, lowerMatMul } from './tunable.js';
import { desugarEinsums } from './einsum.js';
import { foldQuantized } from './quantized.js';
import { indexGraph, shapeOf, workGraphOf, type WorkGraph } from './work-graph.js';

function lowerCores(g: WorkGraph, consumed: Set<OnnxNode>): Map<OnnxNode, LayerDraft> {
  const ix = indexGraph(g);
  const cores = new Map<OnnxNode, LayerDraft>();
  g.nodes.forEach((n, position) => {
    if (n.domain !== '' || consumed.has(n)) return;
    let d: LayerDraft | undefined;
    if (n.opType === 'Conv') d = lowerConv(g, n, position);
    else if (n.opType === 'MatMul') d = lowerMatMul(g, ix, n, position, consumed);
    if (d === undefined) return;
    cores.set(n, d);
    if (d.core !== undefined) fuseEpilogue(g, ix, d, consumed);
  });
  return cores;
}

export function lowerToLayers(m: InferredModel): LayerGraph {
  const g = workGraphOf(m);
  const opset = m.model.opsetImports.get('') ?? m.model.opsetImports.get('ai.onnx') ?? 17;
  dropAliases(g);
  mergeViewChains(g);
  dropAliases(g);
  const quantized = foldQuantized(g, m.dequantized ?? new Map(), opset);
  desugarGemms(g);
  desugarEinsums(g);
  recognisePatterns(g);
  recogniseChannelMoves(g);
  composeChannelGathers(g);

  const consumed = new Set<OnnxNode>();
  const cores = lowerCores(g, consumed);
  const lowered: LayerDraft[] = [];
  g.nodes.forEach((n, position) => {
    if (consumed.has(n)) return;
    const q = quantized.get(n);
    // Rewrites after the fold moved nodes: a quantized layer takes its node's final place.
    if (q !== undefined) q.position = position;
    lowered.push(q ?? cores.get(n) ?? lowerGeneric(g, n, position, opset));
  });
  const drafts = fuseNonTunable(g, lowered);
  // Stable sort: a fused layer moves to its last absorbed node; everything it reads is earlier.
  drafts.sort((a, b) => a.position - b.position);
  const layers: Layer[] = drafts.map((d, i) => finishLayer(g, d, i));

  const shapes = new Map<string, readonly number[]>();
  for (const i of m.inputs) shapes.set(i.name, i.shape);
  for (const l of layers) for (const o of l.outputs) shapes.set(o, shapeOf(g, o));
  for (const o of m.outputs) if (!shapes.has(o.name)) shapes.set(o.name, o.shape);
  const dtypes = new Map<string, DType>();
  for (const l of layers)
    for (const o of l.outputs) {
      const t = g.types.get(o)?.dtype;
      if (t !== undefined && t !== l.dtype) dtypes.set(o, t);
    }
  return orderGatherChannels({
    layers,
    inputs: m.inputs.map((i) => ({ name: i.name, dtype: i.dtype, shape: i.shape })),
    outputs: m.outputs.map((o) => ({ name: o.name, dtype: o.dtype, shape: o.shape })),
    shapes,
    ...(dtypes.size > 0 ? { dtypes } : {}),
  });
}

export interface GraphSummary {
  readonly layers: number;
  readonly tunableLayers: number;
  readonly uniqueWorkloads: number;
  readonly macs: number;
}

export function summarise(graph: LayerGraph): GraphSummary {
  const tunable = graph.layers.filter((l) => l.tunable);
  const macs = graph.layers.reduce((sum, l) => sum + l.macs, 0);
  if (!Number.isSafeInteger(macs)) {
    throw userError(
      'DIM_OVERFLOW',
      `the model's total multiply-accumulate count (${macs.toExponential(3)}) exceeds 2^53`,
      "the model has absurd dimensions; check --input-shape and the model's declared shapes",
    );
  }
  return {
    layers: graph.layers.length,
    tunableLayers: tunable.length,
    uniqueWorkloads: new Set(tunable.map((l) => l.workload!.key)).size,
    macs,
  };
}
