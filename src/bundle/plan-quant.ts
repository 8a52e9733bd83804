/**
 * Where the quantized layers (src/ir/quantized.ts) keep their integer values: channels-last
 * ('nhwc'), what the INT8 kernels read and write, so that a chain of quantized convs, adds and pools
 * never reorders. The conversions at the chain's ends do the layout change as they convert:
 * QuantizeLinear reads its float input where it was produced (natural, or nchw{V}c after a float
 * conv) and writes nhwc; DequantizeLinear reads nhwc and writes the natural layout its float readers take.
 * A value that is not rank 4 (a matmul's rows) is row-major either way (canonicalLayout folds it).
 */
import type { Layer } from '../ir/layer.js';
import { QUANTIZED_LAYER_OPS } from '../ir/quantized.js';
import { NATURAL, NHWC, parseLayout, type Layout } from './layout.js';
import type { Needs } from './plan-layouts.js';

export const isQuantizedLayer = (l: Pick<Layer, 'op'>): boolean => QUANTIZED_LAYER_OPS.has(l.op);

/** The INT8 kernel layers: the ones that get versions. */
export const isInt8KernelLayer = (l: Pick<Layer, 'op'>): boolean => l.op === 'qconv2d' || l.op === 'qmatmul';

export function quantNeeds(l: Layer, producedIn: (value: string) => Layout | undefined): Needs {
  if (l.op === 'quantize_linear') {
    const have = producedIn(l.inputs[0]!);
    const blocked = have !== undefined && parseLayout(have).kind === 'blocked' && l.inputShapes[0]!.length === 4;
    return { layout: NHWC, inputs: [blocked ? have : NATURAL], outputs: [NHWC] };
  }
  if (l.op === 'dequantize_linear') return { layout: NHWC, inputs: [NHWC], outputs: [NATURAL] };
  return { layout: NHWC, inputs: l.inputs.map(() => NHWC), outputs: l.outputs.map(() => NHWC) };
}
