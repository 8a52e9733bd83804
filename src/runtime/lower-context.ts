/**
 * What a non-tunable layer's lowering sees: its operands in ONNX argument order (activations from
 * the arena and constants from the param table, interleaved as the ONNX node had them), its
 * outputs, and the plan step's layout. A lowering returns the native step's op, refs, ints and floats.
 */
import { userError, quoteForMessage } from '../errors.js';
import type { DType } from '../onnx/model.js';
import { parseLayout, type Layout } from '../bundle/layout.js';
import type { OpCode } from './ops.js';
import type { OutputOwner, ThreadSplit } from '../bundle/thread-split.js';
import type { Ref } from './native-plan.js';
import type { ParamData, RuntimeLayer } from './runtime-layer.js';

export interface Operand {
  readonly ref: Ref;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly layout: Layout;
  /** Bytes it spans (the plan value's size, or the param's). */
  readonly bytes: number;
  /** Set when the operand is a constant. */
  readonly param?: ParamData;
}

export interface OpContext {
  readonly layer: RuntimeLayer;
  readonly layout: Layout;
  readonly ins: readonly Operand[];
  readonly outs: readonly Operand[];
  /** Register a derived constant (folded batchnorm scales, broadcast gammas…). */
  addParam(data: ArrayBufferView): Ref;
  /** How the threads of the kernel that wrote ins[0] divided it (absent: one thread, or not a kernel's output). */
  readonly inputSplit?: ThreadSplit;
  /** With more than one thread: which thread wrote each part of activation input `i` (undefined: not a conv's output). */
  readonly inputOwners?: { readonly threads: number; of(i: number): OutputOwner | undefined };
}

export interface LoweredOp {
  readonly op: OpCode;
  readonly inputs: readonly Ref[];
  readonly outputs: readonly Ref[];
  readonly ints: readonly number[];
  readonly floats?: readonly number[];
}

export type Lowering = (c: OpContext) => LoweredOp;

export function unsupported(c: OpContext, why: string): never {
  throw userError(
    'UNSUPPORTED_OPS',
    `layer ${c.layer.index} (${c.layer.op} ${quoteForMessage(c.layer.name)}): ${why}`,
    'the native runtime cannot run this layer; re-export the model without it or run it with ONNX Runtime',
  );
}

export const attrNumber = (c: OpContext, key: string, fallback: number): number => {
  const v = c.layer.attrs[key];
  return typeof v === 'number' ? v : fallback;
};

export const attrList = (c: OpContext, key: string): readonly number[] | undefined => {
  const v = c.layer.attrs[key];
  if (Array.isArray(v)) return v as readonly number[];
  return typeof v === 'number' ? [v] : undefined;
};

/** NCHW[V]c geometry of a rank-4 operand (V = 1 on the natural layout). */
export function blockedGeometry(o: Operand): { n: number; c: number; h: number; w: number; v: number } {
  const p = parseLayout(o.layout);
  const [n = 1, c = 1, h = 1, w = 1] = o.shape.length === 3 ? [o.shape[0], o.shape[1], 1, o.shape[2]] : o.shape;
  return { n: n!, c: c!, h: h!, w: w!, v: p.kind === 'blocked' ? p.vec : 1 };
}

export const isBlocked = (l: Layout): boolean => parseLayout(l).kind === 'blocked';
