/**
 * ONNX Resize on the native runtime, for the 2-D (H, W) resizes vision models export: the
 * segmentation heads' bilinear upsampling (torch's F.interpolate, `linear` with
 * `pytorch_half_pixel` or `align_corners`) and nearest-neighbour upsampling (`asymmetric` +
 * `floor`, as torch exports `nearest`). Every ONNX coordinate rule is resolved here, once, into
 * per-output-row and per-output-column tables — two source indices and a weight each — so the C op
 * (ops_resize.c) is one loop that blends four neighbours, the same for every mode.
 * Cubic and tf_crop_and_resize are refused with a clear reason (no model of the coverage set uses them).
 */
import { OP } from './ops.js';
import { attrList, isBlocked, unsupported, type Lowering } from './lower-context.js';

export type CoordinateMode = 'half_pixel' | 'pytorch_half_pixel' | 'align_corners' | 'asymmetric' | 'half_pixel_symmetric';
export type NearestMode = 'round_prefer_floor' | 'round_prefer_ceil' | 'floor' | 'ceil';

/** Per output position along one axis: read src0 and src1, blend with weight w on src1. */
export interface AxisTable {
  readonly src0: number[];
  readonly src1: number[];
  readonly weight: number[];
}

/** ONNX's transform from an output coordinate to the input's, along one axis (Resize, opset 11–19). */
export function sourceCoordinate(x: number, inLen: number, outLen: number, scale: number, mode: CoordinateMode): number {
  switch (mode) {
    case 'half_pixel':
      return (x + 0.5) / scale - 0.5;
    case 'pytorch_half_pixel':
      return outLen > 1 ? (x + 0.5) / scale - 0.5 : 0;
    case 'align_corners':
      return outLen === 1 ? 0 : (x * (inLen - 1)) / (outLen - 1);
    case 'asymmetric':
      return x / scale;
    case 'half_pixel_symmetric': {
      const adjustment = outLen / (scale * inLen);
      const center = inLen / 2;
      return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
  }
}

function nearestIndex(v: number, mode: NearestMode): number {
  switch (mode) {
    case 'floor':
      return Math.floor(v);
    case 'ceil':
      return Math.ceil(v);
    case 'round_prefer_ceil':
      return Math.round(v);
    case 'round_prefer_floor':
      return v === Math.floor(v) + 0.5 ? Math.floor(v) : Math.round(v);
  }
}

/** The table of one axis for `linear` or `nearest` (ONNX Runtime's clamping at the borders). */
export function axisTable(
  inLen: number,
  outLen: number,
  scale: number,
  mode: 'linear' | 'nearest',
  coordinate: CoordinateMode,
  nearest: NearestMode,
): AxisTable {
  const t: AxisTable = { src0: [], src1: [], weight: [] };
  const clamp = (i: number) => Math.max(0, Math.min(inLen - 1, i));
  for (let x = 0; x < outLen; x++) {
    const s = sourceCoordinate(x, inLen, outLen, scale, coordinate);
    if (mode === 'nearest') {
      const i = clamp(nearestIndex(s, nearest));
      t.src0.push(i);
      t.src1.push(i);
      t.weight.push(0);
      continue;
    }
    const c = clamp(s);
    const i0 = Math.floor(c);
    const i1 = Math.min(i0 + 1, inLen - 1);
    t.src0.push(i0);
    t.src1.push(i1);
    t.weight.push(i1 === i0 ? 0 : c - i0);
  }
  return t;
}

const COORDINATE_MODES: ReadonlySet<string> = new Set([
  'half_pixel',
  'pytorch_half_pixel',
  'align_corners',
  'asymmetric',
  'half_pixel_symmetric',
]);
const NEAREST_MODES: ReadonlySet<string> = new Set(['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil']);

const stringAttr = (v: unknown, fallback: string) => (typeof v === 'string' ? v : fallback);

/**
 * RESIZE: ints [planes, in_h, in_w, out_h, out_w, y0[out_h], y1[out_h], x0[out_w], x1[out_w]],
 * floats [wy[out_h], wx[out_w]] — every leading axis (N, C) kept, H and W resized.
 */
export const resize: Lowering = (c) => {
  const x = c.ins[0]!;
  const y = c.outs[0]!;
  if (x.dtype !== 'float32') unsupported(c, `Resize of ${x.dtype} (float32 only)`);
  if (isBlocked(c.layout)) unsupported(c, 'Resize runs on natural layouts');
  const rank = x.shape.length;
  if (rank < 2 || x.shape.slice(0, rank - 2).some((d, i) => d !== y.shape[i])) unsupported(c, 'Resize of other axes than the last two');
  const mode = stringAttr(c.layer.attrs['mode'], 'nearest');
  if (mode !== 'linear' && mode !== 'nearest') unsupported(c, `Resize mode ${JSON.stringify(mode)} (linear and nearest only)`);
  const coordinate = stringAttr(c.layer.attrs['coordinate_transformation_mode'], 'half_pixel');
  if (!COORDINATE_MODES.has(coordinate)) unsupported(c, `Resize coordinate_transformation_mode ${JSON.stringify(coordinate)}`);
  const nearest = stringAttr(c.layer.attrs['nearest_mode'], 'round_prefer_floor');
  if (!NEAREST_MODES.has(nearest)) unsupported(c, `Resize nearest_mode ${JSON.stringify(nearest)}`);
  if (c.layer.attrs['antialias'] === 1) unsupported(c, 'Resize with antialias');
  const scales = attrList(c, 'scales');
  const axisOf = (a: number) => {
    const inLen = x.shape[a]!;
    const outLen = y.shape[a]!;
    // ONNX uses the given scale, not the size ratio, when scales (rather than sizes) define the output.
    const scale = scales && scales.length === rank ? scales[a]! : outLen / inLen;
    return axisTable(inLen, outLen, scale, mode, coordinate as CoordinateMode, nearest as NearestMode);
  };
  const h = axisOf(rank - 2);
  const w = axisOf(rank - 1);
  const planes = x.shape.slice(0, rank - 2).reduce((a, b) => a * b, 1);
  return {
    op: OP.RESIZE,
    inputs: [x.ref],
    outputs: [y.ref],
    ints: [
      planes,
      x.shape[rank - 2]!,
      x.shape[rank - 1]!,
      y.shape[rank - 2]!,
      y.shape[rank - 1]!,
      ...h.src0,
      ...h.src1,
      ...w.src0,
      ...w.src1,
    ],
    floats: [...h.weight, ...w.weight],
  };
};
