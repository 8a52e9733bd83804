/**
 * Hand-built InferredModels for the ir/ tests: nodes with explicit output shapes (no shape inference
 * involved, so these tests pin the lowering alone), plus seeded random tensors and naive reference
 * kernels to check folded weights numerically.
 */
import type { AttributeValue, InferredModel, OnnxNode, Tensor, ValueType } from '../src/onnx/model.js';
import { mulberry32 } from '../src/random.js';

export type Attr = number | string | readonly number[] | { readonly float: number } | { readonly floats: readonly number[] };

export interface FixtureNode {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: string | readonly string[];
  /** Shape of each output (one shape for a single output). */
  readonly shape: readonly number[] | readonly (readonly number[])[];
  readonly attrs?: Readonly<Record<string, Attr>>;
  readonly name?: string;
  readonly domain?: string;
  readonly dtype?: ValueType['dtype'];
}

export interface FixtureSpec {
  readonly inputs: Readonly<Record<string, readonly number[]>>;
  readonly outputs: readonly string[];
  readonly constants?: Readonly<Record<string, Tensor>>;
  readonly nodes: readonly FixtureNode[];
  readonly opset?: number;
}

function attribute(v: Attr): AttributeValue {
  if (typeof v === 'number') return Number.isInteger(v) ? { kind: 'int', value: v } : { kind: 'float', value: v };
  if (typeof v === 'string') return { kind: 'string', value: v };
  if (Array.isArray(v)) return { kind: 'ints', value: v as number[] };
  if ('float' in v) return { kind: 'float', value: v.float };
  return { kind: 'floats', value: (v as { floats: number[] }).floats };
}

export function fixture(spec: FixtureSpec): InferredModel {
  const types = new Map<string, ValueType>();
  for (const [name, shape] of Object.entries(spec.inputs)) types.set(name, { dtype: 'float32', shape });
  const nodes: OnnxNode[] = spec.nodes.map((n) => {
    const outputs = typeof n.outputs === 'string' ? [n.outputs] : [...n.outputs];
    const shapes = (typeof n.shape[0] === 'number' ? [n.shape] : n.shape) as readonly (readonly number[])[];
    outputs.forEach((o, i) => {
      if (o !== '') types.set(o, { dtype: n.dtype ?? 'float32', shape: shapes[i] ?? shapes[0]! });
    });
    return {
      name: n.name ?? '',
      opType: n.op,
      domain: n.domain ?? '',
      inputs: n.inputs,
      outputs,
      attributes: new Map(Object.entries(n.attrs ?? {}).map(([k, v]) => [k, attribute(v)])),
    };
  });
  const value = (name: string): ValueType & { name: string } => {
    const t = types.get(name);
    if (t === undefined) throw new Error(`fixture: no type for ${name}`);
    return { name, ...t };
  };
  return {
    model: {
      path: 'fixture.onnx',
      sha256: '',
      irVersion: 8,
      producer: 'test',
      opsetImports: new Map([['', spec.opset ?? 17]]),
      graph: { name: 'g', nodes: [], initializers: new Map(), inputs: [], outputs: [], valueInfo: new Map() },
    },
    nodes,
    types,
    constants: new Map(Object.entries(spec.constants ?? {})),
    inputs: Object.keys(spec.inputs).map(value),
    outputs: spec.outputs.map(value),
  };
}

/** Seeded uniform [0, 1) values (veltair's one PRNG). */
export const rng = mulberry32;

export function tensor(dims: readonly number[], data?: ArrayLike<number>): Tensor {
  const n = dims.reduce((a, b) => a * b, 1);
  return { dtype: 'float32', dims: [...dims], data: data === undefined ? new Float32Array(n) : Float32Array.from(data) };
}

export function randomTensor(dims: readonly number[], rand: () => number, lo = -1, hi = 1): Tensor {
  const n = dims.reduce((a, b) => a * b, 1);
  return tensor(
    dims,
    Array.from({ length: n }, () => lo + (hi - lo) * rand()),
  );
}

export function scalar(v: number): Tensor {
  return { dtype: 'float32', dims: [], data: Float32Array.of(v) };
}

export function int64s(values: readonly number[]): Tensor {
  return { dtype: 'int64', dims: [values.length], data: Float64Array.from(values) };
}

export interface ConvGeometry {
  readonly groups: number;
  readonly strides: readonly [number, number];
  readonly pads: readonly [number, number, number, number];
  readonly dilations: readonly [number, number];
}

/** Direct NCHW convolution in float64: the reference the folded weights are checked against. */
export function naiveConv(
  x: ArrayLike<number>,
  xs: readonly number[],
  w: ArrayLike<number>,
  ws: readonly number[],
  bias: ArrayLike<number> | undefined,
  geo: ConvGeometry,
): { data: Float64Array; shape: number[] } {
  const [n, c, h, wd] = xs as [number, number, number, number];
  const [o, cg, kh, kw] = ws as [number, number, number, number];
  const [sh, sw] = geo.strides;
  const [pt, pl, pb, pr] = geo.pads;
  const [dh, dw] = geo.dilations;
  const oh = Math.floor((h + pt + pb - ((kh - 1) * dh + 1)) / sh) + 1;
  const ow = Math.floor((wd + pl + pr - ((kw - 1) * dw + 1)) / sw) + 1;
  const opg = o / geo.groups;
  const out = new Float64Array(n * o * oh * ow);
  for (let b = 0; b < n; b++)
    for (let oc = 0; oc < o; oc++) {
      const grp = Math.floor(oc / opg);
      for (let y = 0; y < oh; y++)
        for (let xx = 0; xx < ow; xx++) {
          let acc = bias === undefined ? 0 : bias[oc]!;
          for (let ic = 0; ic < cg; ic++)
            for (let ky = 0; ky < kh; ky++)
              for (let kx = 0; kx < kw; kx++) {
                const iy = y * sh - pt + ky * dh;
                const ix = xx * sw - pl + kx * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += x[((b * c + grp * cg + ic) * h + iy) * wd + ix]! * w[((oc * cg + ic) * kh + ky) * kw + kx]!;
              }
          out[((b * o + oc) * oh + y) * ow + xx] = acc;
        }
    }
  return { data: out, shape: [n, o, oh, ow] };
}

/** Largest |a−b| / (1 + |b|) over two arrays. */
export function maxRelErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / (1 + Math.abs(b[i]!)));
  return worst;
}

export function values(t: Tensor | undefined): Float64Array {
  if (t === undefined) throw new Error('missing tensor');
  return Float64Array.from(t.data as ArrayLike<number>);
}
