/** Every ai.onnx operator veltair's front end understands, with its shape rule and fold. */
import type { OpDef } from './context.js';
import { elementwiseOps } from './elementwise.js';
import { convOps } from './conv.js';
import { shapeOps } from './shape-ops.js';
import { slicingOps } from './slicing.js';
import { reduceOps } from './reduce.js';
import { matmulOps } from './matmul.js';
import { resizeOps } from './resize.js';
import { scatterOps } from './scatter.js';
import { einsumOps } from './einsum.js';
import { microsoftQuantizedOps, quantizedOps } from './quantized.js';

const OPS: ReadonlyMap<string, OpDef> = new Map(
  Object.entries({
    ...elementwiseOps,
    ...convOps,
    ...shapeOps,
    ...slicingOps,
    ...reduceOps,
    ...matmulOps,
    ...resizeOps,
    ...scatterOps,
    ...einsumOps,
    ...quantizedOps,
  }),
);

/** ONNX Runtime's contrib domain: only the quantized operators its quantization tools emit. */
const MICROSOFT_OPS: ReadonlyMap<string, OpDef> = new Map(Object.entries(microsoftQuantizedOps));

/** The default ONNX domain, as decode.ts normalises it ('ai.onnx' becomes ''). */
export function isDefaultDomain(domain: string): boolean {
  return domain === '' || domain === 'ai.onnx';
}

export function opDefinition(domain: string, opType: string): OpDef | undefined {
  if (domain === 'com.microsoft') return MICROSOFT_OPS.get(opType);
  return isDefaultDomain(domain) ? OPS.get(opType) : undefined;
}

export function supportedOperators(): string[] {
  return [...OPS.keys()].sort();
}
