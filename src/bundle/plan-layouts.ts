/**
 * Which layout a non-tunable layer runs in. A layer runs blocked (nchw{V}c) when one of its inputs
 * arrives blocked and the op has a blocked form, so blocked values flow through whole regions of
 * the graph and reorders appear only where a consumer has no blocked form:
 *  - unary activations, batch normalisation, elementwise chains (one pass over several ops);
 *  - binary add/sub/mul/div/max/min of same-shaped values, or of a value and a per-channel gate
 *    ([N|1, C, 1, 1]: squeeze-excite, channel bias) or a constant scalar / per-channel vector;
 *  - max/average pooling, and global pooling (written in the natural layout, [N][C], unless a
 *    blocked reader takes it: see globalPoolReadBlocked);
 *  - a Flatten/Reshape/Squeeze of a blocked [N, C, 1, 1] to [N, C] is a view in rows{V}: both put
 *    channel c of row n at n·roundUp(C, V) + c, padded channels zero (the pooled features a Gemm
 *    reads, when C is not a multiple of V);
 *  - channel concat, split and slice (any channel counts: unaligned ones become channel gathers),
 *    and channel gathers (a recognised channel shuffle, with the concat before and the split after);
 *  - transpose of a rank-4 value reads it blocked and writes the natural layout.
 * Blocked ops write zeros to padded channels (the kernel ABI's invariant).
 */
import type { Layer } from '../ir/layer.js';
import { smallCinInput } from '../space/problem.js';
import { blockedLayout, NATURAL, parseLayout, rowsLayout, type Layout } from './layout.js';

/** Unary ops whose native form runs on any float layout (padded lanes are re-zeroed). */
export const BLOCKED_UNARY: ReadonlySet<string> = new Set([
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
  'log',
  'sqrt',
  'neg',
  'abs',
  'reciprocal',
  'floor',
  'ceil',
  'round',
  'sin',
  'cos',
  'softplus',
  'elu',
  'selu',
  'sign',
]);
const POOLS: ReadonlySet<string> = new Set(['maxpool', 'averagepool', 'globalaveragepool', 'globalmaxpool']);
const BINARY: ReadonlySet<string> = new Set(['add', 'sub', 'mul', 'div', 'max', 'min']);
const CHANNEL_MOVES: ReadonlySet<string> = new Set(['concat', 'split', 'channelgather']);
const NATURAL_OUT: ReadonlySet<string> = new Set(['transpose', 'globalaveragepool', 'globalmaxpool']);
const GLOBAL_POOLS: ReadonlySet<string> = new Set(['globalaveragepool', 'globalmaxpool']);
/** Ops that only rename a value's shape: in place when the bytes agree. */
export const VIEW_OPS: ReadonlySet<string> = new Set(['reshape', 'flatten', 'squeeze', 'unsqueeze']);

export interface Needs {
  readonly layout: Layout;
  readonly inputs: readonly Layout[];
  readonly outputs: readonly Layout[];
}

const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/** [N|1, C, 1, 1] against a rank-4 [N, C, H, W]. */
export function isChannelGate(gate: readonly number[], full: readonly number[]): boolean {
  return gate.length === 4 && gate[1] === full[1] && gate[2] === 1 && gate[3] === 1 && (gate[0] === 1 || gate[0] === full[0]);
}

/** A constant operand a blocked binary can take: a scalar or one value per channel of a rank-4 output. */
export function isChannelConstant(dims: readonly number[], out: readonly number[]): boolean {
  const n = dims.reduce((a, b) => a * b, 1);
  if (n === 1 && dims.length <= 4) return true;
  if (dims.length > 4 || n !== out[1]) return false;
  const padded = [...Array(4 - dims.length).fill(1), ...dims] as number[];
  return padded[0] === 1 && padded[1] === out[1] && padded[2] === 1 && padded[3] === 1;
}

function binaryRunsBlocked(l: Layer): boolean {
  const out = l.outputShape;
  if (out.length !== 4) return false;
  const params = Object.values(l.params);
  if (l.inputShapes.length === 2 && params.length === 0) {
    const [a, b] = l.inputShapes as [readonly number[], readonly number[]];
    if (same(a, out) && (same(b, out) || isChannelGate(b, out))) return true;
    return same(b, out) && isChannelGate(a, out);
  }
  return l.inputShapes.length === 1 && params.length === 1 && same(l.inputShapes[0]!, out) && isChannelConstant(params[0]!.dims, out);
}

export function sliceOnChannels(l: Layer): boolean {
  const axes = l.attrs['axes'];
  const list = Array.isArray(axes) ? axes : typeof axes === 'number' ? [axes] : undefined;
  const steps = l.attrs['steps'];
  const stepList = Array.isArray(steps) ? steps : typeof steps === 'number' ? [steps] : [1];
  return list !== undefined && list.length === 1 && list[0] === 1 && stepList.every((s) => s === 1) && l.inputs.length === 1;
}

/** Can this non-tunable layer read and write nchw{V}c? */
export function runsBlocked(l: Layer): boolean {
  if (l.dtype !== 'float32' || l.inputShapes.some((s) => s.length !== 4) || l.inputShapes.length === 0) return false;
  if (!NATURAL_OUT.has(l.op) && l.outputShape.length !== 4) return false;
  if (l.op === 'elementwise_chain') return true;
  if (l.op === 'batchnormalization') return l.inputShapes.length === 1 && l.outputs.length === 1;
  if (l.op === 'transpose') return l.inputShapes.length === 1;
  const hasParams = Object.keys(l.params).length > 0;
  if (BLOCKED_UNARY.has(l.op) || POOLS.has(l.op)) return !hasParams && l.inputShapes.length === 1 && l.outputs.length === 1;
  if (BINARY.has(l.op)) return l.outputs.length === 1 && binaryRunsBlocked(l);
  if (CHANNEL_MOVES.has(l.op)) return !hasParams && l.attrs['axis'] === 1;
  if (l.op === 'slice') return !hasParams && sliceOnChannels(l);
  return false;
}

/** A view op from [N, C, 1, 1] to [N, C]: the same bytes in nchw{V}c and in rows{V}. */
export function isPooledRowsView(l: Layer): boolean {
  const input = l.inputShapes[0] ?? [];
  const [n, c, h, w] = input;
  const out = l.outputShape;
  return (
    VIEW_OPS.has(l.op) &&
    l.inputs.length === 1 &&
    l.outputs.length === 1 &&
    input.length === 4 &&
    h === 1 &&
    w === 1 &&
    out.length === 2 &&
    out[0] === n &&
    out[1] === c
  );
}

/**
 * Whether a global pool's [N, C, 1, 1] result has a blocked reader: a tunable layer (the conv of a
 * squeeze-excite), a binary that runs blocked (a channel gate), or — through a pooled-rows view —
 * a tunable dense (the classifier's Gemm). Then the pool writes nchw{V}c and nobody reorders;
 * otherwise [N][C], what natural readers (and graph outputs) take. The two agree byte for byte
 * when C is a multiple of V, so this only matters for channel counts off the vector grid.
 */
export function globalPoolReadBlocked(
  pooled: string,
  readersOf: (value: string) => readonly Layer[],
  isOutput: (value: string) => boolean,
): boolean {
  const blockedReader = (value: string): boolean =>
    !isOutput(value) &&
    readersOf(value).some(
      (r) => r.tunable || (BINARY.has(r.op) && runsBlocked(r)) || (isPooledRowsView(r) && blockedReader(r.outputs[0]!)),
    );
  return blockedReader(pooled);
}

export interface NeedsContext {
  /** The layout each input value was produced in. */
  readonly producedIn: (value: string) => Layout | undefined;
  /** Whether a global pool's output has a blocked reader (globalPoolReadBlocked); false when not given. */
  readonly poolReadBlocked?: (value: string) => boolean;
}

/**
 * The layouts a non-tunable layer reads and writes, given the layouts its inputs were produced
 * in: blocked at the width of the first blocked input when the op has a blocked form, else natural.
 */
export function nonTunableNeeds(l: Layer, ctx: NeedsContext): Needs {
  let vec = 0;
  for (const v of l.inputs) {
    const have = ctx.producedIn(v);
    const p = have === undefined ? undefined : parseLayout(have);
    if (p?.kind === 'blocked') {
      vec = p.vec;
      break;
    }
  }
  const natural = { layout: NATURAL, inputs: l.inputs.map(() => NATURAL), outputs: l.outputs.map(() => NATURAL) };
  if (vec > 1 && isPooledRowsView(l)) return { layout: rowsLayout(vec), inputs: [blockedLayout(vec)], outputs: [rowsLayout(vec)] };
  if (vec <= 1 || !runsBlocked(l)) return natural;
  const blocked = blockedLayout(vec);
  // Transposes and global pools read blocked and write the natural layout (their readers are rarely
  // blocked), but a global pool whose result a blocked reader takes writes it blocked: nchw{V}c, or
  // rows{V} (the same bytes) when its output is already [N, C] (a ReduceMean over H, W without keepdims).
  const blockedOut = GLOBAL_POOLS.has(l.op) ? (ctx.poolReadBlocked?.(l.outputs[0]!) ?? false) : !NATURAL_OUT.has(l.op);
  const out = !blockedOut ? NATURAL : l.outputShape.length === 4 ? blocked : rowsLayout(vec);
  return { layout: blocked, inputs: l.inputs.map(() => blocked), outputs: l.outputs.map(() => out) };
}

/**
 * Whether a tunable layer's kernels at width `vec` reduce over a plain NCHW copy of their input
 * (space/problem.ts smallCinInput: convs with at most 4 input channels). Those kernels export
 * `<sym>_run_nchw`, which reads that copy from the caller: the plan may then feed them the value
 * in the natural layout instead of reordering it to nchw{V}c for the kernel to gather back.
 */
export function readsNchw(l: Layer, vec: number): boolean {
  return l.tunable && l.dtype === 'float32' && l.workload !== undefined && smallCinInput(l.workload, vec);
}
