/**
 * The serving head's add-on (native-kernels/sparse/head/addon.c): sparse inference over one large
 * output layer. Its exports' types; src/sparse/native.ts loads it (loadSparseHeadAddon).
 */

/** Hash functions and compact tables drawn for one output layer (headTables). */
export interface HeadTables {
  readonly signs?: Uint8Array;
  readonly bins?: Int32Array;
  readonly rowBytes: number;
  readonly perTable: number;
  readonly offsets: Uint32Array;
  readonly ids: Uint32Array;
}

export interface HeadConfig {
  readonly n: number;
  readonly d: number;
  readonly family: number;
  readonly K: number;
  readonly L: number;
  readonly seed: bigint;
  readonly rowBytes: number;
  readonly perTable: number;
}

export interface HeadTopK {
  readonly values: Float32Array;
  readonly indices: Int32Array;
  /** Neurons scored over all rows. */
  readonly scored: number;
}

/** The head add-on's exports (see the comment at the top of head/addon.c). */
export interface SparseHeadAddon {
  isa(): string;
  /** The hash-family codes compiled in (checked against HASH_CODE at load). */
  codes(): { hash: Record<string, number> };
  /** Sparse inference (native-kernels/sparse/head/infer.c): draw a hash and build tables over w [n x d], neuron-major. */
  headTables(
    config: { family: number; K: number; L: number; R: number; seed: bigint; threads: number },
    w: Float32Array,
    n: number,
    d: number,
  ): HeadTables;
  /**
   * A head over the given arrays, read in place (nothing rehashed); the addon checks every shape and id. `always`: distinct neuron
   * ids, most useful first, that a sparse query may score for every input before its buckets' candidates (null: none).
   */
  headCreate(
    config: HeadConfig,
    w: Float32Array,
    b: Float32Array,
    signs: Uint8Array | null,
    bins: Int32Array | null,
    offsets: Uint32Array,
    ids: Uint32Array,
    always: Uint32Array | null,
  ): object;
  /**
   * Top k of each of `rows` inputs x [rows x d]; budget 0 (or >= n) scores every neuron (dense). A sparse budget scores the first
   * `always` ids of the head's always list, then the candidates of its first `tables` tables (0: all; most tables first) in the
   * budget left.
   */
  headTopK(head: object, x: Float32Array, rows: number, k: number, budget: number, always: number, tables: number): HeadTopK;
  /** The same on a libuv worker thread. The head takes one query at a time: another call meanwhile throws VT_BUSY. */
  headTopKAsync(head: object, x: Float32Array, rows: number, k: number, budget: number, always: number, tables: number): Promise<HeadTopK>;
  /** Pin the calling (JS) thread to `core` (false if refused); -1 restores the affinity it had before the first pin. */
  pinCallingThread(core: number): boolean;
}
