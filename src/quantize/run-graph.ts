/**
 * A whole quantized model run through the integer reference, layer by layer: the quantized layers by
 * reference.ts, and the float views between them (Flatten, Reshape, Squeeze, Unsqueeze: the data
 * unchanged under a new shape). It is the yardstick a compiled INT8 model and ONNX Runtime's INT8
 * output are compared with, not a way to serve a model: any other float layer is refused.
 */
import type { Tensor } from '../onnx/model.js';
import type { LayerGraph } from '../ir/layer.js';
import { QUANTIZED_LAYER_OPS } from '../ir/quantized.js';
import { quoteForMessage, userError } from '../errors.js';
import { runQuantizedLayer } from './reference.js';

const VIEWS = new Set(['flatten', 'reshape', 'squeeze', 'unsqueeze', 'identity']);

export function runReferenceGraph(graph: LayerGraph, feeds: ReadonlyMap<string, Tensor>): Map<string, Tensor> {
  const values = new Map(feeds);
  for (const l of graph.layers) {
    const ins = l.inputs.map((v) => values.get(v)!);
    if (QUANTIZED_LAYER_OPS.has(l.op)) values.set(l.outputs[0]!, runQuantizedLayer(l, ins));
    else if (VIEWS.has(l.op)) values.set(l.outputs[0]!, { ...ins[0]!, dims: l.outputShape });
    else
      throw userError(
        'UNSUPPORTED_QUANTIZATION',
        `layer ${l.index} (${l.op}, node ${quoteForMessage(l.name)}) is a float layer the integer reference does not run`,
        'the reference runs quantized layers and the views between them; quantize the model so this layer reads and writes integers',
      );
  }
  return new Map(graph.outputs.map((o) => [o.name, values.get(o.name)!]));
}
