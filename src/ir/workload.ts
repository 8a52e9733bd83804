/**
 * A workload is one tunable layer's computation with shapes, attributes, dtype and epilogue kinds
 * fixed. Its key is a stable, platform-independent hash of a canonical form: identical layers in any
 * model share it, and the tuning database is keyed by it.
 */
import { createHash } from 'node:crypto';

export type EpilogueKind =
  | 'bias'
  | 'relu'
  | 'clip'
  | 'leaky_relu'
  | 'sigmoid'
  | 'hard_sigmoid'
  | 'hard_swish'
  | 'silu'
  | 'tanh'
  | 'gelu'
  | 'gelu_tanh'
  | 'residual_add'
  | 'channel_mul';

export interface Conv2dWorkload {
  readonly op: 'conv2d';
  readonly dtype: 'float32';
  readonly n: number;
  readonly cin: number;
  readonly h: number;
  readonly w: number;
  readonly cout: number;
  readonly kh: number;
  readonly kw: number;
  readonly strideH: number;
  readonly strideW: number;
  /** top, left, bottom, right */
  readonly pads: readonly [number, number, number, number];
  readonly dilationH: number;
  readonly dilationW: number;
  readonly groups: number;
  readonly oh: number;
  readonly ow: number;
  readonly epilogue: readonly EpilogueKind[];
}

/** Y[m, n] = X[m, k] · W[k, n] with W constant (Gemm / MatMul by an initializer). */
export interface DenseWorkload {
  readonly op: 'dense';
  readonly dtype: 'float32';
  readonly m: number;
  readonly k: number;
  readonly n: number;
  readonly epilogue: readonly EpilogueKind[];
}

/** Y[b, m, n] = A[b, m, k] · B[b, k, n], both activations (B given transposed when transB). */
export interface BatchMatmulWorkload {
  readonly op: 'batch_matmul';
  readonly dtype: 'float32';
  readonly batch: number;
  readonly m: number;
  readonly k: number;
  readonly n: number;
  readonly transB: boolean;
  readonly epilogue: readonly EpilogueKind[];
}

export type WorkloadShape = Conv2dWorkload | DenseWorkload | BatchMatmulWorkload;
export type Workload = WorkloadShape & { readonly key: string };

/** Canonical JSON: keys sorted, so the same workload hashes the same on every platform and run. */
export function canonicalForm(w: WorkloadShape): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v as object)
          .filter((k) => k !== 'key')
          .sort()
          .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sortKeys(w));
}

/** `conv2d-<16 hex>`: readable op prefix, 64 bits of sha256 of the canonical form. */
export function workloadKey(w: WorkloadShape): string {
  return `${w.op}-${createHash('sha256').update(canonicalForm(w)).digest('hex').slice(0, 16)}`;
}

export function withKey(w: WorkloadShape): Workload {
  return { ...w, key: workloadKey(w) };
}

/** Multiply-accumulates of a workload; exact as long as the result is below 2^53 (checked by ir/). */
export function workloadMacs(w: WorkloadShape): number {
  switch (w.op) {
    case 'conv2d':
      return w.n * w.cout * w.oh * w.ow * (w.cin / w.groups) * w.kh * w.kw;
    case 'dense':
      return w.m * w.k * w.n;
    case 'batch_matmul':
      return w.batch * w.m * w.k * w.n;
  }
}
