/**
 * The least memory one inference of a layer graph can run in: the largest set of values a single
 * layer holds at once (every input it reads and the output it writes, in their natural layout).
 * A lower bound — the runtime's arena holds that and more, blocked layouts pad channels, and the
 * tuner's harness keeps its own copies — so a model above the machine's memory can be refused
 * before any tuning, with the number, instead of failing in every candidate.
 */
import { dtypeByteSize } from '../onnx/dtype.js';
import type { DType } from '../onnx/model.js';
import type { Layer, LayerGraph } from './layer.js';

export interface MemoryNeed {
  /** Bytes the most demanding layer holds at once. */
  readonly bytes: number;
  /** That layer (undefined for a graph without layers). */
  readonly layer: Layer | undefined;
  /** The largest graph input: its name, shape, dtype and bytes. */
  readonly largestInput:
    { readonly name: string; readonly shape: readonly number[]; readonly dtype: DType; readonly bytes: number } | undefined;
}

const elements = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

export function minimumMemory(graph: LayerGraph): MemoryNeed {
  const dtypes = new Map<string, DType>(graph.inputs.map((i) => [i.name, i.dtype]));
  for (const l of graph.layers) for (const o of l.outputs) dtypes.set(o, l.dtype);
  let bytes = 0;
  let layer: Layer | undefined;
  for (const l of graph.layers) {
    const ins = l.inputs.reduce(
      (s, name, i) => s + elements(l.inputShapes[i] ?? graph.shapes.get(name) ?? []) * dtypeByteSize(dtypes.get(name) ?? l.dtype),
      0,
    );
    const need = ins + elements(l.outputShape) * dtypeByteSize(l.dtype);
    if (need > bytes) {
      bytes = need;
      layer = l;
    }
  }
  const inputs = graph.inputs.map((i) => ({
    name: i.name,
    shape: i.shape,
    dtype: i.dtype,
    bytes: elements(i.shape) * dtypeByteSize(i.dtype),
  }));
  const largestInput = inputs.reduce<MemoryNeed['largestInput']>((a, b) => (a === undefined || b.bytes > a.bytes ? b : a), undefined);
  return { bytes: Math.max(bytes, largestInput?.bytes ?? 0), layer, largestInput };
}

/** Bytes as a person reads them (GB = 10^9 bytes, as free(1) -h --si and the "120 GB"). */
export function formatBytes(b: number): string {
  if (b >= 1e9) return `${(b / 1e9).toFixed(1)} GB`;
  if (b >= 1e6) return `${(b / 1e6).toFixed(1)} MB`;
  return `${(b / 1e3).toFixed(1)} kB`;
}
