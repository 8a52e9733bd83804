/**
 * What the plan translator reads about a layer: the manifest's layer with its constants already in
 * memory. Two sources produce it — a loaded bundle (fromManifest: blobs read from weights/*.bin)
 * and, for tests and in-process use, the IR itself (fromIrLayer) — so the translator has one input
 * type and no file access.
 */
import { tensorBytes } from '../bundle/blobs.js';
import type { BlobRef, Manifest, ManifestLayer, ManifestVersion } from '../bundle/manifest.js';
import { versionSplit, versionTiling, type ThreadSplit, type Tiling } from '../bundle/thread-split.js';
import type { Layer } from '../ir/layer.js';
import type { DType } from '../onnx/model.js';

/** A constant in natural layout: little-endian bytes of `dtype` (int64 as int64, float16 widened to float32). */
export interface ParamData {
  readonly dtype: DType;
  readonly dims: readonly number[];
  readonly bytes: Uint8Array;
}

export interface RuntimeVersion {
  readonly id: string;
  readonly symbol: string;
  /** Packed by <symbol>_pack_weight (conv2d / dense); absent for batch_matmul. */
  readonly packedWeight?: Uint8Array;
  /** Scratch bytes its run function needs (vt_desc.workspace_bytes; the executor checks it). */
  readonly workspaceBytes: number;
  /** How its threads divide the output when more than one runs it (absent: unknown). */
  readonly split?: ThreadSplit;
  /** Its loop problem and schedule, for a conv (which thread writes what: space/tile-owner.ts). */
  readonly tiling?: Tiling;
  /** An INT8 version: packedWeight holds w, comp and mult (codegen/int8-pack.ts int8Blob); where comp and mult start. */
  readonly int8?: { readonly compOffset: number; readonly multOffset: number };
}

export interface RuntimeLayer {
  readonly index: number;
  readonly name: string;
  readonly op: string;
  readonly tunable: boolean;
  readonly inputShapes: readonly (readonly number[])[];
  readonly outputShape: readonly number[];
  readonly dtype: DType;
  readonly attrs: Readonly<Record<string, number | string | readonly number[]>>;
  /** Epilogue step kinds in order (their operands are the plan step's trailing inputs). */
  readonly epilogue: readonly ('bias' | 'activation' | 'residual_add' | 'channel_mul')[];
  readonly epilogueParams: readonly number[];
  readonly params: Readonly<Record<string, ParamData>>;
  readonly versions: readonly RuntimeVersion[];
}

export function fromManifest(m: Manifest, readBlob: (ref: BlobRef) => Uint8Array): RuntimeLayer[] {
  return m.layers.map((l) => ({
    index: l.index,
    name: l.name,
    op: l.op,
    tunable: l.tunable,
    inputShapes: l.inputShapes,
    outputShape: l.outputShape,
    dtype: l.dtype,
    attrs: l.attrs,
    epilogue: l.epilogue.map((s) => s.kind),
    epilogueParams: l.epilogueParams,
    params: Object.fromEntries(Object.entries(l.params).map(([k, p]) => [k, { dtype: p.dtype, dims: p.dims, bytes: readBlob(p) }])),
    versions: l.versions
      .filter((v) => v.inPlan)
      .map((v) => ({
        id: v.id,
        symbol: v.symbol,
        workspaceBytes: v.workspaceBytes,
        ...(v.packedWeight ? { packedWeight: readBlob(v.packedWeight) } : {}),
        ...(v.int8 ? { int8: v.int8 } : {}),
        ...splitOf(l, v),
      })),
  }));
}

function splitOf(l: ManifestLayer, v: ManifestVersion): { split?: ThreadSplit; tiling?: Tiling } {
  const split = versionSplit(l, v),
    tiling = versionTiling(l, v);
  return { ...(split ? { split } : {}), ...(tiling ? { tiling } : {}) };
}

/** The ABI's epi_params for an IR epilogue (same rule as the bundle writer). */
function epilogueParams(l: Layer): number[] {
  const out: number[] = [];
  for (const s of l.epilogue) {
    if (s.kind !== 'activation') continue;
    const a = s.activation;
    if (a.fn === 'clip') out.push(a.min, a.max);
    else if (a.fn === 'leaky_relu') out.push(a.alpha);
    else if (a.fn === 'hard_sigmoid') out.push(a.alpha, a.beta);
  }
  return out;
}

/** An IR layer as the translator sees it; tunable layers take their versions (with packed weights) from the caller. */
export function fromIrLayer(l: Layer, versions: readonly RuntimeVersion[] = []): RuntimeLayer {
  const params: Record<string, ParamData> = {};
  for (const [k, t] of Object.entries(l.params)) {
    if (l.tunable && k === 'weight') continue;
    const { bytes, dtype } = tensorBytes(t, l.name);
    params[k] = { dtype, dims: [...t.dims], bytes };
  }
  return {
    index: l.index,
    name: l.name,
    op: l.op,
    tunable: l.tunable,
    inputShapes: l.inputShapes,
    outputShape: l.outputShape,
    dtype: l.dtype,
    attrs: l.attrs,
    epilogue: l.epilogue.map((s) => s.kind),
    epilogueParams: epilogueParams(l),
    params,
    versions,
  };
}

/** A param's values as float32 (copied: blob bytes need not be 4-byte aligned). */
export function paramFloats(p: ParamData): Float32Array {
  // Uint8Array's slice copies; a Buffer's (blobs read from a bundle are Buffers) would be a view whose
  // .buffer starts at the file's first byte, not at this param.
  const copy = Uint8Array.prototype.slice.call(p.bytes) as Uint8Array;
  if (p.dtype === 'float32') return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
  if (p.dtype === 'float64') return Float32Array.from(new Float64Array(copy.buffer, 0, copy.byteLength / 8));
  if (p.dtype === 'int64') return Float32Array.from(new BigInt64Array(copy.buffer, 0, copy.byteLength / 8), (v) => Number(v));
  if (p.dtype === 'int32') return Float32Array.from(new Int32Array(copy.buffer, 0, copy.byteLength / 4));
  return Float32Array.from(copy);
}
