/**
 * Exporter patterns recognised before lowering, each replaced by one node:
 *  - decomposed LayerNorm (PyTorch < opset 17, TF): ReduceMean → Sub → Pow(2) | Mul(d,d) →
 *    ReduceMean → Add(eps) → Sqrt → Div [→ Mul(γ)] [→ Add(β)]  ⇒  LayerNormalization(x, γ, β)
 *  - GELU, erf form: x · 0.5 · (1 + Erf(x/√2)) in the three association orders exporters emit  ⇒
 *    veltair.Gelu(x); tanh form: 0.5·x·(1 + Tanh(√(2/π)·(x + 0.044715·x³)))  ⇒  veltair.GeluTanh(x)
 *  - SiLU / Swish: x · Sigmoid(x)  ⇒  veltair.Silu(x)
 *  - HardSwish as PyTorch exports it below opset 14: x · HardSigmoid(x, α=1/6, β=0.5)  ⇒  HardSwish(x)
 * A pattern only matches when every constant is the exact one of the formula (to float32 rounding)
 * and no value inside it is read from outside: a near miss stays as ordinary layers.
 */
import type { OnnxNode } from '../onnx/model.js';
import { attrInt, attrInts } from '../onnx/attributes.js';
import {
  VELTAIR_DOMAIN,
  addConstant,
  consumersOf,
  float32Tensor,
  indexGraph,
  isConstant,
  numbers,
  otherOperand,
  replaceNodes,
  scalarConstant,
  shapeOf,
  soleConsumer,
  synthNode,
  type GraphIndex,
  type WorkGraph,
} from './work-graph.js';

interface Match {
  readonly nodes: readonly OnnxNode[];
  /** Deferred so that a match dropped for overlapping another registers no derived constants. */
  readonly replacement: () => OnnxNode;
}

type Matcher = (g: WorkGraph, ix: GraphIndex, anchor: OnnxNode) => Match | undefined;

/** Constants in exported graphs are float32-rounded; compare at that precision. */
function near(v: number | undefined, want: number): boolean {
  return v !== undefined && Math.abs(v - want) <= 1e-6 + 1e-5 * Math.abs(want);
}

function isOp(n: OnnxNode | undefined, op: string): n is OnnxNode {
  return n !== undefined && n.domain === '' && n.opType === op;
}

/** The sole reader of `v` when it is the binary `op` with the other operand a constant ≈ want. */
function constantStep(g: WorkGraph, ix: GraphIndex, v: string, op: string, want: number): OnnxNode | undefined {
  const n = soleConsumer(g, ix, v);
  if (!isOp(n, op)) return undefined;
  const other = otherOperand(n, v);
  if (op === 'Sub' || op === 'Div' || op === 'Pow') {
    if (n.inputs[0] !== v) return undefined;
  }
  return near(scalarConstant(g, other), want) ? n : undefined;
}

function out(n: OnnxNode): string {
  return n.outputs[0] ?? '';
}

// ---------------------------------------------------------------- LayerNorm

/** Normalised trailing axes of a keepdims ReduceMean, as the first axis; undefined otherwise. */
function trailingReduceAxis(g: WorkGraph, n: OnnxNode, rank: number): number | undefined {
  if (attrInt(n, 'keepdims', 1) !== 1) return undefined;
  const fromInput = n.inputs[1] !== undefined && n.inputs[1] !== '' ? g.constants.get(n.inputs[1]) : undefined;
  const raw = fromInput !== undefined ? [...numbers(fromInput)] : attrInts(n, 'axes');
  if (raw === undefined || raw.length === 0) return undefined;
  const axes = raw.map((a) => (a < 0 ? a + rank : a)).sort((a, b) => a - b);
  return axes.every((a, i) => a === rank - axes.length + i) ? axes[0] : undefined;
}

/** γ or β as a float32 tensor over the normalised dims, when the constant broadcasts only there. */
function affineParam(g: WorkGraph, v: string | undefined, normDims: readonly number[]): Float32Array | undefined {
  const t = v === undefined ? undefined : g.constants.get(v);
  if (t === undefined || Array.isArray(t.data)) return undefined;
  const count = normDims.reduce((a, b) => a * b, 1);
  const values = numbers(t);
  if (values.length === 1) return new Float32Array(count).fill(values[0]!);
  const dims = [...t.dims];
  while (dims.length > normDims.length && dims[0] === 1) dims.shift();
  if (dims.length !== normDims.length || dims.some((d, i) => d !== normDims[i])) return undefined;
  return Float32Array.from(values);
}

const matchLayerNorm: Matcher = (g, ix, r1) => {
  if (!isOp(r1, 'ReduceMean')) return undefined;
  const x = r1.inputs[0] ?? '';
  const shape = shapeOf(g, x);
  const axis = trailingReduceAxis(g, r1, shape.length);
  if (axis === undefined) return undefined;
  const sub = soleConsumer(g, ix, out(r1));
  if (!isOp(sub, 'Sub') || sub.inputs[0] !== x || sub.inputs[1] !== out(r1)) return undefined;
  const d = out(sub);
  if (g.graphOutputs.has(d)) return undefined;
  const readers = [...new Set(consumersOf(ix, d))];
  if (readers.length !== 2 || consumersOf(ix, d).length !== (readers.some((n) => isOp(n, 'Mul')) ? 3 : 2)) return undefined;
  const square = readers.find(
    (n) =>
      (isOp(n, 'Pow') && n.inputs[0] === d && near(scalarConstant(g, n.inputs[1]), 2)) ||
      (isOp(n, 'Mul') && n.inputs[0] === d && n.inputs[1] === d),
  );
  const div = readers.find((n) => isOp(n, 'Div') && n.inputs[0] === d);
  if (square === undefined || div === undefined) return undefined;
  const r2 = soleConsumer(g, ix, out(square));
  if (!isOp(r2, 'ReduceMean') || trailingReduceAxis(g, r2, shape.length) !== axis) return undefined;
  const addEps = soleConsumer(g, ix, out(r2));
  if (!isOp(addEps, 'Add')) return undefined;
  const epsilon = scalarConstant(g, otherOperand(addEps, out(r2)));
  if (epsilon === undefined || !(epsilon > 0)) return undefined;
  const sqrt = soleConsumer(g, ix, out(addEps));
  if (!isOp(sqrt, 'Sqrt') || soleConsumer(g, ix, out(sqrt)) !== div || div.inputs[1] !== out(sqrt)) return undefined;
  const nodes = [r1, sub, square, r2, addEps, sqrt, div];
  const normDims = shape.slice(axis);
  let y = out(div);
  let gamma: Float32Array | undefined;
  let beta: Float32Array | undefined;
  const mul = soleConsumer(g, ix, y);
  if (isOp(mul, 'Mul') && (gamma = affineParam(g, otherOperand(mul, y), normDims)) !== undefined) {
    nodes.push(mul);
    y = out(mul);
  }
  const add = soleConsumer(g, ix, y);
  if (isOp(add, 'Add') && (beta = affineParam(g, otherOperand(add, y), normDims)) !== undefined) {
    nodes.push(add);
    y = out(add);
  }
  const count = normDims.reduce((a, b) => a * b, 1);
  return {
    nodes,
    replacement: () => {
      const gammaName = addConstant(g, y, 'gamma', float32Tensor(normDims, gamma ?? new Float32Array(count).fill(1)));
      const betaName = addConstant(g, y, 'beta', float32Tensor(normDims, beta ?? new Float32Array(count)));
      return synthNode(r1.name, 'LayerNormalization', [x, gammaName, betaName], [y], {
        axis: { kind: 'int', value: axis },
        epsilon: { kind: 'float', value: epsilon },
      });
    },
  };
};

// ---------------------------------------------------------------- GELU

/**
 * The common tail of both GELU forms: given `x` and `a` = (1 + f(x)), find x·a·0.5 in any
 * association: (x·a)·0.5, (x·0.5)·a, x·(a·0.5).
 */
function geluProduct(g: WorkGraph, ix: GraphIndex, x: string, a: string): { nodes: OnnxNode[]; y: string } | undefined {
  const m1 = soleConsumer(g, ix, a);
  if (!isOp(m1, 'Mul')) return undefined;
  const other = otherOperand(m1, a);
  if (other === x) {
    const m2 = constantStep(g, ix, out(m1), 'Mul', 0.5);
    return m2 === undefined ? undefined : { nodes: [m1, m2], y: out(m2) };
  }
  if (near(scalarConstant(g, other), 0.5)) {
    const m2 = soleConsumer(g, ix, out(m1));
    return isOp(m2, 'Mul') && otherOperand(m2, out(m1)) === x ? { nodes: [m1, m2], y: out(m2) } : undefined;
  }
  const half = other === undefined ? undefined : ix.producer.get(other);
  if (
    isOp(half, 'Mul') &&
    otherOperand(half, x) !== undefined &&
    near(scalarConstant(g, otherOperand(half, x)), 0.5) &&
    soleConsumer(g, ix, other ?? '') === m1
  ) {
    return { nodes: [half, m1], y: out(m1) };
  }
  return undefined;
}

const matchGeluErf: Matcher = (g, ix, erf) => {
  if (!isOp(erf, 'Erf')) return undefined;
  const t = erf.inputs[0] ?? '';
  const scale = ix.producer.get(t);
  if (scale === undefined || soleConsumer(g, ix, t) !== erf) return undefined;
  let x: string | undefined;
  if (isOp(scale, 'Div') && near(scalarConstant(g, scale.inputs[1]), Math.SQRT2)) x = scale.inputs[0];
  if (isOp(scale, 'Mul')) {
    const [p, q] = scale.inputs;
    if (near(scalarConstant(g, q), Math.SQRT1_2)) x = p;
    else if (near(scalarConstant(g, p), Math.SQRT1_2)) x = q;
  }
  if (x === undefined || isConstant(g, x)) return undefined;
  const add = constantStep(g, ix, out(erf), 'Add', 1);
  if (add === undefined) return undefined;
  const tail = geluProduct(g, ix, x, out(add));
  if (tail === undefined) return undefined;
  return {
    nodes: [scale, erf, add, ...tail.nodes],
    replacement: () => synthNode(erf.name, 'Gelu', [x], [tail.y], {}, VELTAIR_DOMAIN),
  };
};

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

const matchGeluTanh: Matcher = (g, ix, tanh) => {
  if (!isOp(tanh, 'Tanh')) return undefined;
  const u = tanh.inputs[0] ?? '';
  const scale = ix.producer.get(u);
  if (!isOp(scale, 'Mul') || soleConsumer(g, ix, u) !== tanh) return undefined;
  const inner = scale.inputs.find((v) => !isConstant(g, v)) ?? '';
  if (!near(scalarConstant(g, otherOperand(scale, inner)), SQRT_2_OVER_PI)) return undefined;
  const sum = ix.producer.get(inner);
  if (!isOp(sum, 'Add') || soleConsumer(g, ix, inner) !== scale) return undefined;
  for (const [x, cubicTerm] of [
    [sum.inputs[0], sum.inputs[1]],
    [sum.inputs[1], sum.inputs[0]],
  ] as const) {
    const coef = ix.producer.get(cubicTerm ?? '');
    if (!isOp(coef, 'Mul') || soleConsumer(g, ix, cubicTerm ?? '') !== sum) continue;
    const cube = coef.inputs.find((v) => !isConstant(g, v)) ?? '';
    const pow = ix.producer.get(cube);
    if (!near(scalarConstant(g, otherOperand(coef, cube)), 0.044715) || !isOp(pow, 'Pow')) continue;
    if (pow.inputs[0] !== x || !near(scalarConstant(g, pow.inputs[1]), 3) || soleConsumer(g, ix, cube) !== coef) continue;
    const add = constantStep(g, ix, out(tanh), 'Add', 1);
    const tail = add === undefined ? undefined : geluProduct(g, ix, x ?? '', out(add));
    if (add === undefined || tail === undefined) return undefined;
    return {
      nodes: [pow, coef, sum, scale, tanh, add, ...tail.nodes],
      replacement: () => synthNode(tanh.name, 'GeluTanh', [x ?? ''], [tail.y], {}, VELTAIR_DOMAIN),
    };
  }
  return undefined;
};

// ---------------------------------------------------------------- SiLU

const matchSilu: Matcher = (g, ix, sigmoid) => {
  if (!isOp(sigmoid, 'Sigmoid')) return undefined;
  const x = sigmoid.inputs[0] ?? '';
  const mul = soleConsumer(g, ix, out(sigmoid));
  if (!isOp(mul, 'Mul') || otherOperand(mul, out(sigmoid)) !== x) return undefined;
  return { nodes: [sigmoid, mul], replacement: () => synthNode(mul.name, 'Silu', [x], [out(mul)], {}, VELTAIR_DOMAIN) };
};

// ---------------------------------------------------------------- HardSwish

const matchHardSwish: Matcher = (g, ix, gate) => {
  if (!isOp(gate, 'HardSigmoid')) return undefined;
  // ONNX defaults (alpha 0.2, beta 0.5) apply when an attribute is absent: PyTorch writes only alpha.
  const alpha = gate.attributes.get('alpha');
  const beta = gate.attributes.get('beta');
  const a = alpha === undefined ? 0.2 : alpha.kind === 'float' ? alpha.value : NaN;
  const b = beta === undefined ? 0.5 : beta.kind === 'float' ? beta.value : NaN;
  if (!near(a, 1 / 6) || !near(b, 0.5)) return undefined;
  const x = gate.inputs[0] ?? '';
  const mul = soleConsumer(g, ix, out(gate));
  if (!isOp(mul, 'Mul') || otherOperand(mul, out(gate)) !== x) return undefined;
  return { nodes: [gate, mul], replacement: () => synthNode(mul.name, 'HardSwish', [x], [out(mul)], {}) };
};

/** Apply one matcher everywhere (non-overlapping matches), then re-index for the next. */
function applyMatcher(g: WorkGraph, matcher: Matcher): void {
  const ix = indexGraph(g);
  const taken = new Set<OnnxNode>();
  const matches: Match[] = [];
  for (const n of g.nodes) {
    if (taken.has(n)) continue;
    const m = matcher(g, ix, n);
    if (m === undefined || m.nodes.some((k) => taken.has(k))) continue;
    m.nodes.forEach((k) => taken.add(k));
    matches.push(m);
  }
  for (const m of matches) replaceNodes(g, new Set(m.nodes), [m.replacement()]);
}

export function recognisePatterns(g: WorkGraph): void {
  for (const matcher of [matchLayerNorm, matchGeluErf, matchGeluTanh, matchSilu, matchHardSwish]) applyMatcher(g, matcher);
}
