/**
 * Lowerings of the data-movement ops onto STRIDED_COPY (one "job" per contiguous source/target
 * pair: transpose, slice, split, concat, expand, pad), GATHER and COPY. All shapes are static, so
 * every base offset and stride is computed here once.
 */
import { dtypeBytes } from '../bundle/layout.js';
import { KIND, OP } from './ops.js';
import { broadcastStrides, coalesce, MAX_NATIVE_RANK, product, stridesOf } from './geometry.js';
import { attrList, attrNumber, blockedGeometry, isBlocked, unsupported, type Lowering, type OpContext } from './lower-context.js';
import { paramFloats } from './runtime-layer.js';

interface Job {
  src: number; dst: number; srcBase: number; dstBase: number;
  dims: readonly number[]; srcStrides: readonly number[]; dstStrides: readonly number[];
}

function jobInts(c: OpContext, jobs: readonly Job[]): number[] {
  const out: number[] = [];
  for (const j of jobs) {
    if (product(j.dims) === 0) continue;
    const w = coalesce(j.dims, [j.srcStrides, j.dstStrides]);
    if (w.dims.length > MAX_NATIVE_RANK) unsupported(c, 'a copy of rank above 8');
    out.push(j.src, j.dst, j.srcBase, j.dstBase, w.dims.length, ...w.dims, ...w.strides[0]!, ...w.strides[1]!);
  }
  return out;
}

function stridedCopy(c: OpContext, jobs: readonly Job[], fill?: { value: number }): ReturnType<Lowering> {
  const es = dtypeBytes(c.ins[0]!.dtype);
  const ints = jobInts(c, jobs);
  const count = jobs.filter((j) => product(j.dims) > 0).length;
  const fillKind = fill ? KIND[c.outs[0]!.dtype] ?? -1 : -1;
  if (fill && fillKind < 0) unsupported(c, `padding ${c.outs[0]!.dtype}`);
  return { op: OP.STRIDED_COPY, inputs: c.ins.map((o) => o.ref), outputs: c.outs.map((o) => o.ref),
    ints: [es, fillKind, fill ? product(c.outs[0]!.shape) : 0, count, ...ints], floats: [fill?.value ?? 0] };
}

const contiguous = (shape: readonly number[]): Job['dims'] => stridesOf(shape);

/** Dropout at inference is a copy; training mode is random and the mask output is not produced natively. */
const dropout: Lowering = (c) => {
  const training = c.ins[2];
  if (training && !(training.param && paramFloats(training.param)[0] === 0)) unsupported(c, 'training-mode Dropout is random');
  if (c.outs.length > 1) unsupported(c, 'the mask output of Dropout');
  return copy(c);
};

export const copy: Lowering = (c) => {
  const x = c.ins[0]!;
  return { op: OP.COPY, inputs: [x.ref], outputs: [c.outs[0]!.ref], ints: [product(x.shape) * dtypeBytes(x.dtype)] };
};

export const transpose: Lowering = (c) => {
  const x = c.ins[0]!;
  const perm = attrList(c, 'perm') ?? [...x.shape.keys()].reverse();
  const inStrides = stridesOf(x.shape);
  const out = c.outs[0]!.shape;
  return stridedCopy(c, [{ src: 0, dst: 0, srcBase: 0, dstBase: 0, dims: out, srcStrides: perm.map((p) => inStrides[p]!), dstStrides: contiguous(out) }]);
};

export const slice: Lowering = (c) => {
  const x = c.ins[0]!;
  if (c.ins.length > 1) unsupported(c, 'slice bounds must be constant');
  const rank = x.shape.length;
  const starts = attrList(c, 'starts') ?? [];
  const axes = attrList(c, 'axes') ?? starts.map((_, i) => i);
  const steps = attrList(c, 'steps') ?? starts.map(() => 1);
  const inStrides = stridesOf(x.shape);
  const srcStrides = [...inStrides];
  let base = 0;
  axes.forEach((a0, i) => {
    const a = a0 < 0 ? a0 + rank : a0;
    const dim = x.shape[a]!;
    const step = steps[i] ?? 1;
    let s = starts[i]!;
    if (s < 0) s += dim;
    s = step > 0 ? Math.min(Math.max(s, 0), dim) : Math.min(Math.max(s, 0), dim - 1);
    base += s * inStrides[a]!;
    srcStrides[a] = inStrides[a]! * step;
  });
  const out = c.outs[0]!.shape;
  return stridedCopy(c, [{ src: 0, dst: 0, srcBase: base, dstBase: 0, dims: out, srcStrides, dstStrides: contiguous(out) }]);
};

export const split: Lowering = (c) => {
  const x = c.ins[0]!;
  const axis = attrNumber(c, 'axis', 0);
  const inStrides = stridesOf(x.shape);
  let offset = 0;
  const jobs = c.outs.map((o, i) => {
    const job = { src: 0, dst: i, srcBase: offset * inStrides[axis]!, dstBase: 0, dims: o.shape, srcStrides: inStrides, dstStrides: contiguous(o.shape) };
    offset += o.shape[axis]!;
    return job;
  });
  return stridedCopy(c, jobs);
};

export const concat: Lowering = (c) => {
  const out = c.outs[0]!;
  const axis = attrNumber(c, 'axis', 0);
  if (isBlocked(c.layout)) {
    // NCHW[V]c along C with every input's channels a multiple of V: copy whole channel blocks.
    const og = blockedGeometry(out);
    const plane = og.h * og.w * og.v;
    const outCb = Math.ceil(og.c / og.v);
    let cb = 0;
    const jobs = c.ins.map((o, i) => {
      const g = blockedGeometry(o);
      const blocks = g.c / g.v;
      if (axis !== 1 || !Number.isInteger(blocks)) unsupported(c, 'blocked concat needs channel counts that are multiples of V');
      const job = { src: i, dst: 0, srcBase: 0, dstBase: cb * plane,
        dims: [g.n, blocks * plane], srcStrides: [blocks * plane, 1], dstStrides: [outCb * plane, 1] };
      cb += blocks;
      return job;
    });
    return stridedCopy(c, jobs);
  }
  const outStrides = stridesOf(out.shape);
  let offset = 0;
  const jobs = c.ins.map((o, i) => {
    const job = { src: i, dst: 0, srcBase: 0, dstBase: offset * outStrides[axis]!, dims: o.shape, srcStrides: contiguous(o.shape), dstStrides: outStrides };
    offset += o.shape[axis]!;
    return job;
  });
  return stridedCopy(c, jobs);
};

export const expand: Lowering = (c) => {
  const x = c.ins[0]!;
  const out = c.outs[0]!.shape;
  return stridedCopy(c, [{ src: 0, dst: 0, srcBase: 0, dstBase: 0, dims: out, srcStrides: broadcastStrides(x.shape, out), dstStrides: contiguous(out) }]);
};

export const pad: Lowering = (c) => {
  const x = c.ins[0]!;
  const mode = c.layer.attrs['mode'] ?? 'constant';
  if (mode !== 'constant') unsupported(c, `pad mode ${String(mode)} (only constant)`);
  if (c.ins.length > 1) unsupported(c, 'pads must be constant');
  const rank = x.shape.length;
  const raw = attrList(c, 'pads') ?? [];
  const axes = attrList(c, 'axes') ?? [...Array(rank).keys()];
  const begins = new Array<number>(rank).fill(0);
  axes.forEach((a0, i) => { begins[a0 < 0 ? a0 + rank : a0] = raw[i]!; });
  if (raw.some((p) => p < 0)) unsupported(c, 'negative pads');
  const out = c.outs[0]!.shape;
  const outStrides = stridesOf(out);
  const dstBase = begins.reduce((s, b, d) => s + b * outStrides[d]!, 0);
  return stridedCopy(c, [{ src: 0, dst: 0, srcBase: 0, dstBase, dims: x.shape, srcStrides: contiguous(x.shape), dstStrides: outStrides }],
    { value: attrNumber(c, 'constant_value', 0) });
};

export const gather: Lowering = (c) => {
  const [data, indices] = c.ins;
  if (!data || !indices) unsupported(c, 'gather takes data and indices');
  if (indices.dtype !== 'int64' && indices.dtype !== 'int32') unsupported(c, `gather indices of type ${indices.dtype}`);
  const axis = attrNumber(c, 'axis', 0);
  return { op: OP.GATHER, inputs: [data.ref, indices.ref], outputs: [c.outs[0]!.ref],
    ints: [product(data.shape.slice(0, axis)), data.shape[axis]!, product(data.shape.slice(axis + 1)), product(indices.shape),
      dtypeBytes(indices.dtype), dtypeBytes(data.dtype)] };
};

export const MOVEMENT_LOWERINGS: Readonly<Record<string, Lowering>> = {
  identity: copy, dropout, reshape: copy, flatten: copy, squeeze: copy, unsqueeze: copy,
  transpose, slice, split, concat, expand, pad, gather,
};
