/**
 * What a per-operator rule sees: the node, the opset it is interpreted under, the static types of
 * its inputs and, where known at compile time, their values. Rules return output types; evaluators
 * (constant folding) return output tensors.
 */
import type { DType, OnnxNode, Tensor, ValueType } from '../model.js';
import { nodeLabel } from '../attributes.js';
import { quoteForMessage, userError } from '../../errors.js';

export interface OpContext {
  readonly node: OnnxNode;
  /** The ai.onnx opset version the model imports. */
  readonly opset: number;
  /** undefined where an optional input is omitted (''). */
  readonly inputs: readonly (ValueType | undefined)[];
  /** Values known at compile time (initializers, Constant nodes, folded results). */
  readonly constants: readonly (Tensor | undefined)[];
}

export type ShapeRule = (ctx: OpContext) => ValueType[];
export type Evaluator = (ctx: OpContext, inputs: readonly Tensor[], outTypes: readonly ValueType[]) => Tensor[];

export interface OpDef {
  readonly infer: ShapeRule;
  readonly evaluate?: Evaluator;
  /** The evaluator needs only input types, not values (Shape, Size): folds even on run-time inputs. */
  readonly foldsFromTypes?: boolean;
  /** Multiply-adds a fold would cost (MatMul of two constants): above the front end's limit the node is not folded. */
  readonly foldWork?: (ctx: OpContext) => number;
  /** Whether this node may be folded at all (Dropout in training mode is random). */
  readonly deterministic?: (ctx: OpContext) => boolean;
}

export function shapeError(ctx: OpContext, what: string): Error {
  return userError(
    'SHAPE_MISMATCH',
    `${nodeLabel(ctx.node)}: ${what}`,
    "the model's shapes are inconsistent; check the input shapes you pinned with --input-shape, or re-export the model",
  );
}

export function attrError(ctx: OpContext, what: string): Error {
  return userError(
    'BAD_ATTRIBUTE',
    `${nodeLabel(ctx.node)}: ${what}`,
    'the model file is malformed; check it with onnx.checker.check_model or re-export it',
  );
}

export function input(ctx: OpContext, i: number): ValueType {
  const t = ctx.inputs[i];
  if (t === undefined) {
    throw userError(
      'MISSING_INPUT',
      `${nodeLabel(ctx.node)}: required input #${i} is missing`,
      'the model file is malformed; re-export it or check it with onnx.checker.check_model',
    );
  }
  return t;
}

export function hasInput(ctx: OpContext, i: number): boolean {
  return ctx.inputs[i] !== undefined;
}

/** Integer values of an input that decides a shape (Reshape target, Slice bounds…); must be constant. */
export function constInts(ctx: OpContext, i: number, role: string): number[] {
  const t = ctx.constants[i];
  if (t === undefined) {
    const name = ctx.node.inputs[i] ?? '';
    throw userError(
      'DYNAMIC_SHAPE',
      `${nodeLabel(ctx.node)}: its ${role} (input ${quoteForMessage(name)}) is computed at run time, so the output shape is not static`,
      'veltair compiles static shapes; pin every symbolic input dimension with --input-shape NAME=1x3x224x224 so shape sub-graphs fold',
    );
  }
  if (Array.isArray(t.data)) throw attrError(ctx, `its ${role} is a string tensor`);
  return Array.from(t.data as ArrayLike<number>, (v) => Math.trunc(v));
}

export function constScalar(ctx: OpContext, i: number, role: string): number {
  const t = ctx.constants[i];
  if (t === undefined) {
    constInts(ctx, i, role);
  }
  const data = (t as Tensor).data;
  if (Array.isArray(data) || data.length !== 1) throw attrError(ctx, `its ${role} must be a single number`);
  return (data as ArrayLike<number>)[0]!;
}

/** Normalise a possibly negative axis against a rank, naming the node when out of range. */
export function normAxis(ctx: OpContext, axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank || !Number.isInteger(a)) throw attrError(ctx, `axis ${axis} is out of range for rank ${rank}`);
  return a;
}

export function same(t: ValueType): ValueType {
  return { dtype: t.dtype, shape: t.shape };
}

export function typed(dtype: DType, shape: readonly number[]): ValueType {
  return { dtype, shape };
}
