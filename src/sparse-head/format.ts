/**
 * A bundle's sparse family for its large output layer ("the head"): `sparse/head.json` (described
 * by HEAD_SCHEMA, checked on write and on read) and `sparse/head.bin` (every array it points into,
 * each 64-byte aligned, little-endian, like lsh-index.bin):
 *  - weight [n][d] float32, neuron-major (a neuron's weight vector is contiguous: what the tables
 *    index and what a sparse query gathers), bias [n] float32;
 *  - the hash: simhash signs [d][rowBytes] u8 or DWTA bins [L·perTable][8] i32 (hash-index.ts
 *    documents both encodings);
 *  - tables: offsets [L·2^K + 1] u32 into ids u32;
 *  - always (optional): distinct neuron ids u32, most useful first: a version with `always` a > 0
 *    scores the first a of them for every input, then its buckets' candidates in the budget left
 *    (head-always.ts chooses them from the calibration inputs).
 * `weightsSha256` is the sha256 of the weight bytes then the bias bytes (the same digest
 * lsh-index.json carries), checked at load: an index is never used over weights it was not built
 * from. The runtime maps these arrays in place: nothing is rehashed at load.
 *
 * Every measured version is listed (`kept` marks the family: the versions no other beats on both
 * latency and recall@1), so plots show the whole frontier.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { internalError, userError } from '../errors.js';
import { blobWriter, type Blob } from './aligned-blobs.js';
import { writeFileAtomic, writeTextAtomic } from '../atomic-file.js';

export const HEAD_JSON = 'sparse/head.json';
export const HEAD_BIN = 'sparse/head.bin';
export const HEAD_FORMAT = 'veltair-sparse-head';
export const HEAD_VERSION = 1;

const blob = {
  type: 'object',
  additionalProperties: false,
  required: ['offset', 'bytes'],
  properties: { offset: { type: 'integer', minimum: 0, multipleOf: 64 }, bytes: { type: 'integer', minimum: 0 } },
} as const;
const latency = {
  type: 'object',
  propertyNames: { pattern: '^[0-4]$' },
  additionalProperties: { type: 'number', exclusiveMinimum: 0 },
} as const;
const fraction = { type: 'number', minimum: 0, maximum: 1 } as const;

export const HEAD_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['format', 'version', 'layer', 'weightsSha256', 'hash', 'index', 'blobs', 'calibration', 'latencyLevels', 'versions'],
  properties: {
    format: { const: HEAD_FORMAT },
    version: { const: HEAD_VERSION },
    layer: {
      type: 'object',
      additionalProperties: false,
      required: ['index', 'name', 'input', 'output', 'activation', 'n', 'd', 'k', 'outputs'],
      properties: {
        index: { type: 'integer', minimum: 0 },
        name: { type: 'string' },
        input: { type: 'string' },
        output: { type: 'string' },
        activation: { enum: ['softmax', 'sigmoid', 'none'] },
        n: { type: 'integer', minimum: 1 },
        d: { type: 'integer', minimum: 1 },
        k: { type: 'integer', minimum: 1 },
        outputs: {
          type: 'object',
          additionalProperties: false,
          required: ['values', 'indices'],
          properties: { values: { type: 'string' }, indices: { type: 'string' } },
        },
      },
    },
    weightsSha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    hash: {
      type: 'object',
      additionalProperties: false,
      required: ['family', 'K', 'L', 'R', 'seed', 'rowBytes', 'perTable'],
      properties: {
        family: { enum: ['simhash', 'dwta'] },
        K: { type: 'integer', minimum: 1, maximum: 30 },
        L: { type: 'integer', minimum: 1, maximum: 4096 },
        R: { type: 'integer', minimum: 1 },
        seed: { type: 'string', pattern: '^[0-9]{1,20}$' },
        rowBytes: { type: 'integer', minimum: 0 },
        perTable: { type: 'integer', minimum: 0 },
      },
    },
    index: {
      type: 'object',
      additionalProperties: false,
      required: ['source', 'note'],
      properties: { source: { enum: ['trained', 'compiled'] }, note: { type: 'string' } },
    },
    blobs: {
      type: 'object',
      additionalProperties: false,
      required: ['weight', 'bias', 'offsets', 'ids'],
      properties: { weight: blob, bias: blob, signs: blob, bins: blob, offsets: blob, ids: blob, always: blob },
    },
    calibration: {
      type: 'object',
      additionalProperties: false,
      required: ['source', 'path', 'rows', 'labelled', 'note'],
      properties: {
        source: { enum: ['file', 'training-data', 'generated'] },
        path: { type: ['string', 'null'] },
        rows: { type: 'integer', minimum: 1 },
        labelled: { type: 'boolean' },
        note: { type: 'string' },
      },
    },
    latencyLevels: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 4 }, minItems: 1 },
    versions: {
      type: 'array',
      minItems: 1,
      maxItems: 64,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'sparsity', 'budget', 'latencyMs', 'repeatsMs', 'recallAt1', 'recallAt5', 'precisionAt1', 'scoredMean', 'kept'],
        properties: {
          id: { type: 'string', pattern: '^s[0-9.]+$' },
          sparsity: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
          budget: { type: 'integer', minimum: 0 },
          always: { type: 'integer', minimum: 0 },
          tables: { type: 'integer', minimum: 1 },
          latencyMs: latency,
          repeatsMs: { type: 'array', items: { type: 'number' } },
          recallAt1: fraction,
          recallAt5: fraction,
          precisionAt1: { anyOf: [fraction, { type: 'null' }] },
          scoredMean: { type: 'number', minimum: 0 },
          kept: { type: 'boolean' },
        },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: true, strictRequired: false, allowUnionTypes: true }).compile(HEAD_SCHEMA);

export type HashFamily = 'simhash' | 'dwta';

export interface HeadVersion {
  /** `s` + the sparsity, e.g. s1, s0.01. */
  readonly id: string;
  readonly sparsity: number;
  /** Neurons scored per input at most: 0 = every neuron (the dense path, sparsity 1). */
  readonly budget: number;
  /** Of the budget, how many of the head's always list are scored for every input (absent in older heads: 0). */
  readonly always?: number;
  /** How many of the head's tables (the first ones) its buckets come from (absent: all). */
  readonly tables?: number;
  /** Median latency of one input per interference level measured (ms). */
  readonly latencyMs: Readonly<Record<string, number>>;
  /** Every timed repeat at level 0 (ms per input). */
  readonly repeatsMs: readonly number[];
  /** Against the dense version on the calibration set. */
  readonly recallAt1: number;
  readonly recallAt5: number;
  /** Top-1 among the labels, where the calibration set has labels. */
  readonly precisionAt1: number | null;
  /** Neurons actually scored per input, averaged over the calibration set. */
  readonly scoredMean: number;
  readonly kept: boolean;
}

export interface HeadMeta {
  readonly format: typeof HEAD_FORMAT;
  readonly version: typeof HEAD_VERSION;
  readonly layer: {
    readonly index: number;
    readonly name: string;
    readonly input: string;
    readonly output: string;
    readonly activation: 'softmax' | 'sigmoid' | 'none';
    readonly n: number;
    readonly d: number;
    readonly k: number;
    readonly outputs: { readonly values: string; readonly indices: string };
  };
  readonly weightsSha256: string;
  readonly hash: {
    readonly family: HashFamily;
    readonly K: number;
    readonly L: number;
    readonly R: number;
    readonly seed: string;
    readonly rowBytes: number;
    readonly perTable: number;
  };
  readonly index: { readonly source: 'trained' | 'compiled'; readonly note: string };
  readonly blobs: {
    readonly weight: Blob;
    readonly bias: Blob;
    readonly signs?: Blob;
    readonly bins?: Blob;
    readonly offsets: Blob;
    readonly ids: Blob;
    readonly always?: Blob;
  };
  readonly calibration: {
    readonly source: 'file' | 'training-data' | 'generated';
    readonly path: string | null;
    readonly rows: number;
    readonly labelled: boolean;
    readonly note: string;
  };
  readonly latencyLevels: readonly number[];
  readonly versions: readonly HeadVersion[];
}

/** The arrays of a head, as the native side reads them. */
export interface HeadArrays {
  readonly weight: Float32Array;
  readonly bias: Float32Array;
  readonly signs: Uint8Array | null;
  readonly bins: Int32Array | null;
  readonly offsets: Uint32Array;
  readonly ids: Uint32Array;
  /** Neurons the sparse versions may score for every input, most useful first (null: none). */
  readonly always: Uint32Array | null;
}

export function headWeightsSha256(weight: Float32Array, bias: Float32Array): string {
  return createHash('sha256')
    .update(new Uint8Array(weight.buffer, weight.byteOffset, weight.byteLength))
    .update(new Uint8Array(bias.buffer, bias.byteOffset, bias.byteLength))
    .digest('hex');
}

export function schemaProblem(value: unknown): string | undefined {
  if (validate(value)) return undefined;
  const e = validate.errors?.[0];
  return `${e?.instancePath || '/'} ${e?.message ?? 'is invalid'}`;
}

/** Write head.bin then head.json under `bundleDir` (its sparse/ directory must exist); returns the metadata written. */
export async function writeHead(bundleDir: string, meta: Omit<HeadMeta, 'blobs'>, a: HeadArrays): Promise<HeadMeta> {
  const { put, parts } = blobWriter();
  const blobs = {
    weight: put(a.weight),
    bias: put(a.bias),
    ...(a.signs ? { signs: put(a.signs) } : {}),
    ...(a.bins ? { bins: put(a.bins) } : {}),
    offsets: put(a.offsets),
    ids: put(a.ids),
    ...(a.always ? { always: put(a.always) } : {}),
  };
  const full: HeadMeta = { ...meta, blobs };
  const problem = schemaProblem(full);
  if (problem) throw internalError(`the sparse head veltair built does not match its schema: ${problem}`);
  await writeFileAtomic(join(bundleDir, HEAD_BIN), parts);
  await writeTextAtomic(join(bundleDir, HEAD_JSON), JSON.stringify(full, null, 2) + '\n');
  return full;
}

const HINT = 'the bundle was modified or is corrupt; recompile it with veltair compile';

/** Only head.json, schema-checked (readers that run nothing, e.g. plots; readBundle has hashed the files). */
export async function readHeadMeta(bundleDir: string): Promise<HeadMeta> {
  const path = join(bundleDir, HEAD_JSON);
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    throw userError('BAD_BUNDLE', `cannot read the sparse head ${path}: ${(e as Error).message}`, HINT);
  }
  const problem = schemaProblem(data);
  if (problem) throw userError('BAD_BUNDLE', `${path} is not a veltair sparse head: ${problem}`, HINT);
  return data as HeadMeta;
}

export interface LoadedHead {
  readonly meta: HeadMeta;
  readonly arrays: HeadArrays;
}

/**
 * Read and check a head: schema, every blob inside head.bin with the length its shape needs, and
 * the sha256 of the weights against the one the index was built over.
 */
export async function readHead(bundleDir: string): Promise<LoadedHead> {
  const path = join(bundleDir, HEAD_JSON);
  const meta = await readHeadMeta(bundleDir);
  const file = await readFile(join(bundleDir, HEAD_BIN));
  // A fresh, 64-byte aligned copy: typed-array views need their element alignment, and a Buffer may sit at any offset of a shared pool.
  const bin = new Uint8Array(file.byteLength);
  bin.set(file);
  const { n, d } = meta.layer;
  const { K, L } = meta.hash;
  const view = <T>(
    name: string,
    b: Blob | undefined,
    make: (buf: ArrayBuffer, off: number, len: number) => T,
    elem: number,
    want?: number,
  ): T => {
    if (!b) throw userError('BAD_BUNDLE', `${path}: the ${name} array is missing`, HINT);
    if (b.offset + b.bytes > bin.byteLength || b.bytes % elem !== 0 || (want !== undefined && b.bytes !== want * elem)) {
      throw userError(
        'BAD_BUNDLE',
        `${path}: the ${name} array (${b.bytes} bytes at ${b.offset}) does not fit ${HEAD_BIN} or its shape`,
        HINT,
      );
    }
    return make(bin.buffer, b.offset, b.bytes / elem);
  };
  const f32 = (buf: ArrayBuffer, o: number, l: number) => new Float32Array(buf, o, l);
  const u32 = (buf: ArrayBuffer, o: number, l: number) => new Uint32Array(buf, o, l);
  const family = meta.hash.family;
  const arrays: HeadArrays = {
    weight: view('weight', meta.blobs.weight, f32, 4, n * d),
    bias: view('bias', meta.blobs.bias, f32, 4, n),
    signs:
      family === 'simhash' ? view('signs', meta.blobs.signs, (buf, o, l) => new Uint8Array(buf, o, l), 1, d * meta.hash.rowBytes) : null,
    bins: family === 'dwta' ? view('bins', meta.blobs.bins, (buf, o, l) => new Int32Array(buf, o, l), 4, L * meta.hash.perTable * 8) : null,
    offsets: view('offsets', meta.blobs.offsets, u32, 4, L * 2 ** K + 1),
    ids: view('ids', meta.blobs.ids, u32, 4),
    always: meta.blobs.always ? view('always', meta.blobs.always, u32, 4) : null,
  };
  const listed = arrays.always?.length ?? 0;
  const bad = meta.versions.find((v) => (v.always ?? 0) > listed || (v.always ?? 0) > v.budget);
  if (bad) {
    throw userError(
      'BAD_BUNDLE',
      `${path}: version ${bad.id} scores ${bad.always} always-listed neurons in a budget of ${bad.budget}, ` +
        `but the always list holds ${listed}`,
      HINT,
    );
  }
  const wide = meta.versions.find((v) => (v.tables ?? 0) > L);
  if (wide) throw userError('BAD_BUNDLE', `${path}: version ${wide.id} reads ${wide.tables} tables of the ${L} the head has`, HINT);
  const sha = headWeightsSha256(arrays.weight, arrays.bias);
  if (sha !== meta.weightsSha256) {
    throw userError(
      'BAD_BUNDLE',
      `${path}: the hash index was built over weights with sha256 ${meta.weightsSha256.slice(0, 12)}…, ` +
        `but ${HEAD_BIN} holds weights with sha256 ${sha.slice(0, 12)}…: refusing an index that does not match its weights`,
      HINT,
    );
  }
  return { meta, arrays };
}
