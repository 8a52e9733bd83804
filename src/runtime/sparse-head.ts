/**
 * A bundle's sparse output layer at run time (`sparse/head.json` + `sparse/head.bin`, compiled by
 * `veltair compile` for a large output layer, src/sparse-head/format.ts). The bundle's graph plan
 * ends at the head's input; the head then runs natively (hash the input, gather the candidate
 * neurons from their buckets, score them with SIMD dot products, top-k) on the calling thread, or
 * on a worker thread (applyAsync: what the server uses, so that its event loop is never blocked).
 *
 * Output contract: the model's output (e.g. `scores [B, N]`) is replaced by two outputs,
 * `<output>_topk_values` float32 [B, k] — the layer's scores (its Gemm + bias, before the softmax
 * or sigmoid, which keep the order) of the k best neurons, best first — and
 * `<output>_topk_indices` int64 [B, k], their class ids. A full N-way softmax is never computed.
 *
 * Versions: the kept family, densest first. Without a floor the session runs the densest (sparsity
 * 1, the dense path); with `minRecallAt1` the fastest whose measured recall@1 meets it.
 */
import { internalError, userError, quoteForMessage } from '../errors.js';
import { HEAD_JSON, readHead, type HeadMeta, type HeadVersion } from '../sparse-head/format.js';
import { createNativeHead, loadSparseHeadAddon } from '../sparse-head/addon.js';
import type { HeadTopK, SparseHeadAddon } from '../sparse-head/native-head.js';
import type { TensorInfo } from './feeds.js';
import type { HostTensor } from './host-tensor.js';

export interface SparseOptions {
  /** Run the fastest kept version whose recall@1 (against dense, on the calibration set) is at least this. */
  readonly minRecallAt1?: number;
}

export interface SparseHeadControl {
  readonly layer: HeadMeta['layer'];
  readonly calibration: HeadMeta['calibration'];
  /** The kept versions, densest first. */
  readonly versions: readonly HeadVersion[];
  /** Index into versions of the one in use. */
  readonly current: number;
  use(index: number): void;
  /** The fastest kept version meeting the floor (the densest without one); returns its index. */
  pick(options: SparseOptions): number;
}

export interface SparseHead extends SparseHeadControl {
  /** The outputs the session reports: the prefix's outputs with the head's input replaced by the top-k pair. */
  outputsFor(prefix: readonly TensorInfo[]): TensorInfo[];
  /** Replace the head input in the prefix outputs by the top-k outputs. */
  apply(outputs: Record<string, HostTensor>): Record<string, HostTensor>;
  /**
   * The same on a worker thread, with the version in use when the query starts; queries (of every
   * replica sharing this head) run one at a time, in call order. `atStart` runs as the query's turn
   * comes, just before the version is read (a server picks the version there).
   */
  applyAsync(outputs: Record<string, HostTensor>, atStart?: () => void): Promise<Record<string, HostTensor>>;
}

export function hasSparseHead(files: Readonly<Record<string, unknown>>): boolean {
  return HEAD_JSON in files;
}

function checkFloor(o: SparseOptions): void {
  const f = o.minRecallAt1;
  if (f !== undefined && !(typeof f === 'number' && f >= 0 && f <= 1)) {
    throw userError(
      'BAD_ARGUMENT',
      `minRecallAt1 ${quoteForMessage(String(f))} is not a recall between 0 and 1`,
      'e.g. { minRecallAt1: 0.95 }',
    );
  }
}

/** Index of the version to run: fastest (level 0) meeting the floor, else the densest. */
export function pickVersion(versions: readonly HeadVersion[], o: SparseOptions): number {
  checkFloor(o);
  if (o.minRecallAt1 === undefined) return 0;
  let best = 0;
  versions.forEach((v, i) => {
    if (v.recallAt1 >= o.minRecallAt1! && v.latencyMs['0']! < versions[best]!.latencyMs['0']!) best = i;
  });
  return best;
}

export async function loadSparseHead(bundleDir: string, options: SparseOptions = {}, addon?: SparseHeadAddon): Promise<SparseHead> {
  checkFloor(options);
  const { meta, arrays } = await readHead(bundleDir);
  const native = addon ?? (await loadSparseHeadAddon());
  const { n, d, k, input, outputs } = meta.layer;
  let handle: object;
  try {
    handle = createNativeHead(native, meta.hash, n, d, arrays);
  } catch (e) {
    // The addon checks every shape and neuron id before it reads a table: a failure here is a damaged bundle.
    throw userError(
      'BAD_BUNDLE',
      `${bundleDir}/${HEAD_JSON}: its hash index is not usable (${(e as Error).message})`,
      'the bundle was modified or is corrupt; recompile it with veltair compile',
    );
  }
  const versions = meta.versions.filter((v) => v.kept).sort((a, b) => b.sparsity - a.sparsity);
  if (versions.length === 0 || versions[0]!.sparsity !== 1) {
    throw userError(
      'BAD_BUNDLE',
      `${bundleDir}/${HEAD_JSON} keeps no dense (sparsity 1) version`,
      'recompile the bundle with veltair compile',
    );
  }
  let current = pickVersion(versions, options);
  let queue: Promise<void> = Promise.resolve();
  let pending = 0;
  const hiddenOf = (out: Record<string, HostTensor>) => {
    const t = out[input];
    return t && t.data instanceof Float32Array ? { data: t.data, rows: t.shape[0] ?? 1 } : undefined;
  };
  const withTopK = (out: Record<string, HostTensor>, hidden: { rows: number }, r: HeadTopK) => {
    const rows = hidden.rows;
    const result: Record<string, HostTensor> = {};
    for (const [name, t] of Object.entries(out)) {
      if (name !== input) {
        result[name] = t;
        continue;
      }
      result[outputs.values] = { dtype: 'float32', shape: [rows, k], data: r.values };
      result[outputs.indices] = { dtype: 'int64', shape: [rows, k], data: BigInt64Array.from(r.indices, (x) => BigInt(x)) };
    }
    return result;
  };
  // The version in use, as a query: its budget, always-list count and tables.
  const query = <T>(
    f: (head: object, x: Float32Array, rows: number, k: number, budget: number, always: number, tables: number) => T,
    x: Float32Array,
    rows: number,
  ): T => {
    const v = versions[current]!;
    return f.call(native, handle, x, rows, k, v.budget, v.always ?? 0, v.tables ?? 0);
  };
  const head: SparseHead = {
    layer: meta.layer,
    calibration: meta.calibration,
    versions,
    get current() {
      return current;
    },
    use(i) {
      if (!Number.isInteger(i) || i < 0 || i >= versions.length) {
        throw userError(
          'BAD_ARGUMENT',
          `the sparse head has ${versions.length} version(s); ${quoteForMessage(String(i))} is not one of them`,
          'version indices count from 0 in session.sparse.versions (densest first)',
        );
      }
      current = i;
    },
    pick(o) {
      current = pickVersion(versions, o);
      return current;
    },
    outputsFor(prefix) {
      return prefix.flatMap((t) =>
        t.name !== input
          ? [t]
          : [
              { name: outputs.values, dtype: 'float32' as const, shape: [t.shape[0]!, k] },
              { name: outputs.indices, dtype: 'int64' as const, shape: [t.shape[0]!, k] },
            ],
      );
    },
    apply(out) {
      const hidden = hiddenOf(out);
      if (!hidden) return out;
      if (pending > 0) throw internalError('a sparse head was queried synchronously while an asynchronous query ran');
      return withTopK(out, hidden, query(native.headTopK, hidden.data, hidden.rows));
    },
    applyAsync(out, atStart) {
      const hidden = hiddenOf(out);
      if (!hidden) {
        atStart?.();
        return Promise.resolve(out);
      }
      pending++;
      const run = queue.then(() => {
        atStart?.();
        return query(native.headTopKAsync, hidden.data, hidden.rows);
      });
      queue = run.then(
        () => undefined,
        () => undefined,
      );
      return run
        .then(
          (r) => withTopK(out, hidden, r),
          (e: unknown) => {
            throw internalError(`the sparse output layer ${quoteForMessage(input)} failed: ${(e as Error).message}`);
          },
        )
        .finally(() => {
          pending--;
        });
    },
  };
  return head;
}
