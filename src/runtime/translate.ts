/**
 * graphPlan → NativePlan: a thin, explicit translation, one plan step at a time.
 *
 *  graphPlan                         NativePlan
 *  ---------------------------------------------------------------------------------------------
 *  arenaBytes                        arenaBytes (one 64-byte-aligned native allocation)
 *  values[id].offset                 the arena ref of every operand of that value
 *  inputs / outputs {name, value}    inputs / outputs {name, dtype, shape, offset, bytes}
 *  step op 'reorder' from→to         REORDER (layout kinds natural/blocked/rows + V, logical dims)
 *  step op 'layer', inPlace          nothing (the view shares its input's bytes)
 *  step op 'layer', qconv2d/qmatmul  QKERNEL (qkernel-step.ts): in [x, workspace], out [y], one
 *    with versions                   version per id: (symbol, w|comp|mult param), ints the offsets
 *  step op 'layer', tunable          KERNEL: in [x, bias, residual, chanmul, epi_params, workspace],
 *                                    out [y], one version per step.versions id: (symbol, packed
 *                                    weight param | B's arena ref for batch_matmul); ints
 *                                    [KERNEL_READS_NCHW] when a conv's x is natural (`_run_nchw`)
 *  versions' workspaceBytes          one workspace region after the plan's arena, sized for the
 *                                    largest version: steps run one at a time over one arena, so
 *                                    they can share it as they share the arena's bytes
 *  every operand                     (ref, bytes): the executor checks both
 *  step op 'layer', other            the op's lowering (lower-compute.ts, lower-movement.ts),
 *                                    operands in ONNX argument order with constants as params
 *  layer params                      params (copied once into aligned native memory)
 *
 * `stepOfPlan[i]` is the native step of plan step i (-1 where none), so callers choose versions
 * and threads in plan-step terms.
 */
import { internalError, quoteForMessage, userError, VeltairError } from '../errors.js';
import type { GraphPlan, PlanStep, PlanValue } from '../bundle/plan.js';
import { canonicalLayout, NATURAL, parseLayout, type Layout } from '../bundle/layout.js';
import { LAYOUT_KIND, OP } from './ops.js';
import { arenaRef, KERNEL_READS_NCHW, NONE, paramRef, type NativePlan, type NativeStep, type Ref, SYMBOL_PATTERN } from './native-plan.js';
import { product, roundUp } from './geometry.js';
import { unsupported, type LoweredOp, type Lowering, type Operand, type OpContext } from './lower-context.js';
import { COMPUTE_LOWERINGS } from './lower-compute.js';
import { MOVEMENT_LOWERINGS } from './lower-movement.js';
import { resize } from './lower-resize.js';
import { QUANT_LOWERINGS } from './lower-quant.js';
import { qkernelStep } from './qkernel-step.js';
import { isInt8KernelLayer } from '../bundle/plan-quant.js';
import { paramFloats, type ParamData, type RuntimeLayer, type RuntimeVersion } from './runtime-layer.js';
import { outputOwner, type ThreadSplit } from '../bundle/thread-split.js';

const LOWERINGS: Readonly<Record<string, Lowering>> = { ...COMPUTE_LOWERINGS, ...MOVEMENT_LOWERINGS, ...QUANT_LOWERINGS, resize };

/** ONNX argument names per op (src/ir/generic.ts names constant operands by them). */
const OPERAND_NAMES: Readonly<Record<string, readonly string[]>> = {
  batchnormalization: ['X', 'scale', 'B', 'input_mean', 'input_var'],
  layernormalization: ['X', 'Scale', 'B'],
  gather: ['data', 'indices'],
  where: ['condition', 'X', 'Y'],
  prelu: ['X', 'slope'],
};

export interface TranslatedPlan {
  readonly plan: NativePlan;
  readonly stepOfPlan: readonly number[];
  /** Per native step: the plan step it came from. */
  readonly planOfStep: readonly number[];
}

export interface TranslateOptions {
  /** Threads every step starts with (default 1; the runtime sets them per layer block). */
  readonly threads?: number;
  /** Report each layer the runtime cannot run and go on (preflight.ts), instead of throwing at the first. */
  readonly onUnsupported?: (e: VeltairError) => void;
  /**
   * The version a kernel layer runs at level 0 on `threads` (a bundle's: version-picker.ts); default
   * its step's first. Ops that read a kernel's output follow how that version's threads split it.
   */
  readonly runningVersion?: (layer: number) => string | undefined;
}

/** The NCHW[V]c / rows geometry REORDER needs: [from kind, from V, to kind, to V, N, C, HW, rows, cols]. */
function reorderInts(v: PlanValue, from: Layout, to: Layout): number[] {
  const kind = (l: Layout) => {
    const p = parseLayout(l);
    if (p.kind === 'nhwc') throw unsupportedReorder(v, from, to);
    return [LAYOUT_KIND[p.kind], p.vec];
  };
  const s = v.shape;
  const [n = 1, c = 1, ...spatial] = s.length === 4 ? s : [1, 1];
  const blockedUsed = [from, to].some((l) => parseLayout(l).kind === 'blocked');
  if (blockedUsed && s.length !== 4)
    throw internalError(`reorder of ${quoteForMessage(v.name)}: blocked layout of a rank-${s.length} value`);
  return [...kind(from), ...kind(to), n, c, product(spatial), product(s.slice(0, -1)), s[s.length - 1] ?? 1];
}

/** Integer values stay channels-last between quantized layers; a reader that wants them otherwise has no native reorder. */
function unsupportedReorder(v: PlanValue, from: Layout, to: Layout): VeltairError {
  return userError(
    'UNSUPPORTED_OPS',
    `value ${quoteForMessage(v.name)} (${v.dtype}) would need a reorder ${from}→${to}: integer values are only read channels-last`,
    'the native runtime runs quantized layers on channels-last integers; dequantize the value before a float layer reads it',
  );
}

export function translatePlan(plan: GraphPlan, layers: readonly RuntimeLayer[], options: TranslateOptions = {}): TranslatedPlan {
  const threads = options.threads ?? 1;
  const values = new Map(plan.values.map((v) => [v.id, v]));
  const layerOf = new Map(layers.map((l) => [l.index, l]));
  const params: ArrayBufferView[] = [];
  const paramIds = new Map<object, Ref>();
  const addParam = (data: ArrayBufferView): Ref => {
    let r = paramIds.get(data);
    if (r === undefined) {
      r = paramRef(params.length);
      params.push(data);
      paramIds.set(data, r);
    }
    return r;
  };
  const symbols: string[] = [];
  const symbolIndex = (sym: string): number => {
    if (!SYMBOL_PATTERN.test(sym)) throw internalError(`version symbol ${quoteForMessage(sym)} is not a veltair kernel symbol`);
    let i = symbols.indexOf(sym);
    if (i < 0) {
      i = symbols.length;
      symbols.push(sym);
    }
    return i;
  };
  const workspace = planWorkspace(plan, layerOf);
  const arenaBytes = workspace.bytes > 0 ? workspace.offset + workspace.bytes : plan.arenaBytes;
  const value = (id: number): PlanValue => {
    const v = values.get(id);
    if (v === undefined) throw internalError(`graph plan refers to value ${id}, which it does not define`);
    if (v.offset + v.bytes > plan.arenaBytes) throw internalError(`value ${id} lies outside the arena`);
    return v;
  };
  const operand = (id: number): Operand => {
    const v = value(id);
    return { ref: arenaRef(v.offset), bytes: v.bytes, shape: v.shape, dtype: v.dtype, layout: v.layout };
  };
  const writer = new Map(plan.steps.flatMap((p) => p.outputs.map((id) => [id, p] as const)));
  /** The version the kernel that wrote value `id` runs (level 0 at `threads`: options.runningVersion), or undefined. */
  const writerVersion = (id: number | undefined): RuntimeVersion | undefined => {
    const w = id === undefined ? undefined : writer.get(id);
    if (w === undefined || w.op !== 'layer' || w.inPlace) return undefined;
    const running = options.runningVersion?.(w.layer) ?? w.versions?.[0];
    return layerOf.get(w.layer)?.versions.find((v) => v.id === running);
  };
  const steps: NativeStep[] = [];
  const stepOfPlan: number[] = [];
  const planOfStep: number[] = [];
  const push = (
    s: Omit<NativeStep, 'threads' | 'label' | 'floats'> & { floats?: readonly number[] },
    p: PlanStep,
    label: string,
    operands: readonly Operand[],
  ) => {
    stepOfPlan[p.index] = steps.length;
    planOfStep.push(p.index);
    const sizes = operandSizes(operands, params, label);
    steps.push({
      ...s,
      threads,
      floats: s.floats ?? [],
      label,
      inputBytes: s.inputBytes ?? s.inputs.map(sizes),
      outputBytes: s.outputBytes ?? s.outputs.map(sizes),
    });
  };

  for (const p of plan.steps) {
    stepOfPlan[p.index] = -1;
    if (p.op === 'reorder') {
      const v = value(p.inputs[0]);
      const from = operand(p.inputs[0]),
        to = operand(p.outputs[0]);
      push(
        { op: OP.REORDER, inputs: [from.ref], outputs: [to.ref], ints: reorderInts(v, p.from, p.to), floats: [] },
        p,
        `reorder ${p.from}→${p.to}`,
        [from, to],
      );
      continue;
    }
    if (p.inPlace) continue;
    const layer = layerOf.get(p.layer);
    if (layer === undefined) throw internalError(`plan step ${p.index} runs layer ${p.layer}, which the bundle does not describe`);
    const label = `layer ${layer.index} ${layer.op}`;
    if (layer.tunable) {
      push(kernelStep(layer, p, operand, addParam, symbolIndex, workspace), p, label, []);
      continue;
    }
    if (isInt8KernelLayer(layer) && p.versions) {
      push(qkernelStep(layer, p, operand, addParam, symbolIndex, workspace), p, label, []);
      continue;
    }
    const split = threads > 1 ? writerVersion(p.inputs[0])?.split : undefined;
    // Built only for the lowerings that ask (channel gathers): input i's writer, as the split above.
    const owners =
      threads > 1
        ? {
            threads,
            of: (i: number) => {
              const tiling = writerVersion(p.inputs[i])?.tiling;
              return tiling ? outputOwner(tiling, threads) : undefined;
            },
          }
        : undefined;
    const lowered = lowerLayer(layer, p, operand, addParam, { split, owners }, options.onUnsupported);
    if (lowered) push(lowered.step, p, label, lowered.operands);
  }
  return finishPlan(plan, arenaBytes, value, steps, symbols, params, stepOfPlan, planOfStep);
}

function finishPlan(
  plan: GraphPlan,
  arenaBytes: number,
  value: (id: number) => PlanValue,
  steps: NativeStep[],
  symbols: string[],
  params: ArrayBufferView[],
  stepOfPlan: number[],
  planOfStep: number[],
): TranslatedPlan {
  const tensor = (t: { name: string; value: number }) => {
    const v = value(t.value);
    return { name: t.name, dtype: v.dtype, shape: v.shape, offset: v.offset, bytes: v.bytes };
  };
  return {
    plan: { arenaBytes, inputs: plan.inputs.map(tensor), outputs: plan.outputs.map(tensor), steps, symbols, params },
    stepOfPlan,
    planOfStep,
  };
}

/** A non-tunable layer's native step; an unsupported one throws UNSUPPORTED_OPS, or is reported and skipped with `onUnsupported`. */
function lowerLayer(
  layer: RuntimeLayer,
  p: Extract<PlanStep, { op: 'layer' }>,
  operand: (id: number) => Operand,
  addParam: (d: ArrayBufferView) => Ref,
  writers: { split?: ThreadSplit; owners?: OpContext['inputOwners'] },
  onUnsupported?: (e: VeltairError) => void,
): { step: LoweredOp; operands: Operand[] } | undefined {
  const lowering = LOWERINGS[layer.op];
  // Owners are by activation input; a layer with constants interleaves them (operands), so it gets none.
  const owners = writers.owners && Object.keys(layer.params).length === 0 ? writers.owners : undefined;
  const ctx: OpContext = {
    layer,
    layout: p.layout,
    ins: operands(layer, p.inputs.map(operand), addParam),
    outs: p.outputs.map(operand),
    addParam,
    ...(writers.split ? { inputSplit: writers.split } : {}),
    ...(owners ? { inputOwners: owners } : {}),
  };
  try {
    if (lowering === undefined) unsupported(ctx, 'no native op of this name');
    return { step: lowering(ctx), operands: [...ctx.ins, ...ctx.outs] };
  } catch (e) {
    if (!onUnsupported || !(e instanceof VeltairError) || e.code !== 'UNSUPPORTED_OPS') throw e;
    onUnsupported(e);
    return undefined;
  }
}

/** Operands in ONNX argument order: activations from the step, constants (by argument name) as params. */
function operands(layer: RuntimeLayer, acts: readonly Operand[], addParam: (d: ArrayBufferView) => Ref): Operand[] {
  const names = Object.keys(layer.params);
  if (names.length === 0) return [...acts];
  const total = acts.length + names.length;
  const order = OPERAND_NAMES[layer.op] ?? (total === 2 ? ['A', 'B'] : Array.from({ length: total }, (_, i) => `input${i}`));
  const out: Operand[] = [];
  let next = 0;
  for (const name of order) {
    const p = layer.params[name];
    if (p !== undefined) out.push(paramOperand(p, addParam));
    else if (next < acts.length) out.push(acts[next++]!);
    if (out.length === total) break;
  }
  while (next < acts.length) out.push(acts[next++]!);
  return out;
}

function paramOperand(p: ParamData, addParam: (d: ArrayBufferView) => Ref): Operand {
  return { ref: addParam(p.bytes), bytes: p.bytes.byteLength, shape: p.dims, dtype: p.dtype, layout: 'nchw', param: p };
}

/** Bytes of each ref a lowering used: its operand's for arena refs, the whole param for params, 0 for none. */
function operandSizes(operands: readonly Operand[], params: readonly ArrayBufferView[], label: string): (r: Ref) => number {
  const arena = new Map<Ref, number>();
  for (const o of operands) if (o.ref >= 0) arena.set(o.ref, Math.max(arena.get(o.ref) ?? 0, o.bytes));
  return (r) => {
    if (r === NONE) return 0;
    if (r < 0) return params[-r - 2]!.byteLength;
    const bytes = arena.get(r);
    if (bytes === undefined) throw internalError(`${label}: arena ref ${r} is none of the step's operands`);
    return bytes;
  };
}

interface Workspace {
  readonly offset: number;
  readonly bytes: number;
}

/** The kernels' shared scratch: after the plan's own arena, as large as the largest in-plan version needs. */
function planWorkspace(plan: GraphPlan, layerOf: ReadonlyMap<number, RuntimeLayer>): Workspace {
  let bytes = 0;
  for (const p of plan.steps) {
    if (p.op !== 'layer' || !p.versions) continue;
    const versions = new Map((layerOf.get(p.layer)?.versions ?? []).map((v) => [v.id, v]));
    for (const id of p.versions) bytes = Math.max(bytes, versions.get(id)?.workspaceBytes ?? 0);
  }
  return { offset: Math.ceil(plan.arenaBytes / 64) * 64, bytes };
}

function kernelStep(
  layer: RuntimeLayer,
  p: Extract<PlanStep, { op: 'layer' }>,
  operand: (id: number) => Operand,
  addParam: (d: ArrayBufferView) => Ref,
  symbolIndex: (s: string) => number,
  workspace: Workspace,
): Omit<NativeStep, 'threads' | 'label'> {
  const vec = parseLayout(p.layout).vec;
  const bmm = layer.op === 'batch_matmul';
  const args = bmm ? 2 : 1;
  const x = operand(p.inputs[0]!),
    y = operand(p.outputs[0]!);
  const wAct = bmm ? operand(p.inputs[1]!) : undefined;
  const extras = layer.epilogue.filter((k) => k === 'residual_add' || k === 'channel_mul');
  const extra = (kind: string): Operand | undefined => {
    const i = extras.indexOf(kind as (typeof extras)[number]);
    return i < 0 ? undefined : operand(p.inputs[args + i]!);
  };
  const residual = extra('residual_add'),
    gate = extra('channel_mul');
  let bias: Ref = NONE,
    biasBytes = 0;
  if (layer.epilogue.includes('bias')) {
    const b = layer.params['bias'];
    if (!b) throw internalError(`layer ${layer.index} has a bias epilogue but no bias param`);
    const natural = paramFloats(b);
    const padded = new Float32Array(roundUp(natural.length, vec));
    padded.set(natural);
    bias = addParam(padded);
    biasBytes = padded.byteLength;
  }
  const epi = layer.epilogueParams.length > 0 ? addParam(Float32Array.from(layer.epilogueParams)) : NONE;
  const ws: Ref = workspace.bytes > 0 ? arenaRef(workspace.offset) : NONE;
  const byId = new Map(layer.versions.map((v) => [v.id, v]));
  const versions = (p.versions ?? []).map((id) => {
    const v = byId.get(id);
    if (!v) throw internalError(`plan step ${p.index} uses version ${id.slice(0, 12)}, which layer ${layer.index} does not list`);
    if (!bmm && !v.packedWeight) throw internalError(`layer ${layer.index} version ${id.slice(0, 12)} has no packed weight`);
    return bmm
      ? { symbol: symbolIndex(v.symbol), weight: wAct!.ref, weightBytes: wAct!.bytes }
      : { symbol: symbolIndex(v.symbol), weight: addParam(v.packedWeight!), weightBytes: v.packedWeight!.byteLength };
  });
  if (versions.length === 0) throw internalError(`plan step ${p.index} (layer ${layer.index}) has no usable version`);
  return {
    op: OP.KERNEL,
    inputs: [x.ref, bias, residual?.ref ?? NONE, gate?.ref ?? NONE, epi, ws],
    outputs: [y.ref],
    inputBytes: [x.bytes, biasBytes, residual?.bytes ?? 0, gate?.bytes ?? 0, layer.epilogueParams.length * 4, workspace.bytes],
    outputBytes: [y.bytes],
    ints: kernelInts(layer, p, x),
    floats: [],
    versions,
  };
}

/** A conv whose step reads its input in the natural layout (a small-cin stem fed the graph input) runs `_run_nchw`. */
function kernelInts(layer: RuntimeLayer, p: Extract<PlanStep, { op: 'layer' }>, x: Operand): number[] {
  if (x.layout === canonicalLayout(x.shape, p.layout)) return [];
  if (layer.op !== 'conv2d' || x.layout !== NATURAL || x.shape.length !== 4) {
    throw internalError(`plan step ${p.index} (layer ${layer.index}) feeds its ${p.layout} kernel a ${x.layout} input`);
  }
  return [KERNEL_READS_NCHW];
}
