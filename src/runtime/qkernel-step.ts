/**
 * A qconv2d / qmatmul plan step as the native INT8 kernel step (native-kernels/runtime/qkernel.c):
 * in [x, workspace], out [y], one version per plan version id, each version's packed w, comp and
 * mult in one param with ints [comp offset, mult offset] per version. The executor checks every
 * version's `<sym>_qdesc` against these operands at load.
 */
import { internalError } from '../errors.js';
import type { PlanStep } from '../bundle/plan.js';
import { OP } from './ops.js';
import { arenaRef, NONE, type NativeStep, type Ref } from './native-plan.js';
import type { Operand } from './lower-context.js';
import type { RuntimeLayer } from './runtime-layer.js';

export interface SharedWorkspace {
  readonly offset: number;
  readonly bytes: number;
}

export function qkernelStep(
  layer: RuntimeLayer,
  p: Extract<PlanStep, { op: 'layer' }>,
  operand: (id: number) => Operand,
  addParam: (d: ArrayBufferView) => Ref,
  symbolIndex: (s: string) => number,
  workspace: SharedWorkspace,
): Omit<NativeStep, 'threads' | 'label'> {
  const x = operand(p.inputs[0]!),
    y = operand(p.outputs[0]!);
  const byId = new Map(layer.versions.map((v) => [v.id, v]));
  const ints: number[] = [];
  const versions = (p.versions ?? []).map((id) => {
    const v = byId.get(id);
    if (!v?.packedWeight || !v.int8)
      throw internalError(
        `plan step ${p.index} uses version ${id.slice(0, 12)}, which layer ${layer.index} lacks or has no INT8 constants for`,
      );
    ints.push(v.int8.compOffset, v.int8.multOffset);
    return { symbol: symbolIndex(v.symbol), weight: addParam(v.packedWeight), weightBytes: v.packedWeight.byteLength };
  });
  if (versions.length === 0) throw internalError(`plan step ${p.index} (layer ${layer.index}) has no INT8 version`);
  const ws: Ref = workspace.bytes > 0 ? arenaRef(workspace.offset) : NONE;
  return {
    op: OP.QKERNEL,
    inputs: [x.ref, ws],
    outputs: [y.ref],
    inputBytes: [x.bytes, workspace.bytes],
    outputBytes: [y.bytes],
    ints,
    floats: [],
    versions,
  };
}
