/**
 * Shape inference and constant folding in one pass over the topologically ordered nodes. Every
 * value gets a static {dtype, shape}; a node whose inputs are all known at compile time (or, for
 * Shape/Size, whose input shapes are) is evaluated and disappears, so exporter shape sub-graphs
 * fold away before the layer IR sees the model.
 */
import type { DequantizedConstant, InferredModel, OnnxModel, OnnxNode, Tensor, ValueType } from './model.js';
import { attrInt, nodeLabel } from './attributes.js';
import { opDefinition } from './ops/registry.js';
import type { OpContext, OpDef } from './ops/context.js';
import { checkedElementCount, formatShape, product, sameShape } from './shapes.js';
import { checkInputsProduced, checkOperatorsSupported, topologicalOrder } from './validate.js';
import { resolveInputTypes, type InputShapes } from './symbolic.js';
import { internalError, isVeltairError, quoteForMessage, userError, VeltairError } from '../errors.js';

export interface InferOptions {
  /** Static shapes for graph inputs, by name (`--input-shape`). */
  readonly inputShapes?: InputShapes;
}

/** Folding stops at results this large: past it a value is cheaper to compute at run time. */
const MAX_FOLDED_ELEMENTS = 1 << 26;
/** A fold costing more multiply-adds than this (seconds of JS) is left to the runtime. */
const MAX_FOLD_WORK = 1 << 28;

/**
 * The ai.onnx opsets veltair reads: 1 to 18, the newest whose operator changes the op table
 * implements (src/onnx/ops: e.g. Reduce* and Split take axes/splits as inputs from 18). A newer
 * opset may change an operator's meaning in a way veltair would not see, so it is refused rather
 * than compiled into a silently different model.
 */
export const MIN_OPSET = 1;
export const MAX_OPSET = 18;

export function defaultOpset(model: OnnxModel): number {
  const v = model.opsetImports.get('');
  if (v === undefined) {
    throw userError(
      'NOT_ONNX',
      `${quoteForMessage(model.path, 200)} does not import the default ai.onnx operator set`,
      'export the model with a standard ONNX opset (torch.onnx.export(..., opset_version=17))',
    );
  }
  if (!Number.isInteger(v) || v < MIN_OPSET || v > MAX_OPSET) {
    throw userError(
      'UNSUPPORTED_OPSET',
      `${quoteForMessage(model.path, 200)} declares ai.onnx opset ${v}; veltair supports opsets ${MIN_OPSET} to ${MAX_OPSET}`,
      `re-export the model at an opset from ${MIN_OPSET} to ${MAX_OPSET} (e.g. torch.onnx.export(..., opset_version=17)), ` +
        'or convert it with onnx.version_converter',
    );
  }
  return v;
}

export function inferModel(model: OnnxModel, opts: InferOptions = {}): InferredModel {
  defaultOpset(model);
  checkOperatorsSupported(model);
  checkInputsProduced(model);
  const order = topologicalOrder(model);
  const opset = defaultOpset(model);
  const inputs = resolveInputTypes(model, opts.inputShapes);
  const types = new Map<string, ValueType>();
  const constants = new Map<string, Tensor>();
  for (const [name, t] of model.graph.initializers) {
    types.set(name, { dtype: t.dtype, shape: t.dims });
    constants.set(name, t);
  }
  for (const i of inputs) types.set(i.name, { dtype: i.dtype, shape: i.shape });
  const kept: OnnxNode[] = [];
  const dequantized = new Map<string, DequantizedConstant>();
  for (const node of order) {
    const folded = withFileName(model.path, () => inferNode(node, opset, types, constants));
    if (!folded) kept.push(node);
    else if (node.opType === 'DequantizeLinear' && node.domain === '') dequantized.set(node.outputs[0]!, provenance(node, constants));
  }
  const outputs = model.graph.outputs.map((o) => ({ name: o.name, ...types.get(o.name)! }));
  return { model, nodes: kept, types, constants, inputs, outputs, dequantized };
}

function provenance(node: OnnxNode, constants: ReadonlyMap<string, Tensor>): DequantizedConstant {
  const [q, scale, zero] = node.inputs.map((i) => (i === '' ? undefined : constants.get(i)));
  const axis = attrInt(node, 'axis', 1);
  return { quantized: q!, scale: scale!, zero, axis: axis < 0 ? axis + q!.dims.length : axis };
}

/** Infers one node's output types into `types`; returns true when it was folded into `constants`. */
function inferNode(node: OnnxNode, opset: number, types: Map<string, ValueType>, constants: Map<string, Tensor>): boolean {
  const def = opDefinition(node.domain, node.opType);
  if (def === undefined) throw internalError(`${nodeLabel(node)} passed validation but has no definition`);
  const ctx: OpContext = {
    node,
    opset,
    inputs: node.inputs.map((i) => (i === '' ? undefined : types.get(i))),
    constants: node.inputs.map((i) => (i === '' ? undefined : constants.get(i))),
  };
  const outTypes = guarded(node, () => def.infer(ctx)).slice(0, node.outputs.length);
  if (outTypes.length < node.outputs.filter((o) => o !== '').length) {
    throw userError(
      'BAD_INPUT',
      `${nodeLabel(node)} lists ${node.outputs.length} outputs; ${node.opType} produces at most ${outTypes.length}`,
      'the model file is malformed; check it with onnx.checker.check_model',
    );
  }
  node.outputs.forEach((name, i) => {
    if (name === '') return;
    checkedElementCount(outTypes[i]!.shape, name);
    types.set(name, outTypes[i]!);
  });
  if (!foldable(def, ctx, outTypes)) return false;
  const values = guarded(node, () => def.evaluate!(ctx, ctx.constants as Tensor[], outTypes));
  node.outputs.forEach((name, i) => {
    if (name === '') return;
    const v = values[i];
    if (v === undefined || !sameShape(v.dims, outTypes[i]!.shape) || v.dtype !== outTypes[i]!.dtype) {
      throw internalError(
        `${nodeLabel(node)}: folded value for ${quoteForMessage(name)} is ${v ? `${v.dtype}${formatShape(v.dims)}` : 'missing'}, ` +
          `inference said ${outTypes[i]!.dtype}${formatShape(outTypes[i]!.shape)}`,
      );
    }
    constants.set(name, v);
  });
  return true;
}

function foldable(def: OpDef, ctx: OpContext, outTypes: readonly ValueType[]): boolean {
  if (def.evaluate === undefined) return false;
  if (def.deterministic !== undefined && !def.deterministic(ctx)) return false;
  // A dequantized weight is no larger than the float weight the unquantized model carries, and the
  // quantized layers need it folded (VGG-16's first classifier weight is 103M elements).
  const dequantize = ctx.node.opType === 'DequantizeLinear' && ctx.node.domain === '';
  if (!dequantize && outTypes.some((t) => product(t.shape) > MAX_FOLDED_ELEMENTS)) return false;
  if (def.foldWork !== undefined && def.foldWork(ctx) > MAX_FOLD_WORK) return false;
  if (def.foldsFromTypes) return true;
  const present = ctx.node.inputs.map((name, i) => (name === '' ? undefined : i)).filter((i) => i !== undefined);
  if (!present.every((i) => ctx.constants[i] !== undefined)) return false;
  const strings = [...ctx.inputs, ...outTypes].some((t) => t?.dtype === 'string');
  return !strings;
}

/** Per-node errors name the node; this adds the file, so the one line names both. */
function withFileName<T>(file: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (!isVeltairError(e)) throw e;
    throw new VeltairError(e.code, `${quoteForMessage(file, 200)}: ${e.message}`, e.hint, e.exitCode);
  }
}

/** Rule bugs surface as internal errors naming the node, never as a bare stack. */
function guarded<T>(node: OnnxNode, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (isVeltairError(e)) throw e;
    throw internalError(`${nodeLabel(node)}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
