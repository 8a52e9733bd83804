/**
 * The hash index of a trained model, for sparse inference (the next stage compiles it into sparse
 * versions): `lsh-index.json` (described by LSH_INDEX_SCHEMA, checked on write and on read) and
 * `lsh-index.bin` (the arrays it points into, each 64-byte aligned, little-endian).
 *
 * Per LSH-sampled layer it records which ONNX initializers it indexes, the sha256 of exactly those
 * weight and bias bytes (float32 LE, as stored in model.onnx), so a reader refuses an index that
 * does not belong to the weights it is given, and everything needed to hash and query without
 * rehashing any neuron:
 *  - simhash: signs [inputDim][rowBytes] (u8): bit b of the projection is bit (b % 8) of byte
 *    signs[j][b >> 3] at input dim j, 1 = +1 and 0 = −1; bit b of an input x is
 *    (Σ_j x_j·sign_b(j) > 0); table t's code is Σ_{k<K} bit(t·K + k) << k.
 *  - dwta: bins [L·perTable][8] (i32 dims): a bin's winner is the position (0–7) of its largest
 *    non-zero value, the first one on ties; an all-zero bin takes the winner of bin
 *    probe(b, a) = key(seed, b, a) mod (L·perTable) for the first a = 1..64 whose bin is not
 *    itself empty (else 0), with key() the splitmix64 mix of native-kernels/sparse/vs.h; table t's
 *    code is Σ_q winner(t·perTable + q) << 3q, cut to K bits.
 *  - tables: offsets [L·2^K + 1] (u32) into ids (u32): bucket (t, c) holds ids[offsets[t·2^K + c] …
 *    offsets[t·2^K + c + 1]), at most R of them. Built from the final weights at export.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { internalError, userError } from '../errors.js';
import { blobWriter, type Blob } from '../sparse-head/aligned-blobs.js';
import { writeFileAtomic, writeTextAtomic } from '../atomic-file.js';
import { biasName, weightName, type LayerWeights } from './export-onnx.js';
import type { SparseLayer } from './layers.js';
import type { HashInfo, TablesDump } from './native.js';

export const INDEX_JSON = 'lsh-index.json';
export const INDEX_BIN = 'lsh-index.bin';
export const INDEX_FORMAT = 'veltair-lsh-index';
export const INDEX_VERSION = 1;

const blob = {
  type: 'object',
  additionalProperties: false,
  required: ['offset', 'bytes'],
  properties: { offset: { type: 'integer', minimum: 0 }, bytes: { type: 'integer', minimum: 0 } },
} as const;

export const LSH_INDEX_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['format', 'version', 'model', 'bin', 'binSha256', 'layers'],
  properties: {
    format: { const: INDEX_FORMAT },
    version: { const: INDEX_VERSION },
    model: { type: 'string' },
    bin: { type: 'string' },
    binSha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    layers: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['layer', 'weight', 'bias', 'weightsSha256', 'dim', 'inputDim', 'sparsity', 'family', 'K', 'L', 'R', 'seed', 'tables'],
        properties: {
          layer: { type: 'integer', minimum: 1 },
          weight: { type: 'string' },
          bias: { type: 'string' },
          weightsSha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          dim: { type: 'integer', minimum: 1 },
          inputDim: { type: 'integer', minimum: 1 },
          sparsity: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
          family: { enum: ['simhash', 'dwta'] },
          K: { type: 'integer', minimum: 1, maximum: 30 },
          L: { type: 'integer', minimum: 1 },
          R: { type: 'integer', minimum: 1 },
          seed: { type: 'string', pattern: '^[0-9]+$' },
          simhash: {
            type: 'object',
            additionalProperties: false,
            required: ['rowBytes', 'signs'],
            properties: { rowBytes: { type: 'integer', minimum: 1 }, signs: blob },
          },
          dwta: {
            type: 'object',
            additionalProperties: false,
            required: ['perTable', 'binSize', 'bitsPerHash', 'bins'],
            properties: { perTable: { type: 'integer', minimum: 1 }, binSize: { const: 8 }, bitsPerHash: { const: 3 }, bins: blob },
          },
          tables: { type: 'object', additionalProperties: false, required: ['offsets', 'ids'], properties: { offsets: blob, ids: blob } },
        },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: true, strictRequired: false }).compile(LSH_INDEX_SCHEMA);

export interface IndexLayer {
  readonly layer: number;
  readonly weight: string;
  readonly bias: string;
  readonly weightsSha256: string;
  readonly dim: number;
  readonly inputDim: number;
  readonly sparsity: number;
  readonly family: 'simhash' | 'dwta';
  readonly K: number;
  readonly L: number;
  readonly R: number;
  /** The layer's hash seed, decimal (a u64). */
  readonly seed: string;
  readonly simhash?: { readonly rowBytes: number; readonly signs: Blob };
  readonly dwta?: { readonly perTable: number; readonly binSize: 8; readonly bitsPerHash: 3; readonly bins: Blob };
  readonly tables: { readonly offsets: Blob; readonly ids: Blob };
}

export interface HashIndex {
  readonly format: typeof INDEX_FORMAT;
  readonly version: typeof INDEX_VERSION;
  readonly model: string;
  readonly bin: string;
  readonly binSha256: string;
  readonly layers: readonly IndexLayer[];
}

/** sha256 of a layer's weights then its bias, as float32 little-endian bytes. */
export function weightsSha256(w: LayerWeights): string {
  return createHash('sha256')
    .update(new Uint8Array(w.w.buffer, w.w.byteOffset, w.w.byteLength))
    .update(new Uint8Array(w.b.buffer, w.b.byteOffset, w.b.byteLength))
    .digest('hex');
}

export interface IndexedLayer {
  readonly layer: SparseLayer;
  readonly weights: LayerWeights;
  readonly hash: HashInfo;
  readonly tables: TablesDump;
}

export async function writeHashIndex(dir: string, model: string, layers: readonly IndexedLayer[]): Promise<HashIndex> {
  const { put, parts } = blobWriter();
  const entries: IndexLayer[] = layers.map(({ layer: l, weights, hash, tables }) => {
    if (!l.hash) throw internalError(`layer ${l.index} is not sparse`);
    const family = l.hash.family;
    return {
      layer: l.index,
      weight: weightName(l.index),
      bias: biasName(l.index),
      weightsSha256: weightsSha256(weights),
      dim: l.dim,
      inputDim: l.inputDim,
      sparsity: l.sparsity,
      family,
      K: hash.K,
      L: hash.L,
      R: hash.R,
      seed: hash.seed.toString(),
      ...(family === 'simhash'
        ? { simhash: { rowBytes: hash.rowBytes, signs: put(hash.signs!) } }
        : { dwta: { perTable: hash.perTable, binSize: 8 as const, bitsPerHash: 3 as const, bins: put(hash.bins!) } }),
      tables: { offsets: put(tables.offsets), ids: put(tables.ids) },
    };
  });
  const binSha256 = parts.reduce((h, p) => h.update(p), createHash('sha256')).digest('hex');
  const index: HashIndex = { format: INDEX_FORMAT, version: INDEX_VERSION, model, bin: INDEX_BIN, binSha256, layers: entries };
  if (!validate(index)) throw internalError(`the hash index does not match its schema: ${JSON.stringify(validate.errors?.[0])}`);
  await writeFileAtomic(join(dir, INDEX_BIN), parts);
  await writeTextAtomic(join(dir, INDEX_JSON), JSON.stringify(index, null, 2) + '\n');
  return index;
}

export interface LoadedIndex {
  readonly index: HashIndex;
  readonly bin: Uint8Array;
}

/** Read and check an index: schema, the bin's sha256 and every blob's bounds. */
export async function readHashIndex(dir: string): Promise<LoadedIndex> {
  const path = join(dir, INDEX_JSON);
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    throw userError(
      'BAD_INPUT',
      `cannot read the hash index ${path}: ${(e as Error).message}`,
      'export the model again with `veltair train`',
    );
  }
  if (!validate(data))
    throw userError(
      'BAD_INPUT',
      `${path} is not a veltair hash index (${validate.errors?.[0]?.instancePath} ${validate.errors?.[0]?.message})`,
      'export the model again with `veltair train`',
    );
  const index = data as unknown as HashIndex;
  const bin = new Uint8Array(await readFile(join(dir, index.bin)));
  if (createHash('sha256').update(bin).digest('hex') !== index.binSha256) {
    throw userError(
      'BAD_INPUT',
      `${join(dir, index.bin)} does not match the sha256 in ${path}`,
      'the index was modified or truncated; export the model again',
    );
  }
  for (const l of index.layers) {
    for (const b of [l.simhash?.signs, l.dwta?.bins, l.tables.offsets, l.tables.ids]) {
      if (b && b.offset + b.bytes > bin.byteLength)
        throw userError('BAD_INPUT', `${path}: layer ${l.layer} points past the end of ${index.bin}`, 'export the model again');
    }
  }
  return { index, bin };
}
