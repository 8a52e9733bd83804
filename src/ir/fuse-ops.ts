/**
 * Fusion of the non-tunable layers (after the tunable cores took their epilogues), in the spirit
 * of TVM's FuseOps over the injective ops:
 *  1. A BatchNormalization (or a per-channel affine) that could not fold into a producer conv folds
 *     into its consumer conv instead, when that conv is its only reader and pads nothing (a padded
 *     border would see the shift that the zeros never had): W'[o,c] = W[o,c]·a[c],
 *     b'[o] = b[o] + Σ W[o,c]·s[c].
 *  2. Chains of elementwise layers, each the only reader of the one before, run as one
 *     `elementwise_chain` layer: batch norm / affine, activations, binaries against a constant
 *     (scalar or per-channel), a same-shaped value or a per-channel gate (squeeze-excite). The
 *     chain's attr `program` lists its steps (see chainProgram), its params are p0, p1, ….
 * Channels are axis 1 everywhere (rank ≥ 2). Pure rewriting of drafts: the layers' order and every
 * value another layer or the graph reads stay as they were.
 */
import type { Tensor } from '../onnx/model.js';
import type { LayerDraft } from './draft.js';
import { float32Tensor, numbers, shapeOf, type WorkGraph } from './work-graph.js';

const UNARY_STEPS: ReadonlySet<string> = new Set([
  'relu',
  'clip',
  'leakyrelu',
  'sigmoid',
  'hardsigmoid',
  'hardswish',
  'silu',
  'tanh',
  'gelu',
  'erf',
  'exp',
  'neg',
]);
const BINARY_STEPS: ReadonlySet<string> = new Set(['add', 'sub', 'mul', 'div', 'max', 'min']);

const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/** One chain step before it is numbered into a program. */
type Piece =
  | { readonly kind: 'affine'; readonly scale: Float32Array; readonly shift: Float32Array }
  | { readonly kind: 'unary'; readonly token: string }
  | {
      readonly kind: 'binary';
      readonly fn: string;
      readonly reversed: boolean;
      readonly operand: { readonly value: string } | { readonly param: Tensor };
    };

interface Elementwise {
  readonly main: string;
  readonly piece: Piece;
}

/** A constant that varies at most along axis 1 of `out` (or is a scalar), as one float per channel (or one). */
function channelValues(t: Tensor, out: readonly number[]): Float32Array | undefined {
  if (Array.isArray(t.data) || t.dims.length > out.length) return undefined;
  const values = numbers(t);
  if (values.length === 1) return Float32Array.from(values);
  const dims = [...Array(out.length - t.dims.length).fill(1), ...t.dims] as number[];
  const ok = dims.every((d, i) => d === 1 || (i === 1 && d === out[1]));
  return ok && values.length === out[1] ? Float32Array.from(values) : undefined;
}

/** [N|1, C, 1, …] against [N, C, …]: one value per (batch, channel). */
function isGate(gate: readonly number[], out: readonly number[]): boolean {
  return gate.length === out.length && gate[1] === out[1] && (gate[0] === 1 || gate[0] === out[0]) && gate.slice(2).every((d) => d === 1);
}

const fmt = (x: number) => String(Number(x));

function unaryToken(d: LayerDraft): string | undefined {
  const a = d.attrs;
  switch (d.op) {
    case 'clip':
      return `clip(${fmt(Number(a['min'] ?? -3.4028234663852886e38))},${fmt(Number(a['max'] ?? 3.4028234663852886e38))})`;
    case 'leakyrelu':
      return `leakyrelu(${fmt(Number(a['alpha'] ?? 0.01))})`;
    case 'hardsigmoid':
      return `hardsigmoid(${fmt(Number(a['alpha'] ?? 0.2))},${fmt(Number(a['beta'] ?? 0.5))})`;
    case 'gelu':
      return a['approximate'] === 'tanh' ? 'gelu_tanh' : 'gelu';
    default:
      return UNARY_STEPS.has(d.op) ? d.op : undefined;
  }
}

/** Inference BatchNormalization as y = x·a + s per channel (float64, rounded once). */
function batchNormAffine(d: LayerDraft): Piece | undefined {
  const p = d.params;
  if (Number(d.attrs['training_mode'] ?? 0) !== 0 || !p['scale'] || !p['B'] || !p['input_mean'] || !p['input_var']) return undefined;
  const [gamma, beta, mean, variance] = [p['scale'], p['B'], p['input_mean'], p['input_var']].map((t) => numbers(t!));
  const eps = Number(d.attrs['epsilon'] ?? 1e-5);
  const c = gamma!.length;
  if (![beta, mean, variance].every((v) => v!.length === c)) return undefined;
  const scale = new Float32Array(c),
    shift = new Float32Array(c);
  for (let i = 0; i < c; i++) {
    const k = gamma![i]! / Math.sqrt(variance![i]! + eps);
    scale[i] = k;
    shift[i] = beta![i]! - mean![i]! * k;
  }
  return { kind: 'affine', scale, shift };
}

/** The draft as one elementwise step over its main input, or undefined when it is not one. */
function asElementwise(g: WorkGraph, d: LayerDraft): Elementwise | undefined {
  if (d.core !== undefined || d.dtype !== 'float32' || d.outputs.length !== 1 || d.epilogue.length > 0) return undefined;
  const out = shapeOf(g, d.outputs[0]!);
  if (out.length < 2) return undefined;
  const acts = d.inputs;
  const params = Object.entries(d.params);
  if (d.op === 'batchnormalization') {
    const piece = acts.length === 1 && same(shapeOf(g, acts[0]!), out) ? batchNormAffine(d) : undefined;
    return piece && piece.kind === 'affine' && piece.scale.length === out[1] ? { main: acts[0]!, piece } : undefined;
  }
  const token = unaryToken(d);
  if (token !== undefined) {
    return acts.length === 1 && params.length === 0 && same(shapeOf(g, acts[0]!), out)
      ? { main: acts[0]!, piece: { kind: 'unary', token } }
      : undefined;
  }
  if (!BINARY_STEPS.has(d.op)) return undefined;
  if (acts.length === 1 && params.length === 1 && same(shapeOf(g, acts[0]!), out)) {
    const [name, t] = params[0]!;
    const values = channelValues(t, out);
    if (values === undefined) return undefined;
    const param = float32Tensor([values.length], values);
    return { main: acts[0]!, piece: { kind: 'binary', fn: d.op, reversed: name === 'A', operand: { param } } };
  }
  if (acts.length !== 2 || params.length !== 0) return undefined;
  const [a, b] = [shapeOf(g, acts[0]!), shapeOf(g, acts[1]!)];
  if (same(a, out) && (same(b, out) || isGate(b, out)))
    return { main: acts[0]!, piece: { kind: 'binary', fn: d.op, reversed: false, operand: { value: acts[1]! } } };
  if (same(b, out) && isGate(a, out))
    return { main: acts[1]!, piece: { kind: 'binary', fn: d.op, reversed: true, operand: { value: acts[0]! } } };
  return undefined;
}

/** The same step with `main` as its data input (a two-value binary whose other operand is `main`). */
function withMain(g: WorkGraph, d: LayerDraft, e: Elementwise, main: string): Elementwise | undefined {
  if (e.main === main) return e;
  const out = shapeOf(g, d.outputs[0]!);
  if (e.piece.kind !== 'binary' || !('value' in e.piece.operand) || e.piece.operand.value !== main || !same(shapeOf(g, main), out))
    return undefined;
  return { main, piece: { ...e.piece, reversed: !e.piece.reversed, operand: { value: e.main } } };
}

interface Chain {
  readonly members: LayerDraft[];
  readonly input: string;
  readonly pieces: Piece[];
}

/** Every read of a value by a draft (inputs and epilogue operands) or by the graph's outputs. */
function readCounts(g: WorkGraph, drafts: readonly LayerDraft[]): Map<string, number> {
  const n = new Map<string, number>();
  const read = (v: string) => n.set(v, (n.get(v) ?? 0) + 1);
  for (const d of drafts) {
    for (const v of d.inputs) read(v);
    for (const s of d.epilogue) if (s.kind === 'residual_add' || s.kind === 'channel_mul') read(s.value);
  }
  for (const v of g.graphOutputs) read(v);
  return n;
}

/**
 * The chain's steps as text: `;`-separated, each `affine(pI,pJ)`, a unary (`relu`, `clip(lo,hi)`,
 * `leakyrelu(a)`, `hardsigmoid(a,b)`, `gelu`, `gelu_tanh`, …) or a binary `fn(REF)` / `fn_rev(REF)`
 * (REF op y) with REF `inK` (the chain's K-th activation input) or `pK` (param pK).
 */
function chainDraft(c: Chain): LayerDraft {
  const inputs = [c.input];
  const params: Record<string, Tensor> = {};
  const addParam = (t: Tensor) => {
    const name = `p${Object.keys(params).length}`;
    params[name] = t;
    return name;
  };
  const tokens = c.pieces.map((p) => {
    if (p.kind === 'affine')
      return `affine(${addParam(float32Tensor([p.scale.length], p.scale))},${addParam(float32Tensor([p.shift.length], p.shift))})`;
    if (p.kind === 'unary') return p.token;
    let ref: string;
    if ('param' in p.operand) ref = addParam(p.operand.param);
    else {
      let k = inputs.indexOf(p.operand.value);
      if (k < 0) {
        k = inputs.length;
        inputs.push(p.operand.value);
      }
      ref = `in${k}`;
    }
    return `${p.fn}${p.reversed ? '_rev' : ''}(${ref})`;
  });
  const last = c.members[c.members.length - 1]!;
  return {
    name: c.members[0]!.name,
    op: 'elementwise_chain',
    inputs,
    outputs: last.outputs,
    dtype: 'float32',
    attrs: { program: tokens.join(';'), fused: c.members.map((m) => m.op).join('+') },
    params,
    epilogue: [],
    position: last.position,
    core: undefined,
    macs: c.members.reduce((s, m) => s + m.macs, 0),
  };
}

/**
 * Fold a batch-norm / affine draft into the conv that is its only reader (pads all zero). Returns
 * the drafts without the folded ones.
 */
function foldIntoConsumers(g: WorkGraph, drafts: LayerDraft[]): LayerDraft[] {
  const reads = readCounts(g, drafts);
  const consumer = new Map<string, LayerDraft>();
  for (const d of drafts) for (const v of d.inputs) consumer.set(v, d);
  const folded = new Set<LayerDraft>();
  const replaced = new Map<LayerDraft, LayerDraft>();
  for (const d of drafts) {
    const e = asElementwise(g, d);
    if (!e || e.piece.kind !== 'affine' || reads.get(d.outputs[0]!) !== 1) continue;
    const conv = consumer.get(d.outputs[0]!);
    const core = conv?.core;
    if (!conv || !core || core.op !== 'conv2d' || conv.inputs[0] !== d.outputs[0] || replaced.has(conv)) continue;
    if (core.pads.some((p) => p !== 0) || !conv.epilogue.every((s, i) => (i === 0 ? true : s.kind !== 'bias'))) continue;
    replaced.set(conv, foldAffine(conv, e.main, e.piece.scale, e.piece.shift));
    folded.add(d);
  }
  return drafts.filter((d) => !folded.has(d)).map((d) => replaced.get(d) ?? d);
}

/** conv(x·a + s) = conv'(x): each weight of input channel c scaled by a[c]; each output's bias gains Σ W·s. */
function foldAffine(conv: LayerDraft, input: string, scale: Float32Array, shift: Float32Array): LayerDraft {
  const core = conv.core!;
  if (core.op !== 'conv2d') return conv;
  const w = conv.params['weight']!.data as Float32Array;
  const cinG = core.cin / core.groups,
    coutG = core.cout / core.groups,
    taps = core.kh * core.kw;
  const out = new Float32Array(w.length);
  const bias = new Float64Array(core.cout);
  if (conv.params['bias']) bias.set(numbers(conv.params['bias']));
  for (let o = 0; o < core.cout; o++) {
    const grp = Math.floor(o / coutG);
    for (let ci = 0; ci < cinG; ci++) {
      const c = grp * cinG + ci;
      for (let t = 0; t < taps; t++) {
        const at = (o * cinG + ci) * taps + t;
        out[at] = w[at]! * scale[c]!;
        bias[o]! += w[at]! * shift[c]!;
      }
    }
  }
  const epilogue = conv.epilogue.some((s) => s.kind === 'bias') ? [...conv.epilogue] : [{ kind: 'bias' as const }, ...conv.epilogue];
  return {
    ...conv,
    inputs: [input, ...conv.inputs.slice(1)],
    epilogue,
    params: {
      ...conv.params,
      weight: { dtype: 'float32', dims: conv.params['weight']!.dims, data: out },
      bias: float32Tensor([core.cout], bias),
    },
  };
}

export function fuseNonTunable(g: WorkGraph, input: LayerDraft[]): LayerDraft[] {
  const drafts = foldIntoConsumers(
    g,
    [...input].sort((a, b) => a.position - b.position),
  );
  const reads = readCounts(g, drafts);
  const chainOf = new Map<string, Chain>();
  const chains: Chain[] = [];
  for (const d of drafts) {
    const e = asElementwise(g, d);
    if (!e) continue;
    // Join the chain that produced one of this layer's inputs, if this layer is that value's only reader.
    const joinable = d.inputs
      .map((v) => ({ v, chain: chainOf.get(v) }))
      .find((x) => x.chain && reads.get(x.v) === 1 && !g.graphOutputs.has(x.v));
    const step = joinable ? withMain(g, d, e, joinable.v) : undefined;
    if (joinable && step) {
      const chain = joinable.chain!;
      chain.members.push(d);
      chain.pieces.push(step.piece);
      chainOf.delete(joinable.v);
      chainOf.set(d.outputs[0]!, chain);
      continue;
    }
    const chain: Chain = { members: [d], input: e.main, pieces: [e.piece] };
    chains.push(chain);
    chainOf.set(d.outputs[0]!, chain);
  }
  const replace = new Map<LayerDraft, LayerDraft | null>();
  for (const c of chains) {
    if (c.members.length < 2) continue;
    c.members.forEach((m, i) => replace.set(m, i === c.members.length - 1 ? chainDraft(c) : null));
  }
  const out: LayerDraft[] = [];
  for (const d of drafts) {
    const r = replace.get(d);
    if (r === undefined) out.push(d);
    else if (r !== null) out.push(r);
  }
  return out;
}
