/**
 * The baseline for one layer: ONNX Runtime's latency for the same workload as a one-layer ONNX
 * model (the op plus its epilogue as ONNX nodes — ORT fuses Conv+Relu, Conv+Add+Relu, Gemm+bias and
 * the like itself), with the same thread count, random weights, timed like a veltair candidate:
 * one warm-up run, then repeats until a minimum time, median and all samples reported.
 *
 * Each sample includes the node binding's per-call overhead (JS → native, tensor wrapping, the
 * promise round trip). That overhead is measured separately on a one-Relu model whose output has
 * the layer's output size, and reported next to the raw figures — never silently subtracted. (Relu,
 * not Identity: an Identity between a graph input and output was seen to time bimodally in ORT 1.30,
 * so it measured something other than call overhead. The Relu's one pass over the output makes the
 * figure an upper bound on that overhead.)
 */
import * as ort from 'onnxruntime-node';
import { encodeModel, type NodeSpec, type ValueSpec } from '../onnx/encode.js';
import type { Tensor } from '../onnx/model.js';
import type { EpilogueKind, WorkloadShape } from '../ir/workload.js';
import { median } from '../stats.js';
import { seededFloats } from '../random.js';

export interface LayerModel {
  readonly bytes: Uint8Array;
  /** Graph inputs to feed (activations, residual, channel scale), with shapes. */
  readonly inputs: readonly { readonly name: string; readonly shape: readonly number[] }[];
  readonly outputShape: readonly number[];
  /** ONNX op types in graph order, for the report. */
  readonly opTypes: readonly string[];
}

export { seededFloats };

const tensor = (dims: readonly number[], seed: number): Tensor => ({
  dtype: 'float32',
  dims,
  data: seededFloats(
    dims.reduce((a, b) => a * b, 1),
    seed,
  ),
});
const scalar = (v: number): Tensor => ({ dtype: 'float32', dims: [], data: new Float32Array([v]) });

interface GraphParts {
  nodes: NodeSpec[];
  inits: [string, Tensor][];
  inputs: { name: string; shape: number[] }[];
}

/** The main op; returns its output name and shape. Bias goes into Conv/Gemm where ONNX allows. */
function mainOp(w: WorkloadShape, out: string, g: GraphParts): { shape: number[]; channels: number } {
  const bias = w.epilogue.includes('bias');
  switch (w.op) {
    case 'conv2d': {
      g.inputs.push({ name: 'x', shape: [w.n, w.cin, w.h, w.w] });
      g.inits.push(['weight', tensor([w.cout, w.cin / w.groups, w.kh, w.kw], 1)]);
      if (bias) g.inits.push(['bias', tensor([w.cout], 2)]);
      g.nodes.push({
        op: 'Conv',
        inputs: bias ? ['x', 'weight', 'bias'] : ['x', 'weight'],
        outputs: [out],
        attrs: {
          kernel_shape: [w.kh, w.kw],
          strides: [w.strideH, w.strideW],
          pads: [...w.pads],
          dilations: [w.dilationH, w.dilationW],
          group: w.groups,
        },
      });
      return { shape: [w.n, w.cout, w.oh, w.ow], channels: w.cout };
    }
    case 'dense': {
      g.inputs.push({ name: 'x', shape: [w.m, w.k] });
      g.inits.push(['weight', tensor([w.k, w.n], 1)]);
      if (bias) g.inits.push(['bias', tensor([w.n], 2)]);
      g.nodes.push(
        bias ? { op: 'Gemm', inputs: ['x', 'weight', 'bias'], outputs: [out] } : { op: 'MatMul', inputs: ['x', 'weight'], outputs: [out] },
      );
      return { shape: [w.m, w.n], channels: w.n };
    }
    case 'batch_matmul': {
      g.inputs.push({ name: 'a', shape: [w.batch, w.m, w.k] }, { name: 'b', shape: w.transB ? [w.batch, w.n, w.k] : [w.batch, w.k, w.n] });
      let rhs = 'b';
      if (w.transB) {
        g.nodes.push({ op: 'Transpose', inputs: ['b'], outputs: ['bt'], attrs: { perm: [0, 2, 1] } });
        rhs = 'bt';
      }
      g.nodes.push({ op: 'MatMul', inputs: ['a', rhs], outputs: [bias ? 'mm' : out] });
      if (bias) {
        g.inits.push(['bias', tensor([w.n], 2)]);
        g.nodes.push({ op: 'Add', inputs: ['mm', 'bias'], outputs: [out] });
      }
      return { shape: [w.batch, w.m, w.n], channels: w.n };
    }
  }
}

/**
 * One epilogue step as ONNX nodes. Parameters the workload does not carry use the values the IR's
 * fusions come from in practice: clip = ReLU6 [0, 6], leaky_relu alpha = 0.01 (ONNX default),
 * hard_sigmoid alpha 0.2 / beta 0.5 (ONNX defaults); gelu is the exact erf form (ORT fuses it).
 */
function epilogueNodes(
  kind: Exclude<EpilogueKind, 'bias'>,
  x: string,
  y: string,
  i: number,
  ctx: { op: WorkloadShape['op']; shape: number[]; channels: number },
  g: GraphParts,
): void {
  const c = (name: string, t: Tensor) => {
    g.inits.push([`${name}_${i}`, t]);
    return `${name}_${i}`;
  };
  const tmp = (name: string) => `${name}_${i}`;
  switch (kind) {
    case 'relu':
      g.nodes.push({ op: 'Relu', inputs: [x], outputs: [y] });
      return;
    case 'clip':
      g.nodes.push({ op: 'Clip', inputs: [x, c('lo', scalar(0)), c('hi', scalar(6))], outputs: [y] });
      return;
    case 'leaky_relu':
      g.nodes.push({ op: 'LeakyRelu', inputs: [x], outputs: [y], attrs: { alpha: { float: 0.01 } } });
      return;
    case 'sigmoid':
      g.nodes.push({ op: 'Sigmoid', inputs: [x], outputs: [y] });
      return;
    case 'hard_sigmoid':
      g.nodes.push({ op: 'HardSigmoid', inputs: [x], outputs: [y] });
      return;
    case 'hard_swish':
      g.nodes.push({ op: 'HardSwish', inputs: [x], outputs: [y] });
      return;
    case 'tanh':
      g.nodes.push({ op: 'Tanh', inputs: [x], outputs: [y] });
      return;
    case 'silu':
      g.nodes.push({ op: 'Sigmoid', inputs: [x], outputs: [tmp('sig')] }, { op: 'Mul', inputs: [x, tmp('sig')], outputs: [y] });
      return;
    case 'gelu':
      g.nodes.push(
        { op: 'Div', inputs: [x, c('sqrt2', scalar(Math.SQRT2))], outputs: [tmp('scaled')] },
        { op: 'Erf', inputs: [tmp('scaled')], outputs: [tmp('erf')] },
        { op: 'Add', inputs: [tmp('erf'), c('one', scalar(1))], outputs: [tmp('erf1')] },
        { op: 'Mul', inputs: [x, tmp('erf1')], outputs: [tmp('xerf')] },
        { op: 'Mul', inputs: [tmp('xerf'), c('half', scalar(0.5))], outputs: [y] },
      );
      return;
    case 'residual_add':
      g.inputs.push({ name: tmp('residual'), shape: ctx.shape });
      g.nodes.push({ op: 'Add', inputs: [x, tmp('residual')], outputs: [y] });
      return;
    case 'channel_mul': {
      // A per-channel scale computed at run time (squeeze-excite): a graph input, not a constant.
      const shape = ctx.op === 'conv2d' ? [ctx.shape[0]!, ctx.channels, 1, 1] : [ctx.channels];
      g.inputs.push({ name: tmp('scale'), shape });
      g.nodes.push({ op: 'Mul', inputs: [x, tmp('scale')], outputs: [y] });
      return;
    }
  }
}

export function buildLayerModel(w: WorkloadShape): LayerModel {
  const g: GraphParts = { nodes: [], inits: [], inputs: [] };
  const steps = w.epilogue.filter((k): k is Exclude<EpilogueKind, 'bias'> => k !== 'bias');
  const main = mainOp(w, steps.length === 0 ? 'y' : 't0', g);
  let current = 't0';
  steps.forEach((kind, i) => {
    const next = i === steps.length - 1 ? 'y' : `e${i}`;
    epilogueNodes(kind, current, next, i, { op: w.op, shape: main.shape, channels: main.channels }, g);
    current = next;
  });
  const spec = (name: string, shape: readonly number[]): ValueSpec => ({ name, dtype: 'float32', shape });
  const bytes = encodeModel({
    graphName: `veltair_${w.op}_baseline`,
    opset: 17,
    inputs: g.inputs.map((i) => spec(i.name, i.shape)),
    outputs: [spec('y', main.shape)],
    initializers: g.inits,
    nodes: g.nodes,
  });
  return { bytes, inputs: g.inputs, outputShape: main.shape, opTypes: g.nodes.map((n) => n.op) };
}

/** A Relu over a tensor of the layer's output size: what one run costs besides the op itself. */
function overheadModel(shape: readonly number[]): Uint8Array {
  const spec: ValueSpec = { name: 'x', dtype: 'float32', shape };
  return encodeModel({
    graphName: 'veltair_overhead',
    opset: 17,
    inputs: [spec],
    outputs: [{ ...spec, name: 'y' }],
    initializers: [],
    nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }],
  });
}

export interface OrtTimingOptions {
  readonly threads: number;
  /** Keep repeating until this many milliseconds of runs (default 100, the measurement protocol's floor). */
  readonly minMs?: number;
  readonly minRepeats?: number;
}

export interface OrtTiming {
  readonly medianMs: number;
  readonly samplesMs: readonly number[];
}

export interface OrtLayerTiming extends OrtTiming {
  readonly threads: number;
  readonly opTypes: readonly string[];
  /** Per-call binding overhead (upper bound), measured on a Relu of the same output size right after. */
  readonly overhead: OrtTiming & { readonly model: string };
  readonly ortVersion: string;
}

async function session(bytes: Uint8Array, threads: number): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(bytes, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
}

/**
 * The output is pre-allocated once and passed as a fetch, as veltair's harness writes into its own
 * buffer: otherwise every run would also time a fresh output allocation and the GC it provokes.
 */
async function timeSession(
  s: ort.InferenceSession,
  feeds: Record<string, ort.Tensor>,
  output: ort.Tensor,
  options: OrtTimingOptions,
): Promise<OrtTiming> {
  const minMs = options.minMs ?? 100;
  const minRepeats = options.minRepeats ?? 5;
  const fetches = { y: output };
  await s.run(feeds, fetches);
  const samplesMs: number[] = [];
  const start = process.hrtime.bigint();
  while (samplesMs.length < minRepeats || Number(process.hrtime.bigint() - start) / 1e6 < minMs) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds, fetches);
    samplesMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { medianMs: median(samplesMs), samplesMs };
}

const feedTensor = (shape: readonly number[], seed: number) =>
  new ort.Tensor(
    'float32',
    seededFloats(
      shape.reduce((a, b) => a * b, 1),
      seed,
    ),
    shape,
  );

/** ORT's latency for one layer, same threads, plus the per-call overhead to present beside it. */
export async function measureOrtLayer(w: WorkloadShape, options: OrtTimingOptions): Promise<OrtLayerTiming> {
  if (!Number.isInteger(options.threads) || options.threads < 1)
    throw new RangeError(`threads must be a positive integer, got ${options.threads}`);
  const model = buildLayerModel(w);
  const layer = await session(model.bytes, options.threads);
  const identity = await session(overheadModel(model.outputShape), options.threads);
  try {
    const feeds = Object.fromEntries(model.inputs.map((input, i) => [input.name, feedTensor(input.shape, 100 + i)]));
    const output = feedTensor(model.outputShape, 98);
    const timing = await timeSession(layer, feeds, output, options);
    const overhead = await timeSession(identity, { x: feedTensor(model.outputShape, 99) }, output, options);
    return {
      ...timing,
      threads: options.threads,
      opTypes: model.opTypes,
      overhead: { ...overhead, model: `Relu over a [${model.outputShape.join(',')}] float32 tensor` },
      ortVersion: ort.env.versions.node ?? 'unknown',
    };
  } finally {
    await layer.release();
    await identity.release();
  }
}
