/**
 * Every node that is not a tunable core becomes a non-tunable layer named for its op (lower-case
 * ONNX op type; `gelu`/`silu` for recognised patterns). Constant operands that steer the op (axes,
 * pads, Slice bounds, Clip bounds, …) become attributes; constant data operands become params keyed
 * by their ONNX input name. View ops carry their static target shape and no params.
 *
 * Op count (`macs`) convention for non-tunable layers, a rough measure of their arithmetic:
 *  - elementwise ops (arithmetic, activations, comparisons, Where, Resize): one per output element;
 *  - sliding-window pooling: window size × output elements;
 *  - reductions and normalisations (GlobalAveragePool, Reduce*, Softmax, LayerNorm, BatchNorm…):
 *    one per input element;
 *  - pure data movement (Reshape, Transpose, Concat, Split, Slice, Gather, Pad, Expand, Cast,
 *    veltair.ChannelGather…): 0.
 */
import type { OnnxNode, Tensor } from '../onnx/model.js';
import { attrInt, attrInts } from '../onnx/attributes.js';
import type { AttrValue, LayerDraft } from './draft.js';
import { activationOf } from './fuse.js';
import { isViewOp } from './simplify.js';
import { resolveWindow } from './spatial.js';
import { VELTAIR_DOMAIN, numbers, shapeOf, type WorkGraph } from './work-graph.js';

const REDUCE_AXES_OPS = [
  'ReduceMean',
  'ReduceSum',
  'ReduceMax',
  'ReduceMin',
  'ReduceProd',
  'ReduceL1',
  'ReduceL2',
  'ReduceSumSquare',
  'ReduceLogSumExp',
];

const INPUT_NAMES: Readonly<Record<string, readonly string[]>> = {
  BatchNormalization: ['X', 'scale', 'B', 'input_mean', 'input_var'],
  LayerNormalization: ['X', 'Scale', 'B'],
  InstanceNormalization: ['input', 'scale', 'B'],
  Clip: ['input', 'min', 'max'],
  Gather: ['data', 'indices'],
  GatherElements: ['data', 'indices'],
  Where: ['condition', 'X', 'Y'],
  Reshape: ['data', 'shape'],
  Expand: ['input', 'shape'],
  Tile: ['input', 'repeats'],
  Slice: ['data', 'starts', 'ends', 'axes', 'steps'],
  Pad: ['data', 'pads', 'constant_value', 'axes'],
  Split: ['input', 'split'],
  Squeeze: ['data', 'axes'],
  Unsqueeze: ['data', 'axes'],
  Resize: ['X', 'roi', 'scales', 'sizes'],
  PRelu: ['X', 'slope'],
  TopK: ['X', 'K'],
  ...Object.fromEntries(REDUCE_AXES_OPS.map((op) => [op, ['data', 'axes']])),
};

/** Inputs whose constant values configure the op rather than feed it data: these become attrs. */
const CONTROL_INPUTS: ReadonlySet<string> = new Set([
  'shape',
  'repeats',
  'starts',
  'ends',
  'axes',
  'steps',
  'pads',
  'constant_value',
  'split',
  'min',
  'max',
  'roi',
  'scales',
  'sizes',
  'K',
]);

const ELEMENTWISE: ReadonlySet<string> = new Set([
  'Add',
  'Sub',
  'Mul',
  'Div',
  'Pow',
  'Sqrt',
  'Exp',
  'Log',
  'Neg',
  'Abs',
  'Reciprocal',
  'Floor',
  'Ceil',
  'Round',
  'Sign',
  'Sin',
  'Cos',
  'Erf',
  'Relu',
  'Clip',
  'LeakyRelu',
  'Sigmoid',
  'HardSigmoid',
  'HardSwish',
  'Tanh',
  'Elu',
  'Selu',
  'Softplus',
  'PRelu',
  'Gelu',
  'Where',
  'Equal',
  'Less',
  'Greater',
  'LessOrEqual',
  'GreaterOrEqual',
  'Not',
  'And',
  'Or',
  'Max',
  'Min',
  'Sum',
  'Mean',
  'Resize',
  'Mod',
]);

const PER_INPUT_ELEMENT: ReadonlySet<string> = new Set([
  'GlobalAveragePool',
  'GlobalMaxPool',
  'Softmax',
  'LogSoftmax',
  'LayerNormalization',
  'BatchNormalization',
  'InstanceNormalization',
  'LpNormalization',
  'ArgMax',
  'ArgMin',
  'TopK',
  ...REDUCE_AXES_OPS,
]);

const DEFAULTS: Readonly<Record<string, Readonly<Record<string, AttrValue>>>> = {
  BatchNormalization: { epsilon: 1e-5 },
  LayerNormalization: { axis: -1, epsilon: 1e-5 },
  InstanceNormalization: { epsilon: 1e-5 },
  LeakyRelu: { alpha: 0.01 },
  HardSigmoid: { alpha: 0.2, beta: 0.5 },
  Elu: { alpha: 1 },
  Flatten: { axis: 1 },
  Gather: { axis: 0 },
  Split: { axis: 0 },
  LogSoftmax: { axis: -1 },
  Gelu: { approximate: 'none' },
  TopK: { axis: -1, largest: 1, sorted: 1 },
};

function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function opName(n: OnnxNode): string {
  if (n.domain === VELTAIR_DOMAIN) return n.opType === 'GeluTanh' ? 'gelu' : n.opType.toLowerCase();
  return n.opType.toLowerCase();
}

function plainAttrs(n: OnnxNode): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const [k, a] of n.attributes) {
    if (a.kind === 'int' || a.kind === 'float' || a.kind === 'string' || a.kind === 'ints' || a.kind === 'floats') out[k] = a.value;
  }
  return out;
}

function tensorAttr(t: Tensor): AttrValue {
  const v = [...numbers(t)];
  return t.dims.length === 0 ? v[0]! : v;
}

/** Negative axes made positive against `rank`; lists sorted. */
function normaliseAxes(attrs: Record<string, AttrValue>, key: string, rank: number): void {
  const v = attrs[key];
  if (typeof v === 'number') attrs[key] = v < 0 ? v + rank : v;
  else if (Array.isArray(v)) attrs[key] = v.map((a: number) => (a < 0 ? a + rank : a)).sort((a: number, b: number) => a - b);
}

function opCount(g: WorkGraph, n: OnnxNode, outShape: readonly number[], attrs: Record<string, AttrValue>): number {
  if (n.domain === VELTAIR_DOMAIN && n.opType === 'ChannelGather') return 0;
  if (n.domain === VELTAIR_DOMAIN || ELEMENTWISE.has(n.opType)) return elementCount(outShape);
  if (n.opType === 'MaxPool' || n.opType === 'AveragePool' || n.opType === 'LpPool') {
    return elementCount(outShape) * elementCount(attrs.kernel as readonly number[]);
  }
  if (PER_INPUT_ELEMENT.has(n.opType)) return elementCount(shapeOf(g, n.inputs[0] ?? ''));
  return 0;
}

function poolAttrs(g: WorkGraph, n: OnnxNode, attrs: Record<string, AttrValue>): void {
  const xs = shapeOf(g, n.inputs[0] ?? '');
  const ys = shapeOf(g, n.outputs[0] ?? '');
  const kernel = (attrs.kernel_shape as readonly number[] | undefined) ?? [];
  const win = resolveWindow(n, xs.slice(2), ys.slice(2), kernel, attrInt(n, 'ceil_mode', 0) !== 0);
  delete attrs.auto_pad;
  delete attrs.kernel_shape;
  Object.assign(attrs, { kernel: win.kernel, strides: win.strides, pads: win.pads, dilations: win.dilations });
}

/** ReduceMean / ReduceMax over exactly the spatial axes of a rank-4 value: a global pool (same values, same bytes). */
function globalPoolOf(g: WorkGraph, n: OnnxNode, opset: number): string | undefined {
  if (n.domain !== '' || (n.opType !== 'ReduceMean' && n.opType !== 'ReduceMax')) return undefined;
  const x = n.inputs[0] ?? '';
  const rank = shapeOf(g, x).length;
  const fromInput = n.inputs[1] !== undefined && n.inputs[1] !== '' ? g.constants.get(n.inputs[1]) : undefined;
  const raw = fromInput !== undefined ? [...numbers(fromInput)] : opset < 18 ? attrInts(n, 'axes') : undefined;
  if (rank !== 4 || raw === undefined) return undefined;
  const axes = raw.map((a) => (a < 0 ? a + rank : a)).sort();
  if (axes.length !== 2 || axes[0] !== 2 || axes[1] !== 3) return undefined;
  return n.opType === 'ReduceMean' ? 'globalaveragepool' : 'globalmaxpool';
}

export function lowerGeneric(g: WorkGraph, n: OnnxNode, position: number, opset: number): LayerDraft {
  const pool = globalPoolOf(g, n, opset);
  if (pool !== undefined) {
    const x = n.inputs[0] ?? '';
    return {
      name: n.name,
      op: pool,
      inputs: [x],
      outputs: [n.outputs[0] ?? ''],
      dtype: g.types.get(x)?.dtype ?? 'float32',
      attrs: {},
      params: {},
      epilogue: [],
      position,
      core: undefined,
      macs: elementCount(shapeOf(g, x)),
    };
  }
  const y = n.outputs[0] ?? '';
  const outShape = shapeOf(g, y);
  const inRank = shapeOf(g, n.inputs[0] ?? y).length;
  const attrs: Record<string, AttrValue> = { ...(n.domain === '' ? DEFAULTS[n.opType] : {}), ...plainAttrs(n) };
  const params: Record<string, Tensor> = {};
  const inputs: string[] = [];
  const names = INPUT_NAMES[n.opType] ?? (n.inputs.length === 2 ? ['A', 'B'] : []);
  const view = isViewOp(n);
  n.inputs.forEach((v, slot) => {
    if (v === '') return;
    const constant = g.constants.get(v);
    if (constant === undefined) {
      inputs.push(v);
      return;
    }
    if (view) return;
    const name = names[slot] ?? `input${slot}`;
    if (CONTROL_INPUTS.has(name) && !Array.isArray(constant.data)) attrs[name] = tensorAttr(constant);
    else params[name] = constant;
  });
  if (view) attrs.shape = [...outShape];
  if ((n.opType === 'Softmax' || n.opType === 'LogSoftmax') && n.domain === '') {
    // Before opset 13 these flattened the input to 2-D at `axis` (default 1): the same result as a
    // per-axis softmax only when that axis is the last one, whether the axis was given or not.
    if (attrs.axis === undefined) attrs.axis = opset >= 13 ? -1 : 1;
    const axis = attrs.axis as number;
    if (opset < 13 && (axis < 0 ? axis + inRank : axis) !== inRank - 1) attrs.coerce2d = 1;
  }
  if (n.opType === 'Transpose' && attrs.perm === undefined) attrs.perm = [...Array(inRank).keys()].reverse();
  if (n.opType === 'MaxPool' || n.opType === 'AveragePool' || n.opType === 'LpPool') poolAttrs(g, n, attrs);
  if (n.opType === 'Clip' || n.domain === VELTAIR_DOMAIN) {
    const act = activationOf(g, n);
    if (act?.fn === 'clip') Object.assign(attrs, { min: act.min, max: act.max });
    if (act?.fn === 'gelu' || act?.fn === 'gelu_tanh') attrs.approximate = act.fn === 'gelu' ? 'none' : 'tanh';
  }
  normaliseAxes(attrs, 'axis', inRank);
  normaliseAxes(attrs, 'axes', n.opType === 'Unsqueeze' ? outShape.length : inRank);
  return {
    name: n.name,
    op: opName(n),
    inputs,
    outputs: n.outputs.filter((v) => v !== ''),
    dtype: g.types.get(y)?.dtype ?? 'float32',
    attrs,
    params,
    epilogue: [],
    position,
    core: undefined,
    macs: opCount(g, n, outShape, attrs),
  };
}
