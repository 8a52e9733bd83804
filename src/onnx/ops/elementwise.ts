/**
 * Element-wise operators: unary math and activations (shape unchanged), binary and variadic
 * operators with multidirectional broadcasting, comparisons, Where, Clip, Cast.
 */
import type { DType, Tensor, ValueType } from '../model.js';
import { attrFloat, attrInt } from '../attributes.js';
import { dtypeFromCode } from '../dtype.js';
import { broadcastShapes, formatShape } from '../shapes.js';
import { isIntegerDType, mapBroadcast, nums, tensorOf } from '../eval.js';
import { attrError, hasInput, input, shapeError, type OpContext, type OpDef } from './context.js';

type Unary = (x: number) => number;

function erf(x: number): number {
  // Abramowitz & Stegun 7.1.26 refined by one Newton-free correction term: |error| < 1.5e-7.
  const s = x < 0 ? -1 : 1;
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
  return s * y;
}

const softplus: Unary = (x) => (x > 20 ? x : Math.log1p(Math.exp(x)));

/** Unary operators whose rule is "same shape, same dtype"; the function is their fold. */
function unaryTable(ctx: OpContext): Unary | undefined {
  const n = ctx.node;
  switch (n.opType) {
    case 'Relu':
      return (x) => (x > 0 ? x : 0);
    case 'Sigmoid':
      return (x) => 1 / (1 + Math.exp(-x));
    case 'Tanh':
      return Math.tanh;
    case 'Erf':
      return erf;
    case 'Exp':
      return Math.exp;
    case 'Log':
      return Math.log;
    case 'Sqrt':
      return Math.sqrt;
    case 'Neg':
      return (x) => -x;
    case 'Abs':
      return Math.abs;
    case 'Floor':
      return Math.floor;
    case 'Ceil':
      return Math.ceil;
    case 'Round':
      return (x) => {
        const r = Math.round(x);
        return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
      };
    case 'Sign':
      return Math.sign;
    case 'Reciprocal':
      return (x) => 1 / x;
    case 'Sin':
      return Math.sin;
    case 'Cos':
      return Math.cos;
    case 'Softplus':
      return softplus;
    case 'Softsign':
      return (x) => x / (1 + Math.abs(x));
    case 'Mish':
      return (x) => x * Math.tanh(softplus(x));
    case 'HardSwish':
      return (x) => x * Math.max(0, Math.min(1, x / 6 + 0.5));
    case 'LeakyRelu': {
      const a = attrFloat(n, 'alpha', 0.01);
      return (x) => (x >= 0 ? x : a * x);
    }
    case 'Elu': {
      const a = attrFloat(n, 'alpha', 1);
      return (x) => (x >= 0 ? x : a * (Math.exp(x) - 1));
    }
    case 'Celu': {
      const a = attrFloat(n, 'alpha', 1);
      return (x) => Math.max(0, x) + Math.min(0, a * (Math.exp(x / a) - 1));
    }
    case 'ThresholdedRelu': {
      const a = attrFloat(n, 'alpha', 1);
      return (x) => (x > a ? x : 0);
    }
    case 'Selu': {
      const a = attrFloat(n, 'alpha', 1.67326319217681884765625);
      const g = attrFloat(n, 'gamma', 1.05070102214813232421875);
      return (x) => (x > 0 ? g * x : g * a * (Math.exp(x) - 1));
    }
    case 'HardSigmoid': {
      const a = attrFloat(n, 'alpha', 0.2);
      const b = attrFloat(n, 'beta', 0.5);
      return (x) => Math.max(0, Math.min(1, a * x + b));
    }
    default:
      return undefined;
  }
}

const UNARY_OPS = [
  'Relu',
  'Sigmoid',
  'Tanh',
  'Erf',
  'Exp',
  'Log',
  'Sqrt',
  'Neg',
  'Abs',
  'Floor',
  'Ceil',
  'Round',
  'Sign',
  'Reciprocal',
  'Sin',
  'Cos',
  'Softplus',
  'Softsign',
  'Mish',
  'HardSwish',
  'LeakyRelu',
  'Elu',
  'Celu',
  'ThresholdedRelu',
  'Selu',
  'HardSigmoid',
];

const unary: OpDef = {
  infer: (ctx) => [input(ctx, 0)],
  evaluate: (ctx, [x], [out]) => [mapBroadcast(out!.dtype, out!.shape, [x!], unaryTable(ctx)!)],
};

function broadcastOrFail(ctx: OpContext, types: readonly ValueType[]): number[] {
  const shape = broadcastShapes(types.map((t) => t.shape));
  if (shape === undefined) {
    throw shapeError(ctx, `input shapes ${types.map((t) => formatShape(t.shape)).join(' and ')} cannot be broadcast together`);
  }
  return shape;
}

function presentInputs(ctx: OpContext): ValueType[] {
  return ctx.inputs.filter((t): t is ValueType => t !== undefined);
}

type Binary = (a: number, b: number) => number;

function arithmetic(fn: (dtype: DType, ctx: OpContext) => Binary): OpDef {
  return {
    infer: (ctx) => [{ dtype: input(ctx, 0).dtype, shape: broadcastOrFail(ctx, [input(ctx, 0), input(ctx, 1)]) }],
    evaluate: (ctx, [a, b], [out]) => [mapBroadcast(out!.dtype, out!.shape, [a!, b!], fn(out!.dtype, ctx))],
  };
}

function predicate(fn: Binary): OpDef {
  return {
    infer: (ctx) => [{ dtype: 'bool', shape: broadcastOrFail(ctx, [input(ctx, 0), input(ctx, 1)]) }],
    evaluate: (_ctx, [a, b], [out]) => [mapBroadcast('bool', out!.shape, [a!, b!], fn)],
  };
}

function variadic(fn: (...v: number[]) => number): OpDef {
  return {
    infer: (ctx) => {
      const ins = presentInputs(ctx);
      return [{ dtype: input(ctx, 0).dtype, shape: broadcastOrFail(ctx, ins) }];
    },
    evaluate: (_ctx, ins, [out]) => [mapBroadcast(out!.dtype, out!.shape, ins, fn)],
  };
}

const divide = (dtype: DType): Binary => (isIntegerDType(dtype) ? (a, b) => Math.trunc(a / b) : (a, b) => a / b);

const modulo = (dtype: DType, ctx: OpContext): Binary => {
  if (attrInt(ctx.node, 'fmod', 0) === 1 || !isIntegerDType(dtype)) return (a, b) => a % b;
  return (a, b) => {
    const r = a % b;
    return r !== 0 && r < 0 !== b < 0 ? r + b : r;
  };
};

function clipBounds(ctx: OpContext, ins: readonly Tensor[]): [number, number] {
  if (ctx.opset < 11) {
    return [attrFloat(ctx.node, 'min', -Infinity), attrFloat(ctx.node, 'max', Infinity)];
  }
  const bound = (i: number, fallback: number): number => {
    if (!hasInput(ctx, i)) return fallback;
    const t = ins[i];
    const d = t === undefined ? undefined : nums(t);
    if (d === undefined || d.length !== 1) throw attrError(ctx, `Clip bound #${i} must be a scalar`);
    return d[0]!;
  };
  return [bound(1, -Infinity), bound(2, Infinity)];
}

const clip: OpDef = {
  infer: (ctx) => [input(ctx, 0)],
  evaluate: (ctx, ins, [out]) => {
    const [lo, hi] = clipBounds(ctx, ins);
    return [mapBroadcast(out!.dtype, out!.shape, [ins[0]!], (x) => Math.min(hi, Math.max(lo, x)))];
  },
};

const where: OpDef = {
  infer: (ctx) => [{ dtype: input(ctx, 1).dtype, shape: broadcastOrFail(ctx, [input(ctx, 0), input(ctx, 1), input(ctx, 2)]) }],
  evaluate: (_ctx, [c, x, y], [out]) => [mapBroadcast(out!.dtype, out!.shape, [c!, x!, y!], (cv, xv, yv) => (cv ? xv : yv))],
};

function castTarget(ctx: OpContext): DType {
  const code = attrInt(ctx.node, 'to', 0);
  const dtype = dtypeFromCode(code);
  if (dtype === undefined) throw attrError(ctx, `Cast target type code ${code} is not supported`);
  return dtype;
}

function castValues(t: Tensor, to: DType, shape: readonly number[]): Tensor {
  if (t.dtype === to) return t;
  return tensorOf(to, shape, nums(t));
}

const cast: OpDef = {
  infer: (ctx) => [{ dtype: castTarget(ctx), shape: input(ctx, 0).shape }],
  evaluate: (_ctx, [x], [out]) => [castValues(x!, out!.dtype, out!.shape)],
};

const castLike: OpDef = {
  infer: (ctx) => [{ dtype: input(ctx, 1).dtype, shape: input(ctx, 0).shape }],
  evaluate: (_ctx, [x], [out]) => [castValues(x!, out!.dtype, out!.shape)],
};

const identity: OpDef = { infer: (ctx) => [input(ctx, 0)], evaluate: (_ctx, [x]) => [x!] };

/** Dropout is the identity at inference; in training mode (opset 12 input #2) it is random. */
const dropout: OpDef = {
  infer: (ctx) => [input(ctx, 0), { dtype: 'bool', shape: input(ctx, 0).shape }],
  deterministic: (ctx) => !hasInput(ctx, 2) || (ctx.constants[2] !== undefined && nums(ctx.constants[2])[0] === 0),
  evaluate: (_ctx, [x], outs) => [
    x!,
    ...outs.slice(1).map((m) => tensorOf('bool', m.shape, new Uint8Array(m.shape.reduce((a, b) => a * b, 1)).fill(1))),
  ],
};

const not: OpDef = {
  infer: (ctx) => [{ dtype: 'bool', shape: input(ctx, 0).shape }],
  evaluate: (_ctx, [x], [out]) => [mapBroadcast('bool', out!.shape, [x!], (v) => (v ? 0 : 1))],
};

const isNaN: OpDef = {
  infer: (ctx) => [{ dtype: 'bool', shape: input(ctx, 0).shape }],
  evaluate: (_ctx, [x], [out]) => [mapBroadcast('bool', out!.shape, [x!], (v) => (Number.isNaN(v) ? 1 : 0))],
};

const prelu: OpDef = {
  infer: (ctx) => {
    const x = input(ctx, 0);
    const shape = broadcastOrFail(ctx, [x, input(ctx, 1)]);
    if (shape.length !== x.shape.length || shape.some((d, i) => d !== x.shape[i])) {
      throw shapeError(ctx, `slope shape ${formatShape(input(ctx, 1).shape)} does not broadcast to input ${formatShape(x.shape)}`);
    }
    return [x];
  },
  evaluate: (_ctx, [x, s], [out]) => [mapBroadcast(out!.dtype, out!.shape, [x!, s!], (v, a) => (v >= 0 ? v : a * v))],
};

export const elementwiseOps: Readonly<Record<string, OpDef>> = {
  ...Object.fromEntries(UNARY_OPS.map((op) => [op, unary])),
  Add: arithmetic(() => (a, b) => a + b),
  Sub: arithmetic(() => (a, b) => a - b),
  Mul: arithmetic(() => (a, b) => a * b),
  Div: arithmetic(divide),
  Pow: arithmetic(() => (a, b) => a ** b),
  Mod: arithmetic(modulo),
  Equal: predicate((a, b) => (a === b ? 1 : 0)),
  Less: predicate((a, b) => (a < b ? 1 : 0)),
  Greater: predicate((a, b) => (a > b ? 1 : 0)),
  LessOrEqual: predicate((a, b) => (a <= b ? 1 : 0)),
  GreaterOrEqual: predicate((a, b) => (a >= b ? 1 : 0)),
  And: predicate((a, b) => (a && b ? 1 : 0)),
  Or: predicate((a, b) => (a || b ? 1 : 0)),
  Xor: predicate((a, b) => ((a !== 0) !== (b !== 0) ? 1 : 0)),
  Min: variadic((...v) => Math.min(...v)),
  Max: variadic((...v) => Math.max(...v)),
  Sum: variadic((...v) => v.reduce((a, b) => a + b, 0)),
  Mean: variadic((...v) => v.reduce((a, b) => a + b, 0) / v.length),
  Where: where,
  Clip: clip,
  Cast: cast,
  CastLike: castLike,
  Identity: identity,
  Dropout: dropout,
  Not: not,
  IsNaN: isNaN,
  PRelu: prelu,
};
