/** MatMul (numpy semantics: 1-D promotion, batched broadcast) and Gemm (transA/transB). */
import { attrInt } from '../attributes.js';
import { broadcastShapes, formatShape } from '../shapes.js';
import { allocData, nums, storeFor } from '../eval.js';
import type { Tensor, TensorData } from '../model.js';
import { input, hasInput, shapeError, type OpDef } from './context.js';

/** A constant MatMul (Swin-V2's position-bias MLP over its fixed coordinate table), in float64 then stored. */
function evaluateMatMul(a: Tensor, b: Tensor, outDtype: Tensor['dtype'], outShape: readonly number[]): Tensor {
  const as = a.dims.length === 1 ? [1, a.dims[0]!] : [...a.dims];
  const bs = b.dims.length === 1 ? [b.dims[0]!, 1] : [...b.dims];
  const [m, k, n] = [as[as.length - 2]!, as[as.length - 1]!, bs[bs.length - 1]!];
  const batch = broadcastShapes([as.slice(0, -2), bs.slice(0, -2)])!;
  const batchOffset = (shape: readonly number[], flat: number): number => {
    let off = 0;
    let stride = 1;
    let rest = flat;
    const own = shape.slice(0, -2);
    for (let d = batch.length - 1; d >= 0; d--) {
      const idx = rest % batch[d]!;
      rest = Math.floor(rest / batch[d]!);
      const ownDim = own[d - (batch.length - own.length)];
      if (ownDim !== undefined) {
        off += (ownDim === 1 ? 0 : idx) * stride;
        stride *= ownDim;
      }
    }
    return off;
  };
  const [x, w] = [nums(a), nums(b)];
  const store = storeFor(outDtype);
  const count = batch.reduce((p, d) => p * d, 1);
  const dst = allocData(outDtype, count * m * n) as unknown as number[];
  for (let p = 0; p < count; p++) {
    const [ax, bx] = [batchOffset(as, p) * m * k, batchOffset(bs, p) * k * n];
    const row = new Float64Array(n);
    for (let r = 0; r < m; r++) {
      row.fill(0);
      // i-k-j: B is read along its rows; each output still sums over k in order.
      for (let q = 0; q < k; q++) {
        const a = x[ax + r * k + q]!;
        const base = bx + q * n;
        for (let c = 0; c < n; c++) row[c] += a * w[base + c]!;
      }
      for (let c = 0; c < n; c++) dst[(p * m + r) * n + c] = store(row[c]!);
    }
  }
  return { dtype: outDtype, dims: outShape, data: dst as unknown as TensorData };
}

const matmul: OpDef = {
  infer: (ctx) => {
    const a = input(ctx, 0);
    const b = input(ctx, 1);
    if (a.shape.length === 0 || b.shape.length === 0) throw shapeError(ctx, 'MatMul inputs must have rank ≥ 1');
    const as = a.shape.length === 1 ? [1, a.shape[0]!] : [...a.shape];
    const bs = b.shape.length === 1 ? [b.shape[0]!, 1] : [...b.shape];
    const k = as[as.length - 1]!;
    if (k !== bs[bs.length - 2]) {
      throw shapeError(ctx, `inner dimensions differ: ${formatShape(a.shape)} × ${formatShape(b.shape)}`);
    }
    const batch = broadcastShapes([as.slice(0, -2), bs.slice(0, -2)]);
    if (batch === undefined)
      throw shapeError(ctx, `batch dimensions of ${formatShape(a.shape)} and ${formatShape(b.shape)} cannot be broadcast`);
    const shape = [...batch];
    if (a.shape.length > 1) shape.push(as[as.length - 2]!);
    if (b.shape.length > 1) shape.push(bs[bs.length - 1]!);
    return [{ dtype: a.dtype, shape }];
  },
  evaluate: (_ctx, [a, b], [out]) => [evaluateMatMul(a!, b!, out!.dtype, out!.shape)],
  foldWork: (ctx) => {
    const a = input(ctx, 0).shape;
    const b = input(ctx, 1).shape;
    const outElements = (a.length > 1 ? a.slice(0, -1) : []).concat(b.length > 1 ? b.slice(0, -2).concat(b.slice(-1)) : []);
    return outElements.reduce((s, d) => s * d, 1) * a[a.length - 1]!;
  },
};

const gemm: OpDef = {
  infer: (ctx) => {
    const a = input(ctx, 0);
    const b = input(ctx, 1);
    if (a.shape.length !== 2 || b.shape.length !== 2) {
      throw shapeError(ctx, `Gemm needs 2-D inputs, got ${formatShape(a.shape)} and ${formatShape(b.shape)}`);
    }
    const [m, ka] = attrInt(ctx.node, 'transA', 0) ? [a.shape[1]!, a.shape[0]!] : [a.shape[0]!, a.shape[1]!];
    const [kb, n] = attrInt(ctx.node, 'transB', 0) ? [b.shape[1]!, b.shape[0]!] : [b.shape[0]!, b.shape[1]!];
    if (ka !== kb)
      throw shapeError(ctx, `inner dimensions differ: A ${formatShape(a.shape)} and B ${formatShape(b.shape)} (transA/transB applied)`);
    if (hasInput(ctx, 2)) {
      const c = input(ctx, 2);
      const out = broadcastShapes([c.shape, [m, n]]);
      if (out === undefined || out.length !== 2 || out[0] !== m || out[1] !== n) {
        throw shapeError(ctx, `C shape ${formatShape(c.shape)} does not broadcast to [${m}, ${n}]`);
      }
    }
    return [{ dtype: a.dtype, shape: [m, n] }];
  },
};

export const matmulOps: Readonly<Record<string, OpDef>> = { MatMul: matmul, Gemm: gemm };
