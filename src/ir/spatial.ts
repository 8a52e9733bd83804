/**
 * Sliding-window attributes (Conv, MaxPool, AveragePool) resolved to explicit numbers: auto_pad is
 * turned into pads, defaults filled in, and the output size recomputed as a check on the front end.
 */
import type { OnnxNode } from '../onnx/model.js';
import { attrInts, attrString, nodeLabel } from '../onnx/attributes.js';
import { internalError, userError } from '../errors.js';

export interface Window {
  readonly kernel: readonly number[];
  readonly strides: readonly number[];
  readonly dilations: readonly number[];
  /** ONNX order: all begins, then all ends ([top, left, bottom, right] in 2-D). */
  readonly pads: readonly number[];
}

export function resolveWindow(
  node: OnnxNode,
  inSpatial: readonly number[],
  outSpatial: readonly number[],
  kernel: readonly number[],
  ceilMode = false,
): Window {
  const r = inSpatial.length;
  const ones = new Array<number>(r).fill(1);
  const strides = attrInts(node, 'strides') ?? ones;
  const dilations = attrInts(node, 'dilations') ?? ones;
  const autoPad = attrString(node, 'auto_pad', 'NOTSET');
  if (strides.length !== r || dilations.length !== r || kernel.length !== r) {
    throw userError(
      'BAD_ATTRIBUTE',
      `${nodeLabel(node)}: kernel/strides/dilations do not match the ${r} spatial dims of its input`,
      'the model file is malformed; re-export it or check it with onnx.checker.check_model',
    );
  }
  let pads: number[];
  if (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER') {
    pads = new Array<number>(2 * r).fill(0);
    for (let i = 0; i < r; i++) {
      const span = (kernel[i]! - 1) * dilations[i]! + 1;
      const total = Math.max(0, (outSpatial[i]! - 1) * strides[i]! + span - inSpatial[i]!);
      const small = Math.floor(total / 2);
      pads[i] = autoPad === 'SAME_UPPER' ? small : total - small;
      pads[i + r] = total - pads[i]!;
    }
  } else if (autoPad === 'VALID') {
    pads = new Array<number>(2 * r).fill(0);
  } else {
    pads = [...(attrInts(node, 'pads') ?? new Array<number>(2 * r).fill(0))];
  }
  for (let i = 0; i < r; i++) {
    const span = (kernel[i]! - 1) * dilations[i]! + 1;
    const room = inSpatial[i]! + pads[i]! + pads[i + r]! - span;
    const expected = (ceilMode ? Math.ceil(room / strides[i]!) : Math.floor(room / strides[i]!)) + 1;
    // ceil_mode may drop a last window that starts in the end padding; the front end decides that.
    if (expected !== outSpatial[i] && !(ceilMode && expected - 1 === outSpatial[i])) {
      throw internalError(
        `${nodeLabel(node)}: output size ${outSpatial[i]} on spatial axis ${i} disagrees with its window (expected ${expected})`,
      );
    }
  }
  return { kernel: [...kernel], strides: [...strides], dilations: [...dilations], pads };
}
