/**
 * The plan the native executor runs: a flat list of steps over one activation arena and a table of
 * constant buffers, encoded into one Float64Array (the blob format is documented at the top of
 * native-kernels/runtime/executor.c). Built from a bundle's graphPlan by translate.ts; tests build
 * small ones directly.
 */
import type { DType } from '../onnx/model.js';
import { internalError } from '../errors.js';
import { PLAN_FORMAT, PLAN_MAGIC } from '../toolchain/abi.js';
import type { OpCode } from './ops.js';

/** Where a step operand lives: an arena byte offset (>= 0), NONE, or a param (see paramRef). */
export type Ref = number;
export const NONE: Ref = -1;
export const paramRef = (index: number): Ref => -(2 + index);
export const arenaRef = (offset: number): Ref => {
  if (!Number.isSafeInteger(offset) || offset < 0) throw internalError(`arena offset ${offset} is not a byte offset`);
  return offset;
};

export interface NativeVersion {
  /** Index into NativePlan.symbols. */
  readonly symbol: number;
  /** The version's weight: its packed weight param, or an arena value (batch_matmul B). */
  readonly weight: Ref;
  /** Bytes of that weight (default: the param's size; an arena weight must state it). */
  readonly weightBytes?: number;
}

export interface NativeStep {
  readonly op: OpCode;
  readonly threads: number;
  readonly inputs: readonly Ref[];
  readonly outputs: readonly Ref[];
  /**
   * Bytes each operand spans (the executor checks ref + bytes against its buffer). Default per
   * ref: a param's whole size, an arena ref's distance to the arena's end, 0 for NONE. The
   * translator always states them.
   */
  readonly inputBytes?: readonly number[];
  readonly outputBytes?: readonly number[];
  readonly ints: readonly number[];
  readonly floats: readonly number[];
  readonly versions?: readonly NativeVersion[];
  /** For messages and profiles: which plan step / layer this is. */
  readonly label: string;
}

export interface NativeTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly offset: number;
  readonly bytes: number;
}

export interface NativePlan {
  readonly arenaBytes: number;
  readonly inputs: readonly NativeTensor[];
  readonly outputs: readonly NativeTensor[];
  readonly steps: readonly NativeStep[];
  /** Kernel symbol prefixes (`vt_k` / `vt_q` + 16 hex), each checked before it reaches dlsym. */
  readonly symbols: readonly string[];
  /** Constant buffers, copied once into 64-byte-aligned native memory. */
  readonly params: readonly ArrayBufferView[];
}

/** FP32 kernels are `vt_k…`, INT8 kernels `vt_q…` (codegen/int8-kernel.ts). */
export const SYMBOL_PATTERN = /^vt_[kq][0-9a-f]{16}$/;

/**
 * A KERNEL step's one int (none: 0): its input is a small-cin conv's in plain NCHW, so the
 * executor runs every version's `<sym>_run_nchw` (native-kernels/runtime/executor.c K_READS_NCHW).
 */
export const KERNEL_READS_NCHW = 1;

/** The (ref, bytes) pairs of an operand list, each checked to lie inside its buffer. */
function sizedRefs(
  refs: readonly Ref[],
  bytes: readonly number[] | undefined,
  arenaBytes: number,
  params: readonly ArrayBufferView[],
  where: string,
): number[] {
  if (bytes !== undefined && bytes.length !== refs.length)
    throw internalError(`${where}: ${refs.length} operands but ${bytes.length} sizes`);
  return refs.flatMap((r, i) => [r, refBytes(r, bytes?.[i], arenaBytes, params, where)]);
}

function refBytes(r: Ref, stated: number | undefined, arenaBytes: number, params: readonly ArrayBufferView[], where: string): number {
  if (!Number.isSafeInteger(r)) throw internalError(`${where} has a non-integer operand ${r}`);
  const fallback = r === NONE ? 0 : r >= 0 ? arenaBytes - r : (params[-r - 2]?.byteLength ?? 0);
  const bytes = stated ?? fallback;
  const inside =
    Number.isSafeInteger(bytes) &&
    bytes >= 0 &&
    (r === NONE
      ? bytes === 0
      : r >= 0
        ? r + bytes <= arenaBytes
        : r <= -2 && -r - 2 < params.length && bytes <= params[-r - 2]!.byteLength);
  if (!inside) throw internalError(`${where} refers to ${bytes} bytes at ${r}, outside the arena or param table`);
  return bytes;
}

function checkStep(s: NativeStep, i: number, symbols: number): void {
  if (!s.ints.every(Number.isSafeInteger)) throw internalError(`native plan step ${i} (${s.label}) has a non-integer int`);
  if ((s.versions ?? []).some((v) => !Number.isInteger(v.symbol) || v.symbol < 0 || v.symbol >= symbols)) {
    throw internalError(`native plan step ${i} (${s.label}) names a symbol that is not in the table`);
  }
  if (!Number.isInteger(s.threads) || s.threads < 1) throw internalError(`native plan step ${i} (${s.label}) has ${s.threads} threads`);
}

/** The blob the addon decodes once at create(). */
export function encodePlan(plan: NativePlan): Float64Array {
  for (const sym of plan.symbols) {
    if (!SYMBOL_PATTERN.test(sym)) throw internalError(`kernel symbol ${JSON.stringify(sym.slice(0, 40))} is not a veltair symbol`);
  }
  const words: number[] = [PLAN_MAGIC, PLAN_FORMAT, plan.steps.length, plan.arenaBytes, plan.inputs.length, plan.outputs.length];
  for (const t of [...plan.inputs, ...plan.outputs]) {
    if (t.offset < 0 || t.offset + t.bytes > plan.arenaBytes)
      throw internalError(`graph tensor ${JSON.stringify(t.name)} lies outside the arena`);
    words.push(t.offset, t.bytes);
  }
  plan.steps.forEach((s, i) => {
    const where = `native plan step ${i} (${s.label})`;
    checkStep(s, i, plan.symbols.length);
    const versions = s.versions ?? [];
    words.push(
      s.op,
      s.threads,
      s.inputs.length,
      s.outputs.length,
      s.ints.length,
      s.floats.length,
      versions.length,
      ...sizedRefs(s.inputs, s.inputBytes, plan.arenaBytes, plan.params, where),
      ...sizedRefs(s.outputs, s.outputBytes, plan.arenaBytes, plan.params, where),
      ...s.ints,
      ...s.floats,
    );
    for (const v of versions) words.push(v.symbol, v.weight, refBytes(v.weight, v.weightBytes, plan.arenaBytes, plan.params, where));
  });
  return Float64Array.from(words);
}
