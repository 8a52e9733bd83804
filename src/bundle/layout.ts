/**
 * Activation layouts of the graph plan and what they cost in bytes. Three families:
 *  - 'nchw'        the natural row-major layout of any rank (what ONNX and the user see);
 *  - 'nchw{V}c'    rank-4 blocked NCHW[V]c: [N][ceil(C/V)][H][W][V], padded channels zero
 *                  (conv2d input/output, see native-kernels/veltair_kernel.h);
 *  - 'rows{V}'     the last dimension padded to a multiple of V: [rows][roundUp(cols, V)]
 *                  (dense and batch_matmul operands: [M][Kpad], [M][Npad], [B][K][Npad] …);
 *  - 'nhwc'        rank-4 channels-last [N][H][W][C], no padding: the integer activations the INT8
 *                  kernels read and write (src/space/int8-problem.ts).
 * Two layouts that put every byte in the same place are the same layout: canonicalLayout folds
 * them to 'nchw' (e.g. [1,2048,1,1] in nchw16c, or [384,1024] in rows16), so no reorder is planned
 * between them.
 */
import type { DType } from '../onnx/model.js';

export type Layout = string;
export const NATURAL: Layout = 'nchw';

export const blockedLayout = (v: number): Layout => `nchw${v}c`;
export const rowsLayout = (v: number): Layout => `rows${v}`;
export const NHWC: Layout = 'nhwc';

export const LAYOUT_PATTERN = '^(nchw|nchw(1|8|16)c|rows(1|8|16)|nhwc)$';

export interface ParsedLayout {
  readonly kind: 'natural' | 'blocked' | 'rows' | 'nhwc';
  readonly vec: number;
}

export function parseLayout(l: Layout): ParsedLayout {
  if (l === NATURAL) return { kind: 'natural', vec: 1 };
  if (l === NHWC) return { kind: 'nhwc', vec: 1 };
  const b = /^nchw(\d+)c$/.exec(l);
  if (b) return { kind: 'blocked', vec: Number(b[1]) };
  const r = /^rows(\d+)$/.exec(l);
  if (r) return { kind: 'rows', vec: Number(r[1]) };
  throw new RangeError(`unknown layout ${l}`);
}

const roundUp = (a: number, b: number) => Math.ceil(a / b) * b;
const product = (xs: readonly number[]) => xs.reduce((a, b) => a * b, 1);

const DTYPE_BYTES: Readonly<Record<DType, number>> = {
  float32: 4,
  float64: 8,
  float16: 2,
  bfloat16: 2,
  int8: 1,
  uint8: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  bool: 1,
  string: 8,
};

export function dtypeBytes(d: DType): number {
  return DTYPE_BYTES[d];
}

/** Elements a value of `shape` occupies in `layout` (padding included). */
export function layoutElements(shape: readonly number[], layout: Layout): number {
  const p = parseLayout(layout);
  if (p.kind === 'natural' || p.kind === 'nhwc') return product(shape);
  if (p.kind === 'blocked') {
    if (shape.length !== 4) throw new RangeError(`layout ${layout} needs a rank-4 value, got [${shape.join(',')}]`);
    const [n, c, h, w] = shape as [number, number, number, number];
    return n * roundUp(c, p.vec) * h * w;
  }
  if (shape.length === 0) return roundUp(1, p.vec);
  return product(shape.slice(0, -1)) * roundUp(shape[shape.length - 1]!, p.vec);
}

/** The simplest name for where `layout` puts the bytes of a value of `shape`. */
export function canonicalLayout(shape: readonly number[], layout: Layout): Layout {
  const p = parseLayout(layout);
  if (p.kind === 'nhwc') {
    const [, c = 1, h = 1, w = 1] = shape;
    return shape.length === 4 && c > 1 && h * w > 1 ? NHWC : NATURAL;
  }
  if (p.kind === 'natural' || p.vec === 1) return NATURAL;
  if (p.kind === 'blocked') {
    const [, c = 0, h = 0, w = 0] = shape;
    return h * w === 1 && c % p.vec === 0 ? NATURAL : layout;
  }
  const last = shape.length === 0 ? 1 : shape[shape.length - 1]!;
  return last % p.vec === 0 ? NATURAL : layout;
}
