/**
 * Static post-training quantization: a float ONNX model and calibration inputs in, a standard QDQ
 * model out (per-channel symmetric s8 weights, u8 activations). Calibration runs the float model in
 * ONNX Runtime with every activation the plan quantizes exposed as an output, so the ranges come from
 * the same arithmetic users deploy; ONNX Runtime is loaded only here, when a model is quantized.
 */
import onnxProto from 'onnx-proto';
import { decodeModel } from '../onnx/decode.js';
import { inferModel } from '../onnx/infer.js';
import type { Tensor, TensorData } from '../onnx/model.js';
import { dtypeCode } from '../onnx/dtype.js';
import { quoteForMessage, userError } from '../errors.js';
import { seededFloats } from '../random.js';
import type { HostTensor } from '../runtime/host-tensor.js';
import { isMissingOrt, missingOrt, ortInstalled } from '../ort/available.js';
import { planQuantization, type QuantPlan } from './plan.js';
import { activationQuant, rangeCollector, type CalibrationMethod } from './ranges.js';
import { writeQdq, type ActivationQuant } from './write-qdq.js';
import { foldBatchNorms } from './fold-batchnorm.js';

const { onnx } = onnxProto;

export type CalibrationSample = Readonly<Record<string, HostTensor>>;

export interface QuantizeOptions {
  readonly method: CalibrationMethod;
  /** For `percentile`: the upper percentile kept (the lower is 100 − it). */
  readonly percentile?: number;
  readonly samples: readonly CalibrationSample[];
}

export interface QuantizeResult {
  readonly bytes: Uint8Array;
  readonly activations: number;
  readonly weights: number;
  readonly biases: number;
  /** BatchNormalizations folded into the Conv before them ahead of quantization. */
  readonly batchNormsFolded: number;
  readonly samples: number;
}

const QUANTIZED_OPS = new Set([
  'QuantizeLinear',
  'DequantizeLinear',
  'QLinearConv',
  'QLinearMatMul',
  'ConvInteger',
  'MatMulInteger',
  'DynamicQuantizeLinear',
]);

/** N deterministic inputs: float inputs seeded like the benchmark feeds (sample 0 equals them), others zero; symbolic dims as 1. */
export function generatedSamples(
  inputs: readonly { name: string; dtype: string; shape: readonly (number | string)[] | undefined }[],
  n: number,
): CalibrationSample[] {
  return Array.from({ length: n }, (_, s) =>
    Object.fromEntries(
      inputs.map((t, i) => {
        const shape = (t.shape ?? []).map((d) => (typeof d === 'number' && d > 0 ? d : 1));
        const count = shape.reduce((a, b) => a * b, 1);
        if (t.dtype !== 'float32')
          throw userError(
            'BAD_INPUT',
            `model input ${quoteForMessage(t.name)} is ${t.dtype}; --generated makes float32 inputs only`,
            'calibrate with --calibrate DIR instead',
          );
        return [t.name, { dtype: 'float32' as const, shape, data: seededFloats(count, 100 + i + 7919 * s) }];
      }),
    ),
  );
}

function refuseQuantized(file: string, nodes: readonly { opType: string; name: string }[]): void {
  const q = nodes.find((n) => QUANTIZED_OPS.has(n.opType) || n.opType.startsWith('QLinear'));
  if (q !== undefined)
    throw userError(
      'BAD_INPUT',
      `${quoteForMessage(file, 200)} is already quantized (node ${quoteForMessage(q.name)} is ${q.opType})`,
      'quantize the float model it came from',
    );
}

async function calibrate(bytes: Uint8Array, plan: QuantPlan, o: QuantizeOptions): Promise<Map<string, ActivationQuant>> {
  if (!ortInstalled()) throw missingOrt('veltair quantize calibrates through ONNX Runtime');
  let ortRoom: typeof import('../ort/run-model.js');
  try {
    ortRoom = await import('../ort/run-model.js');
  } catch (e) {
    if (isMissingOrt(e)) throw missingOrt('veltair quantize calibrates through ONNX Runtime');
    throw e;
  }
  const m = onnx.ModelProto.decode(bytes);
  const outputs = new Set((m.graph!.output ?? []).map((v) => v.name ?? ''));
  for (const a of plan.activations)
    if (!outputs.has(a)) m.graph!.output!.push({ name: a, type: { tensorType: { elemType: dtypeCode('float32') } } });
  const runner = await ortRoom.openOrtSession(onnx.ModelProto.encode(m).finish());
  const ranges = rangeCollector(o.method, o.percentile);
  try {
    for (const sample of o.samples) {
      const got = await runner.run(sample, plan.activations);
      for (const a of plan.activations) ranges.add(a, got[a]!.data as Float32Array);
    }
  } finally {
    await runner.close();
  }
  return new Map(plan.activations.map((a) => [a, activationQuant(...ranges.range(a))]));
}

export async function quantizeModel(original: Uint8Array, file: string, o: QuantizeOptions): Promise<QuantizeResult> {
  refuseQuantized(file, decodeModel(original, file).graph.nodes);
  const { bytes, folded } = foldBatchNorms(original);
  const model = decodeModel(bytes, file);
  const opset = model.opsetImports.get('') ?? 0;
  if (opset < 13)
    throw userError(
      'UNSUPPORTED_OPSET',
      `${quoteForMessage(file, 200)} declares ai.onnx opset ${opset}; per-channel QuantizeLinear/DequantizeLinear need opset 13 or newer`,
      're-export the model at opset 13+ (torch.onnx.export(..., opset_version=17)) or convert it with onnx.version_converter',
    );
  if (o.samples.length === 0)
    throw userError('BAD_ARGUMENT', 'no calibration inputs', 'pass --calibrate DIR with at least one input, or --generated N with N ≥ 1');
  const first = o.samples[0]!;
  const inferred = inferModel(model, { inputShapes: new Map(Object.entries(first).map(([k, t]) => [k, t.shape])) });
  const plan = planQuantization(inferred);
  if (plan.weights.length === 0)
    throw userError(
      'BAD_INPUT',
      `${quoteForMessage(file, 200)} has no Conv, MatMul or Gemm with a constant float weight to quantize`,
      'veltair quantizes the weights of Conv, MatMul and Gemm layers',
    );
  const activation = await calibrate(bytes, plan, o);
  // A folded-constant bias (plan.ts BiasPlan.reader) is read from what inference folded.
  const init = (name: string): Tensor => model.graph.initializers.get(name) ?? inferred.constants.get(name)!;
  const out = writeQdq(
    onnx.ModelProto.decode(bytes),
    plan,
    activation,
    (n) => floats(init(n).data),
    (n) => init(n).dims,
  );
  return {
    bytes: out,
    activations: plan.activations.length,
    weights: plan.weights.length,
    biases: plan.biases.length,
    batchNormsFolded: folded,
    samples: o.samples.length,
  };
}

function floats(d: TensorData): Float32Array {
  return d instanceof Float32Array ? d : Float32Array.from(d as ArrayLike<number>);
}
