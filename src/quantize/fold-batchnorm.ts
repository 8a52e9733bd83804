/**
 * Before quantizing, a BatchNormalization that only rescales a Conv's output is folded into that
 * Conv's weight and bias (w·γ/√(σ²+ε), (b−μ)·γ/√(σ²+ε)+β), as ONNX Runtime's quantizer does in its
 * pre-processing: quantized per channel, the folded weight loses nothing, and the Conv's activation
 * (Relu, Clip) then follows it directly and folds into the quantized layer.
 */
import onnxProto from 'onnx-proto';
import type { Tensor } from '../onnx/model.js';
import { tensorProto } from '../onnx/encode.js';
import { tensorFromProto } from '../onnx/tensor.js';

const { onnx } = onnxProto;

function floatsOf(t: Tensor): Float64Array {
  return Float64Array.from(t.data as ArrayLike<number>);
}

/** The model with every foldable Conv → BatchNormalization pair folded; the number folded. */
export function foldBatchNorms(bytes: Uint8Array): { bytes: Uint8Array; folded: number } {
  const m = onnx.ModelProto.decode(bytes);
  const g = m.graph!;
  const inits = new Map((g.initializer ?? []).map((t) => [t.name ?? '', t]));
  const value = (name: string | undefined): Tensor | undefined => {
    const t = name ? inits.get(name) : undefined;
    return t === undefined ? undefined : tensorFromProto(t);
  };
  const producer = new Map<string, onnxProto.onnx.INodeProto>();
  const readers = new Map<string, number>();
  for (const n of g.node ?? []) {
    for (const o of n.output ?? []) producer.set(o, n);
    for (const i of n.input ?? []) readers.set(i, (readers.get(i) ?? 0) + 1);
  }
  const outputs = new Set((g.output ?? []).map((o) => o.name ?? ''));
  const used = new Set([...inits.keys(), ...producer.keys(), ...readers.keys()]);
  const fresh = (base: string): string => {
    let name = base;
    for (let i = 1; used.has(name); i++) name = `${base}${i}`;
    used.add(name);
    return name;
  };
  const removed = new Set<onnxProto.onnx.INodeProto>();
  /** Initializers only the folded pairs read: dropped once nothing reads them. */
  const orphans = new Set<string>();
  let folded = 0;
  for (const bn of g.node ?? []) {
    if (bn.opType !== 'BatchNormalization' || (bn.domain ?? '') !== '' || (bn.output ?? []).filter((o) => o !== '').length !== 1) continue;
    const x = bn.input![0]!;
    const conv = producer.get(x);
    if (conv === undefined || conv.opType !== 'Conv' || readers.get(x) !== 1 || outputs.has(x)) continue;
    const w = value(conv.input![1]);
    const b = conv.input![2] ? value(conv.input![2]) : undefined;
    const [gamma, beta, mean, variance] = bn.input!.slice(1, 5).map(value);
    if (w?.dtype !== 'float32' || (conv.input![2] && b === undefined) || [gamma, beta, mean, variance].some((t) => t === undefined))
      continue;
    const eps = (bn.attribute ?? []).find((a) => a.name === 'epsilon')?.f ?? 1e-5;
    const [ga, be, mu, va] = [gamma!, beta!, mean!, variance!].map(floatsOf) as [Float64Array, Float64Array, Float64Array, Float64Array];
    const channels = w.dims[0]!;
    const per = w.data.length / channels;
    const factor = Float64Array.from({ length: channels }, (_, c) => ga[c]! / Math.sqrt(va[c]! + eps));
    const bias = b === undefined ? new Float64Array(channels) : floatsOf(b);
    const wNew: Tensor = {
      dtype: 'float32',
      dims: w.dims,
      data: Float32Array.from(w.data as Float32Array, (v, i) => v * factor[Math.floor(i / per)]!),
    };
    const bNew: Tensor = {
      dtype: 'float32',
      dims: [channels],
      data: Float32Array.from(factor, (f, c) => (bias[c]! - mu[c]!) * f + be[c]!),
    };
    const [wName, bName] = [fresh(`${conv.input![1]}_bn_folded`), fresh(`${bn.output![0]}_bias_bn_folded`)];
    g.initializer!.push(tensorProto(wName, wNew), tensorProto(bName, bNew));
    for (const v of [...conv.input!.slice(1), ...bn.input!.slice(1)]) orphans.add(v);
    conv.input = [conv.input![0]!, wName, bName];
    conv.output = [bn.output![0]!];
    removed.add(bn);
    folded++;
  }
  if (folded === 0) return { bytes, folded };
  g.node = (g.node ?? []).filter((n) => !removed.has(n));
  const read = new Set((g.node ?? []).flatMap((n) => n.input ?? []));
  const dropped = (name: string): boolean => orphans.has(name) && !read.has(name) && !outputs.has(name);
  g.initializer = (g.initializer ?? []).filter((t) => !dropped(t.name ?? ''));
  g.input = (g.input ?? []).filter((v) => !dropped(v.name ?? ''));
  return { bytes: onnx.ModelProto.encode(m).finish(), folded };
}
