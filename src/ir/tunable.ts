/**
 * The tunable cores: Conv → conv2d, MatMul by a constant 2-D (or 1-D) weight → dense, MatMul of two
 * activations → batch_matmul. Choices, documented once here:
 *  - Conv weights (and bias) must be constants: a conv whose weight is computed at run time is
 *    rejected (UNSUPPORTED_OPS), since every kernel veltair generates packs its weight ahead of time.
 *  - 1-D Conv is a 2-D conv with H = 1 (weight viewed as O×I×1×K; same bytes); 3-D Conv is rejected.
 *  - MatMul whose constant is on the LEFT, whose constant is not 2-D/1-D, or whose activation
 *    operands truly broadcast batch dims stays a non-tunable `matmul` layer with its exact MACs.
 *  - Only float32 layers are tunable; a non-float MatMul is a `matmul` layer, a non-float Conv is
 *    rejected.
 */
import type { OnnxNode, Tensor } from '../onnx/model.js';
import { attrInt, attrInts, nodeLabel } from '../onnx/attributes.js';
import { userError } from '../errors.js';
import type { LayerDraft } from './draft.js';
import { resolveWindow } from './spatial.js';
import { isConstant, shapeOf, soleConsumer, type GraphIndex, type WorkGraph } from './work-graph.js';

function product(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

function asFloat32(t: Tensor, dims: readonly number[]): Tensor {
  const data = t.data instanceof Float32Array ? t.data : new Float32Array(t.data as Exclude<typeof t.data, string[]>);
  return { dtype: 'float32', dims: [...dims], data };
}

function unsupported(node: OnnxNode, what: string, hint: string): Error {
  return userError('UNSUPPORTED_OPS', `${nodeLabel(node)}: ${what}`, hint);
}

export function lowerConv(g: WorkGraph, node: OnnxNode, position: number): LayerDraft {
  const [x = '', w = '', b = ''] = node.inputs;
  const y = node.outputs[0] ?? '';
  const xs = shapeOf(g, x);
  const ys = shapeOf(g, y);
  const weight = g.constants.get(w);
  const dtype = g.types.get(y)?.dtype ?? 'float32';
  if (xs.length !== 3 && xs.length !== 4) {
    throw unsupported(node, `${xs.length - 2}-D convolution is not supported`, 'veltair compiles 1-D and 2-D convolutions');
  }
  if (weight === undefined) {
    throw unsupported(
      node,
      'the weight is computed at run time, not a constant initializer',
      'export the model with constant folding (torch.onnx.export(..., do_constant_folding=True)) so conv weights are initializers',
    );
  }
  if (b !== '' && !isConstant(g, b)) {
    throw unsupported(
      node,
      'the bias is computed at run time, not a constant initializer',
      'export the model with constant folding so conv biases are initializers',
    );
  }
  if (dtype !== 'float32') {
    throw unsupported(node, `convolution in ${dtype}`, 'veltair compiles float32 convolutions; convert the model to float32');
  }
  const groups = attrInt(node, 'group', 1);
  const [cout = 0, cinPerGroup = 0] = weight.dims;
  if (xs[1] !== cinPerGroup * groups || cout % groups !== 0) {
    throw userError(
      'SHAPE_MISMATCH',
      `${nodeLabel(node)}: input has ${xs[1]} channels but the weight [${weight.dims.join('x')}] with group=${groups} expects ${cinPerGroup * groups}`,
      'the model is inconsistent; check that it was exported from a working network',
    );
  }
  const kernel = attrInts(node, 'kernel_shape') ?? weight.dims.slice(2);
  const win = resolveWindow(node, xs.slice(2), ys.slice(2), kernel);
  const oneD = xs.length === 3;
  // 1-D: lift to 2-D with a unit H axis so a single conv2d kernel family covers both.
  const lift = (v: readonly number[], unit: number): number[] => (oneD ? [unit, ...v] : [...v]);
  const [kh, kw] = lift(win.kernel, 1) as [number, number];
  const [sh, sw] = lift(win.strides, 1) as [number, number];
  const [dh, dw] = lift(win.dilations, 1) as [number, number];
  const pads = (oneD ? [0, win.pads[0]!, 0, win.pads[1]!] : [...win.pads]) as [number, number, number, number];
  const [h, wd] = lift(xs.slice(2), 1) as [number, number];
  const [oh, ow] = lift(ys.slice(2), 1) as [number, number];
  const params: Record<string, Tensor> = { weight: asFloat32(weight, [cout, cinPerGroup, kh, kw]) };
  const epilogue: LayerDraft['epilogue'] = [];
  if (b !== '') {
    params.bias = asFloat32(g.constants.get(b)!, [cout]);
    epilogue.push({ kind: 'bias' });
  }
  return {
    name: node.name,
    op: 'conv2d',
    inputs: [x],
    outputs: [y],
    dtype,
    position,
    params,
    epilogue,
    attrs: { groups, kernel: [kh, kw], strides: [sh, sw], pads, dilations: [dh, dw] },
    core: {
      op: 'conv2d',
      dtype: 'float32',
      n: xs[0]!,
      cin: xs[1]!,
      h,
      w: wd,
      cout,
      kh,
      kw,
      strideH: sh,
      strideW: sw,
      pads,
      dilationH: dh,
      dilationW: dw,
      groups,
      oh,
      ow,
    },
    macs: 0,
  };
}

/** A MatMul that is not tunable: exact MACs = output elements × reduction length. */
function plainMatmul(g: WorkGraph, node: OnnxNode, position: number): LayerDraft {
  const [a = '', b = ''] = node.inputs;
  const y = node.outputs[0] ?? '';
  const as = shapeOf(g, a);
  const params: Record<string, Tensor> = {};
  if (isConstant(g, a)) params.A = g.constants.get(a)!;
  if (isConstant(g, b)) params.B = g.constants.get(b)!;
  return {
    name: node.name,
    op: 'matmul',
    inputs: [a, b].filter((v) => !isConstant(g, v)),
    outputs: [y],
    dtype: g.types.get(y)?.dtype ?? 'float32',
    attrs: {},
    params,
    epilogue: [],
    position,
    core: undefined,
    macs: product(shapeOf(g, y)) * (as[as.length - 1] ?? 1),
  };
}

function lowerDense(g: WorkGraph, node: OnnxNode, weight: Tensor, position: number): LayerDraft {
  const [a = ''] = node.inputs;
  const y = node.outputs[0] ?? '';
  const as = shapeOf(g, a);
  const k = as[as.length - 1]!;
  const n = weight.dims.length === 2 ? weight.dims[1]! : 1;
  return {
    name: node.name,
    op: 'dense',
    inputs: [a],
    outputs: [y],
    dtype: 'float32',
    attrs: {},
    params: { weight: asFloat32(weight, [k, n]) },
    epilogue: [],
    position,
    core: { op: 'dense', dtype: 'float32', m: product(as.slice(0, -1)), k, n },
    macs: 0,
  };
}

/** B = Transpose(S) swapping only the last two axes, read by nothing else: read S as Bᵀ instead. */
function transposedSource(g: WorkGraph, ix: GraphIndex, b: string, matmul: OnnxNode): OnnxNode | undefined {
  const t = ix.producer.get(b);
  if (t === undefined || t.domain !== '' || t.opType !== 'Transpose' || soleConsumer(g, ix, b) !== matmul) return undefined;
  const perm = attrInts(t, 'perm');
  const r = shapeOf(g, b).length;
  if (perm === undefined || perm.length !== r || r < 2) return undefined;
  const swapsLastTwo = perm.every((p, i) => (i < r - 2 ? p === i : p === (i === r - 2 ? r - 1 : r - 2)));
  return swapsLastTwo && !isConstant(g, t.inputs[0] ?? '') ? t : undefined;
}

function broadcastBatch(a: readonly number[], b: readonly number[]): number[] {
  const r = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < r; i++) {
    const da = a[a.length - r + i] ?? 1;
    const db = b[b.length - r + i] ?? 1;
    out.push(da === 1 ? db : da);
  }
  return out;
}

/**
 * Lower a MatMul; `consumed` collects a Transpose folded in as transB. Returns the draft; the caller
 * runs epilogue fusion on tunable ones.
 */
export function lowerMatMul(g: WorkGraph, ix: GraphIndex, node: OnnxNode, position: number, consumed: Set<OnnxNode>): LayerDraft {
  const [a = '', b = ''] = node.inputs;
  const y = node.outputs[0] ?? '';
  if (g.types.get(y)?.dtype !== 'float32' || isConstant(g, a)) return plainMatmul(g, node, position);
  const weight = g.constants.get(b);
  if (weight !== undefined) {
    return weight.dims.length <= 2 ? lowerDense(g, node, weight, position) : plainMatmul(g, node, position);
  }
  const as = shapeOf(g, a);
  const transpose = transposedSource(g, ix, b, node);
  const bSource = transpose === undefined ? b : transpose.inputs[0]!;
  const bs = shapeOf(g, b);
  if (as.length < 2 || bs.length < 2) return plainMatmul(g, node, position);
  const aBatch = as.slice(0, -2);
  const bBatch = bs.slice(0, -2);
  const [m, k] = as.slice(-2) as [number, number];
  const n = bs[bs.length - 1]!;
  let batch: number;
  let rows = m;
  if (bBatch.length === 0) {
    // One B for every batch entry: the batch folds into the rows of A.
    batch = 1;
    rows = product(aBatch) * m;
  } else {
    batch = product(broadcastBatch(aBatch, bBatch));
    if (product(aBatch) !== batch || product(bBatch) !== batch) return plainMatmul(g, node, position);
  }
  if (transpose !== undefined) consumed.add(transpose);
  return {
    name: node.name,
    op: 'batch_matmul',
    inputs: [a, bSource],
    outputs: [y],
    dtype: 'float32',
    attrs: { transB: transpose === undefined ? 0 : 1 },
    params: {},
    epilogue: [],
    position,
    core: { op: 'batch_matmul', dtype: 'float32', batch, m: rows, k, n, transB: transpose !== undefined },
    macs: 0,
  };
}
