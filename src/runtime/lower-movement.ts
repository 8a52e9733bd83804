/**
 * Lowerings of the data-movement ops onto STRIDED_COPY (one "job" per contiguous source/target
 * pair: transpose, slice, split, concat, expand, pad), GATHER and COPY. All shapes are static, so
 * every base offset and stride is computed here once.
 */
import { dtypeBytes } from '../bundle/layout.js';
import { assignGather } from './gather-assign.js';
import { KIND, OP } from './ops.js';
import { broadcastStrides, coalesce, MAX_NATIVE_RANK, product, stridesOf } from './geometry.js';
import {
  attrList,
  attrNumber,
  blockedGeometry,
  isBlocked,
  unsupported,
  type Lowering,
  type OpContext,
  type Operand,
} from './lower-context.js';
import { paramFloats } from './runtime-layer.js';

interface Job {
  src: number;
  dst: number;
  srcBase: number;
  dstBase: number;
  dims: readonly number[];
  srcStrides: readonly number[];
  dstStrides: readonly number[];
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
  const fillKind = fill ? (KIND[c.outs[0]!.dtype] ?? -1) : -1;
  if (fill && fillKind < 0) unsupported(c, `padding ${c.outs[0]!.dtype}`);
  return {
    op: OP.STRIDED_COPY,
    inputs: c.ins.map((o) => o.ref),
    outputs: c.outs.map((o) => o.ref),
    ints: [es, fillKind, fill ? product(c.outs[0]!.shape) : 0, count, ...ints],
    floats: [fill?.value ?? 0],
  };
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
  const out = c.outs[0]!.shape;
  if (isBlocked(x.layout)) return blockedTranspose(c, perm);
  const inStrides = stridesOf(x.shape);
  return stridedCopy(c, [
    { src: 0, dst: 0, srcBase: 0, dstBase: 0, dims: out, srcStrides: perm.map((p) => inStrides[p]!), dstStrides: contiguous(out) },
  ]);
};

/**
 * A rank-4 transpose reading NCHW[V]c and writing the natural layout: the channel axis splits into
 * (block, lane), so the copy is one rank-5 strided job (NCHW → NHWC moves V contiguous floats at a
 * time when C is a multiple of V; the tail block's real lanes only otherwise).
 */
function blockedTranspose(c: OpContext, perm: readonly number[]): ReturnType<Lowering> {
  const g = blockedGeometry(c.ins[0]!);
  const cb = Math.ceil(g.c / g.v);
  // Source element strides of the logical axes n, c, h, w, with c = block * V + lane.
  const logical = [cb * g.h * g.w * g.v, 0, g.w * g.v, g.v];
  const outShape = c.outs[0]!.shape;
  const outStrides = stridesOf(outShape);
  const cAt = perm.indexOf(1);
  const jobs: Job[] = [];
  const full = Math.floor(g.c / g.v);
  const part = (blocks: number, lanes: number, firstBlock: number): Job => {
    const dims = perm.map((p) => (p === 1 ? blocks : outShape[perm.indexOf(p)]!));
    const srcStrides = perm.map((p) => (p === 1 ? g.h * g.w * g.v : logical[p]!));
    const dstStrides = outStrides.map((s, i) => (i === cAt ? s * g.v : s));
    return {
      src: 0,
      dst: 0,
      srcBase: firstBlock * g.h * g.w * g.v,
      dstBase: firstBlock * g.v * outStrides[cAt]!,
      dims: [...dims, lanes],
      srcStrides: [...srcStrides, 1],
      dstStrides: [...dstStrides, outStrides[cAt]!],
    };
  };
  if (full > 0) jobs.push(part(full, g.v, 0));
  if (g.c % g.v !== 0) jobs.push(part(1, g.c % g.v, full));
  return stridedCopy(c, jobs);
}

export const slice: Lowering = (c) => {
  const x = c.ins[0]!;
  if (c.ins.length > 1) unsupported(c, 'slice bounds must be constant');
  if (isBlocked(c.layout)) {
    // The plan runs only step-1 channel slices blocked.
    const s0 = (attrList(c, 'starts') ?? [0])[0]!;
    const start = Math.min(Math.max(s0 < 0 ? s0 + x.shape[1]! : s0, 0), x.shape[1]!);
    const out = c.outs[0]!;
    return channelGather(c, [Array.from({ length: out.shape[1]! }, (_, ch) => [0, start + ch] as const)], x, c.outs);
  }
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
  if (isBlocked(c.layout)) {
    const starts = channelStarts(c.outs);
    return channelGather(
      c,
      c.outs.map((o, i) => Array.from({ length: o.shape[1]! }, (_, ch) => [0, starts[i]! + ch] as const)),
      x,
      c.outs,
    );
  }
  const inStrides = stridesOf(x.shape);
  let offset = 0;
  const jobs: Job[] = [];
  c.outs.forEach((o, i) => {
    const job = {
      src: 0,
      dst: i,
      srcBase: offset * inStrides[axis]!,
      dstBase: 0,
      dims: o.shape,
      srcStrides: inStrides,
      dstStrides: contiguous(o.shape),
    };
    // An output the plan placed inside the input (a zero-copy split) is already there.
    if (!(o.ref === x.ref + offset * inStrides[axis]! * dtypeBytes(x.dtype) && o.ref >= 0)) jobs.push(job);
    offset += o.shape[axis]!;
  });
  return stridedCopy(c, jobs);
};

/** First channel of each part of a channel concat / split. */
function channelStarts(parts: readonly Operand[]): number[] {
  let c0 = 0;
  return parts.map((p) => {
    const s = c0;
    c0 += p.shape[1]!;
    return s;
  });
}

/** Byte offset of channel c0 in a batch-1 value of this geometry (blocked: c0 a multiple of V). */
function channelByteOffset(o: Operand, c0: number): number {
  const inner = o.shape.slice(2).reduce((a, b) => a * b, 1);
  return c0 * inner * dtypeBytes(o.dtype);
}

/**
 * CHANNEL_GATHER: `sources[o][ch]` = [input index, input channel] of output o's channel ch, over
 * NCHW[V]c (or NCHW: V = 1, the channel axis second, the rest flattened).
 */
export function channelGather(
  c: OpContext,
  sources: readonly (readonly (readonly [number, number])[])[],
  ...parts: [Operand | readonly Operand[], readonly Operand[]]
): ReturnType<Lowering> {
  const ins = Array.isArray(parts[0]) ? (parts[0] as readonly Operand[]) : [parts[0] as Operand];
  const outs = parts[1];
  const all = [...ins, ...outs];
  if (all.some((o) => o.dtype !== 'float32' || o.shape.length < 2))
    unsupported(c, 'channel gathers run on float32 values with a channel axis');
  const geo = (o: Operand) => {
    const g = blockedGeometry(o);
    return { n: o.shape[0]!, hw: isBlocked(o.layout) ? g.h * g.w : o.shape.slice(2).reduce((a, b) => a * b, 1), v: g.v };
  };
  const first = geo(all[0]!);
  if (
    all.some((o) => {
      const g = geo(o);
      return g.n !== first.n || g.hw !== first.hw || g.v !== first.v;
    })
  ) {
    unsupported(c, 'channel gather operands differ in batch, spatial size or layout');
  }
  const map = sources.flatMap((list) => list.flatMap(([i, ch]) => [i, ch]));
  const cin = ins.map((o) => o.shape[1]!);
  // Every caller passes a prefix of c.ins (all of them, or the one a slice or split reads), so ins[i] is input i.
  const owners = c.inputOwners;
  const runs =
    first.v === PIECE_WIDTH && owners
      ? assignGather(
          { sources, n: first.n, hw: first.hw, v: first.v },
          owners.threads,
          ins.map((_, i) => owners.of(i)),
        )
      : undefined;
  return {
    op: OP.CHANNEL_GATHER,
    inputs: ins.map((o) => o.ref),
    outputs: outs.map((o) => o.ref),
    ints: [
      first.v,
      first.n,
      first.hw,
      ins.length,
      outs.length,
      ...cin,
      ...outs.map((o) => o.shape[1]!),
      ...map,
      ...(first.v === PIECE_WIDTH ? gatherPieceTable(cin, sources) : []),
      ...(runs ? [owners!.threads, runs.length, ...runs.flatMap((r) => [r.item, r.q0, r.q1, r.thread])] : []),
    ],
  };
}

/** The lane count of a piece: one AVX-512 register (ops_channel.c's V = 16 path). */
const PIECE_WIDTH = 16;

/**
 * The piece table of a V = 16 gather (ops_channel.c check_table), computed once here instead of on
 * every call: on ShuffleNet's 7x7 planes grouping 16 lanes into pieces took more time than moving
 * the pixels. Per output block of batch 0: a whole-block copy when its lanes are 16 consecutive
 * channels of one source from a multiple of 16 (or that source's last block), else the source
 * blocks it draws from, each with the lanes it fills and the source lane of each.
 */
export function gatherPieceTable(cin: readonly number[], sources: readonly (readonly (readonly [number, number])[])[]): number[] {
  const v = PIECE_WIDTH;
  const entries: number[][] = [];
  for (const list of sources) {
    for (let ob = 0; ob * v < list.length; ob++) {
      const lanes = list.slice(ob * v, ob * v + v);
      const [s0, c0] = lanes[0]!;
      const whole =
        c0 % v === 0 && (lanes.length === v || c0 + lanes.length === cin[s0]!) && lanes.every(([s, c], l) => s === s0 && c === c0 + l);
      if (whole) {
        entries.push([0, s0, c0]);
        continue;
      }
      const pieces: { s: number; c: number; pick: number; idx: number[] }[] = [];
      lanes.forEach(([s, c], l) => {
        const base = c - (c % v);
        let p = pieces.find((x) => x.s === s && x.c === base);
        if (!p) {
          p = { s, c: base, pick: 0, idx: new Array<number>(v).fill(0) };
          pieces.push(p);
        }
        p.pick |= 1 << l;
        p.idx[l] = c % v;
      });
      const nibbles = (idx: readonly number[]) => idx.reduce((acc, x, i) => acc + x * 2 ** (4 * i), 0);
      entries.push([1, pieces.length, ...pieces.flatMap((p) => [p.s, p.c, p.pick, nibbles(p.idx.slice(0, 8)), nibbles(p.idx.slice(8))])]);
    }
  }
  const offsets: number[] = [];
  let at = 1 + entries.length;
  for (const e of entries) {
    offsets.push(at);
    at += e.length;
  }
  return [entries.length, ...offsets, ...entries.flat()];
}

/** A fused channel movement (channel shuffle with its concat and split): `sources` = [input, channel] per output channel, outputs in order. */
const channelGatherLayer: Lowering = (c) => {
  const flat = attrList(c, 'sources') ?? [];
  let at = 0;
  const sources = c.outs.map((o) =>
    Array.from({ length: o.shape[1]! }, () => {
      const pair = [flat[at]!, flat[at + 1]!] as const;
      at += 2;
      return pair;
    }),
  );
  if (at !== flat.length) unsupported(c, 'channel gather sources do not match the output channels');
  return channelGather(c, sources, c.ins, c.outs);
};

/** Is input `o` already at channel `c0` of `out` (the plan wrote it there: a zero-copy concat)? */
function inSlice(o: Operand, out: Operand, c0: number): boolean {
  return o.ref >= 0 && out.ref >= 0 && out.shape[0] === 1 && o.ref === out.ref + channelByteOffset(out, c0);
}

export const concat: Lowering = (c) => {
  const out = c.outs[0]!;
  const axis = attrNumber(c, 'axis', 0);
  if (isBlocked(c.layout)) {
    if (axis !== 1) unsupported(c, 'blocked concat runs along channels');
    const og = blockedGeometry(out);
    const starts = channelStarts(c.ins);
    if (c.ins.some((o, i) => starts[i]! % og.v !== 0 || (i < c.ins.length - 1 && o.shape[1]! % og.v !== 0))) {
      // Channel counts off the V grid: assemble each output block lane by lane.
      const owner = (ch: number) => {
        let i = 0;
        while (ch >= starts[i]! + c.ins[i]!.shape[1]!) i++;
        return i;
      };
      return channelGather(
        c,
        [
          Array.from({ length: og.c }, (_, ch) => {
            const i = owner(ch);
            return [i, ch - starts[i]!] as const;
          }),
        ],
        c.ins,
        c.outs,
      );
    }
    // Whole channel blocks: one contiguous run per batch and input, skipping inputs already in place.
    const plane = og.h * og.w * og.v;
    const outCb = Math.ceil(og.c / og.v);
    const jobs: Job[] = [];
    c.ins.forEach((o, i) => {
      const g = blockedGeometry(o);
      const blocks = Math.ceil(g.c / g.v),
        cb = starts[i]! / og.v;
      if (inSlice(o, out, starts[i]!)) return;
      jobs.push({
        src: i,
        dst: 0,
        srcBase: 0,
        dstBase: cb * plane,
        dims: [g.n, blocks * plane],
        srcStrides: [blocks * plane, 1],
        dstStrides: [outCb * plane, 1],
      });
    });
    return stridedCopy(c, jobs);
  }
  const outStrides = stridesOf(out.shape);
  let offset = 0;
  const jobs: Job[] = [];
  c.ins.forEach((o, i) => {
    const job = {
      src: i,
      dst: 0,
      srcBase: 0,
      dstBase: offset * outStrides[axis]!,
      dims: o.shape,
      srcStrides: contiguous(o.shape),
      dstStrides: outStrides,
    };
    const placed = axis === 1 && inSlice(o, out, offset);
    if (!placed) jobs.push(job);
    offset += o.shape[axis]!;
  });
  return stridedCopy(c, jobs);
};

export const expand: Lowering = (c) => {
  const x = c.ins[0]!;
  const out = c.outs[0]!.shape;
  return stridedCopy(c, [
    { src: 0, dst: 0, srcBase: 0, dstBase: 0, dims: out, srcStrides: broadcastStrides(x.shape, out), dstStrides: contiguous(out) },
  ]);
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
  axes.forEach((a0, i) => {
    begins[a0 < 0 ? a0 + rank : a0] = raw[i]!;
  });
  if (raw.some((p) => p < 0)) unsupported(c, 'negative pads');
  const out = c.outs[0]!.shape;
  const outStrides = stridesOf(out);
  const dstBase = begins.reduce((s, b, d) => s + b * outStrides[d]!, 0);
  return stridedCopy(c, [{ src: 0, dst: 0, srcBase: 0, dstBase, dims: x.shape, srcStrides: contiguous(x.shape), dstStrides: outStrides }], {
    value: attrNumber(c, 'constant_value', 0),
  });
};

export const gather: Lowering = (c) => {
  const [data, indices] = c.ins;
  if (!data || !indices) unsupported(c, 'gather takes data and indices');
  if (indices.dtype !== 'int64' && indices.dtype !== 'int32') unsupported(c, `gather indices of type ${indices.dtype}`);
  const axis = attrNumber(c, 'axis', 0);
  return {
    op: OP.GATHER,
    inputs: [data.ref, indices.ref],
    outputs: [c.outs[0]!.ref],
    ints: [
      product(data.shape.slice(0, axis)),
      data.shape[axis]!,
      product(data.shape.slice(axis + 1)),
      product(indices.shape),
      dtypeBytes(indices.dtype),
      dtypeBytes(data.dtype),
    ],
  };
};

export const MOVEMENT_LOWERINGS: Readonly<Record<string, Lowering>> = {
  identity: copy,
  dropout,
  reshape: copy,
  flatten: copy,
  squeeze: copy,
  unsqueeze: copy,
  transpose,
  slice,
  split,
  concat,
  expand,
  pad,
  gather,
  channelgather: channelGatherLayer,
};
