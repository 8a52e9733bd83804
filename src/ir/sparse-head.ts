/**
 * Finding a model's large dense output layer (the "head" a sparse family replaces) and the graph
 * of everything before it. A head is: the producer of the model's only output, or of the input of
 * a Softmax / Sigmoid that produces it (both keep the order of their inputs, so the head's top-k by
 * score is the model's top-k); a float32 `dense` layer over a [B, d] input with a constant weight,
 * N ≥ minOutputs outputs, and an epilogue of at most its bias. The prefix graph is every layer
 * before it, with the head's input as its one output.
 */
import type { Layer, LayerGraph } from './layer.js';

export interface SparseHeadSplit {
  readonly prefix: LayerGraph;
  readonly head: {
    readonly layer: Layer;
    /** The head's input value (the prefix's output) and the model output it replaces. */
    readonly input: string;
    readonly output: string;
    readonly activation: 'softmax' | 'sigmoid' | 'none';
    readonly n: number;
    readonly d: number;
    readonly batch: number;
    /** Neuron-major [n][d] weight and [n] bias (zeros when the layer has none). */
    readonly weight: Float32Array;
    readonly bias: Float32Array;
  };
}

export type SparseHeadSearch = { readonly found: SparseHeadSplit } | { readonly reason: string };

const ORDER_KEEPING: ReadonlySet<string> = new Set(['softmax', 'sigmoid']);

function transposed(kn: Float32Array, k: number, n: number): Float32Array {
  const out = new Float32Array(k * n);
  for (let i = 0; i < k; i++) for (let j = 0; j < n; j++) out[j * k + i] = kn[i * n + j]!;
  return out;
}

export function findSparseHead(graph: LayerGraph, minOutputs: number): SparseHeadSearch {
  if (graph.outputs.length !== 1) return { reason: `the model has ${graph.outputs.length} outputs (a sparse head needs exactly one)` };
  const output = graph.outputs[0]!.name;
  const producer = (value: string) => graph.layers.findIndex((l) => l.outputs.includes(value));
  let at = producer(output);
  let activation: 'softmax' | 'sigmoid' | 'none' = 'none';
  const last = graph.layers[at];
  if (last && ORDER_KEEPING.has(last.op) && last.inputs.length === 1 && at === graph.layers.length - 1) {
    activation = last.op as 'softmax' | 'sigmoid';
    at = producer(last.inputs[0]!);
  }
  const layer = graph.layers[at];
  if (!layer || layer.op !== 'dense' || layer.dtype !== 'float32')
    return { reason: "the model's output does not come from a dense (Gemm/MatMul) layer" };
  const weight = layer.params['weight'];
  const bias = layer.params['bias'];
  if (!weight || !(weight.data instanceof Float32Array) || weight.dims.length !== 2)
    return { reason: `layer ${layer.index} has no constant float32 weight` };
  const [d, n] = weight.dims as [number, number];
  if (n < minOutputs) return { reason: `its output layer has ${n} outputs, fewer than the sparse threshold ${minOutputs}` };
  const shape = layer.inputShapes[0] ?? [];
  if (shape.length !== 2 || shape[1] !== d || layer.inputs.length !== 1)
    return { reason: `layer ${layer.index}'s input is not [batch, ${d}]` };
  if (layer.epilogue.some((s) => s.kind !== 'bias') || at !== graph.layers.length - (activation === 'none' ? 1 : 2)) {
    return { reason: `layer ${layer.index} has an epilogue or later layers other than a softmax/sigmoid` };
  }
  const input = layer.inputs[0]!;
  const readers = graph.layers.filter((l) => l.inputs.includes(input)).length;
  if (readers !== 1 || graph.inputs.some((i) => i.name === input)) {
    const why = readers !== 1 ? 'read by other layers too' : 'the model input: there are no layers before it to compile';
    return { reason: `layer ${layer.index}'s input is ${why}` };
  }
  const hasBias = layer.epilogue.some((s) => s.kind === 'bias');
  if (hasBias && !(bias && bias.data instanceof Float32Array && bias.data.length === n)) {
    return { reason: `layer ${layer.index}'s bias is not a float32 vector of ${n}` };
  }
  const biasData = hasBias ? (bias!.data as Float32Array) : new Float32Array(n);
  const prefixLayers = graph.layers.slice(0, at);
  const prefix: LayerGraph = {
    ...graph,
    layers: prefixLayers,
    outputs: [{ name: input, dtype: 'float32', shape: [...shape] }],
  };
  return {
    found: {
      prefix,
      head: { layer, input, output, activation, n, d, batch: shape[0]!, weight: transposed(weight.data, d, n), bias: biasData },
    },
  };
}
