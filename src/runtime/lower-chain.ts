/**
 * `elementwise_chain` (src/ir/fuse-ops.ts) → ELEMENTWISE_CHAIN (native-kernels/runtime/ops_chain.c).
 * The layer's `program` attr is parsed here, every reference checked against the layer's inputs
 * and params, and each constant laid out as the op reads it: one float per (padded) channel, or
 * one float for a scalar. A malformed program is an UNSUPPORTED_OPS error naming the layer, never
 * a wild read.
 */
import { BINARY_FN, CHAIN_STEP, OP, OPERAND_KIND, UNARY_FN } from './ops.js';
import { product, roundUp } from './geometry.js';
import { blockedGeometry, isBlocked, unsupported, type Lowering, type OpContext, type Operand } from './lower-context.js';
import { paramFloats } from './runtime-layer.js';

const MAX_STEPS = 16;
const UNARY_TOKENS: Readonly<Record<string, string>> = {
  relu: 'relu',
  clip: 'clip',
  leakyrelu: 'leaky_relu',
  sigmoid: 'sigmoid',
  hardsigmoid: 'hard_sigmoid',
  hardswish: 'hard_swish',
  silu: 'silu',
  tanh: 'tanh',
  gelu: 'gelu',
  gelu_tanh: 'gelu_tanh',
  erf: 'erf',
  exp: 'exp',
  neg: 'neg',
};
const BINARY_TOKENS = new Set(['add', 'sub', 'mul', 'div', 'max', 'min']);

interface Geometry {
  readonly n: number;
  readonly c: number;
  readonly hw: number;
  readonly v: number;
}

function geometryOf(c: OpContext, o: Operand): Geometry {
  if (isBlocked(c.layout)) {
    const g = blockedGeometry(o);
    return { n: g.n, c: g.c, hw: g.h * g.w, v: g.v };
  }
  return { n: o.shape[0] ?? 1, c: o.shape[1] ?? 1, hw: product(o.shape.slice(2)), v: 1 };
}

export const elementwiseChain: Lowering = (c) => {
  const program = c.layer.attrs['program'];
  if (typeof program !== 'string' || program.length === 0) unsupported(c, 'an elementwise chain without a program');
  const x = c.ins[0]!,
    out = c.outs[0]!;
  if ([x, out].some((o) => o.dtype !== 'float32' || o.shape.length < 2))
    unsupported(c, 'elementwise chains run on float32 values with a channel axis');
  const geo = geometryOf(c, out);
  const padded = roundUp(geo.c, geo.v);
  const inputs: number[] = [x.ref];
  const refOf = new Map<string, number>();
  /** A constant as the op reads it: one float (scalar) or one per padded channel. */
  const paramRef = (name: string): { index: number; kind: number } => {
    const p = c.layer.params[name];
    if (!p) unsupported(c, `the chain names param ${name}, which the layer does not have`);
    const values = paramFloats(p);
    if (values.length !== 1 && values.length !== geo.c) unsupported(c, `param ${name} has ${values.length} values for ${geo.c} channels`);
    const key = `p:${name}`;
    if (!refOf.has(key)) {
      const data = values.length === 1 ? Float32Array.of(values[0]!) : new Float32Array(padded);
      if (values.length !== 1) data.set(values);
      refOf.set(key, inputs.length);
      inputs.push(c.addParam(data));
    }
    return { index: refOf.get(key)!, kind: values.length === 1 ? OPERAND_KIND.scalar : OPERAND_KIND.channel };
  };
  /** An activation operand: same shape as the output, or a per-(batch,)channel gate. */
  const valueRef = (k: number): { index: number; kind: number } => {
    const o = c.ins[k];
    if (o === undefined || o.param) unsupported(c, `the chain names input ${k}, which the layer does not have`);
    const full = o.shape.length === out.shape.length && o.shape.every((d, i) => d === out.shape[i]);
    const gate =
      o.shape.length === out.shape.length &&
      o.shape[1] === geo.c &&
      o.shape.slice(2).every((d) => d === 1) &&
      (o.shape[0] === 1 || o.shape[0] === geo.n);
    if (!full && !gate) unsupported(c, `chain input ${k} of shape [${o.shape.join(',')}] neither matches the output nor is a channel gate`);
    const key = `in:${k}`;
    if (!refOf.has(key)) {
      refOf.set(key, k === 0 ? 0 : inputs.length);
      if (k !== 0) inputs.push(o.ref);
    }
    const kind = full ? OPERAND_KIND.full : o.shape[0] === geo.n && geo.n > 1 ? OPERAND_KIND.channel_batch : OPERAND_KIND.channel;
    return { index: refOf.get(key)!, kind };
  };
  const ref = (token: string) => {
    const m = /^(in|p)(\d+)$/.exec(token);
    if (!m) unsupported(c, `chain operand ${JSON.stringify(token.slice(0, 20))} is not inK or pK`);
    return m[1] === 'in' ? valueRef(Number(m[2])) : paramRef(`p${m[2]}`);
  };
  const ints: number[] = [];
  const floats: number[] = [];
  const tokens = program.split(';');
  if (tokens.length > MAX_STEPS) unsupported(c, `an elementwise chain of ${tokens.length} steps (at most ${MAX_STEPS})`);
  for (const t of tokens) {
    const m = /^([a-z_]+)(?:\(([^()]*)\))?$/.exec(t);
    if (!m) unsupported(c, `chain step ${JSON.stringify(t.slice(0, 40))} is malformed`);
    const [, name, args = ''] = m;
    const list = args === '' ? [] : args.split(',');
    if (name === 'affine') {
      if (list.length !== 2) unsupported(c, 'affine takes a scale and a shift');
      const a = ref(list[0]!),
        b = ref(list[1]!);
      if (a.kind !== OPERAND_KIND.channel || b.kind !== OPERAND_KIND.channel)
        unsupported(c, 'affine scale and shift must be per-channel constants');
      ints.push(CHAIN_STEP.affine, 0, a.index, b.index, 0);
      floats.push(0, 0);
    } else if (UNARY_TOKENS[name!] !== undefined) {
      const nums = list.map(Number);
      if (nums.some((v) => !Number.isFinite(v)) || nums.length > 2) unsupported(c, `chain step ${name} has bad parameters`);
      ints.push(CHAIN_STEP.unary, UNARY_FN[UNARY_TOKENS[name!]!]!, 0, 0, 0);
      floats.push(nums[0] ?? 0, nums[1] ?? 0);
    } else {
      const reversed = name!.endsWith('_rev');
      const fn = reversed ? name!.slice(0, -4) : name!;
      if (!BINARY_TOKENS.has(fn) || list.length !== 1) unsupported(c, `chain step ${JSON.stringify(name)} is not an op the chain runs`);
      const r = ref(list[0]!);
      ints.push(CHAIN_STEP.binary, BINARY_FN[fn]!, r.index, r.kind, reversed ? 1 : 0);
      floats.push(0, 0);
    }
  }
  return { op: OP.ELEMENTWISE_CHAIN, inputs, outputs: [out.ref], ints: [geo.n, geo.c, geo.hw, geo.v, tokens.length, ...ints], floats };
};
