/**
 * The integer reference of quantized layers (src/ir/quant-reference.ts), where `veltair quantize`
 * and its tests look for it. It lives beside the quantized layers in ir/ so that compile (which
 * checks INT8 kernels against it) can reach it without importing this room.
 */
export { referenceOfU8, runQuantizedLayer } from '../ir/quant-reference.js';
