/**
 * A layer while it is being built: lowering creates it, epilogue fusion grows it, and finishLayer
 * freezes it into a Layer with its workload key, MACs and the overflow guard.
 */
import type { DType, Tensor } from '../onnx/model.js';
import type { EpilogueStep, Layer } from './layer.js';
import { withKey, workloadMacs, type EpilogueKind, type WorkloadShape } from './workload.js';
import { shapeOf, type WorkGraph } from './work-graph.js';
import { quoteForMessage, userError } from '../errors.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A tunable layer's workload before its epilogue is known. */
export type WorkloadCore = DistributiveOmit<WorkloadShape, 'epilogue'>;

export type AttrValue = number | string | readonly number[];

export interface LayerDraft {
  readonly name: string;
  readonly op: string;
  /** The op's own activation arguments; epilogue operands are appended by finishLayer. */
  readonly inputs: readonly string[];
  outputs: readonly string[];
  readonly dtype: DType;
  readonly attrs: Record<string, AttrValue>;
  readonly params: Record<string, Tensor>;
  readonly epilogue: EpilogueStep[];
  /** Index in the work graph of the last node this layer absorbed: its place in execution order. */
  position: number;
  readonly core: WorkloadCore | undefined;
  /** Op count of a non-tunable layer (see generic.ts for the convention). */
  readonly macs: number;
}

export function epilogueKind(step: EpilogueStep): EpilogueKind {
  return step.kind === 'activation' ? step.activation.fn : step.kind;
}

function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function overflow(d: LayerDraft, what: string): Error {
  return userError(
    'DIM_OVERFLOW',
    `node ${quoteForMessage(d.name)} (${d.op}): ${what} exceeds 2^53 and cannot be counted exactly`,
    "the model has absurd dimensions; check --input-shape and the model's declared shapes",
  );
}

export function finishLayer(g: WorkGraph, d: LayerDraft, index: number): Layer {
  const epilogueOperands = d.epilogue.flatMap((s) => (s.kind === 'residual_add' || s.kind === 'channel_mul' ? [s.value] : []));
  const inputs = [...d.inputs, ...epilogueOperands];
  const inputShapes = inputs.map((v) => shapeOf(g, v));
  const outputShape = shapeOf(g, d.outputs[0] ?? '');
  for (const s of [...inputShapes, outputShape]) {
    if (!Number.isSafeInteger(elementCount(s))) throw overflow(d, `a tensor of shape [${s.join('x')}]`);
  }
  const workload = d.core === undefined ? undefined : withKey({ ...d.core, epilogue: d.epilogue.map(epilogueKind) } as WorkloadShape);
  const macs = workload === undefined ? d.macs : workloadMacs(workload);
  if (!Number.isSafeInteger(macs)) throw overflow(d, `its multiply-accumulate count (${macs.toExponential(3)})`);
  return {
    index,
    name: d.name,
    op: d.op,
    inputs,
    outputs: d.outputs,
    inputShapes,
    outputShape,
    dtype: d.dtype,
    attrs: d.attrs,
    params: d.params,
    epilogue: d.epilogue,
    macs,
    tunable: workload !== undefined,
    workload,
  };
}
