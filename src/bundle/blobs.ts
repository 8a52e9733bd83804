/**
 * A blob file (weights/packed.bin, weights/params.bin): byte ranges appended at 64-byte-aligned
 * offsets (cache-line and AVX-512 aligned once the runtime maps the file at an aligned address),
 * identical contents stored once.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Tensor, DType } from '../onnx/model.js';
import { userError, quoteForMessage } from '../errors.js';
import type { BlobRef, ParamRef } from './manifest.js';

export const BLOB_ALIGN = 64;

export const sha256Hex = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export interface BlobFile {
  /** Append (or find) `bytes`; returns where they are. */
  add(bytes: Uint8Array): BlobRef;
  readonly size: number;
  close(): void;
}

export function openBlobFile(absPath: string, relPath: string): BlobFile {
  const fd = openSync(absPath, 'wx');
  const seen = new Map<string, BlobRef>();
  let size = 0;
  return {
    add(bytes) {
      const sha256 = sha256Hex(bytes);
      const known = seen.get(sha256);
      if (known) return known;
      const offset = Math.ceil(size / BLOB_ALIGN) * BLOB_ALIGN;
      if (offset > size) writeSync(fd, Buffer.alloc(offset - size), 0, offset - size, size);
      let done = 0;
      while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, offset + done);
      size = offset + bytes.length;
      const ref = { file: relPath, offset, length: bytes.length, sha256 };
      seen.set(sha256, ref);
      return ref;
    },
    get size() {
      return size;
    },
    close() {
      closeSync(fd);
    },
  };
}

/** A constant's bytes as stored (little-endian), and the dtype they are stored as. */
export function tensorBytes(t: Tensor, owner: string): { bytes: Uint8Array; dtype: DType } {
  const d = t.data;
  if (Array.isArray(d)) {
    throw userError(
      'BAD_INPUT',
      `layer ${quoteForMessage(owner)} has a string constant, which a bundle cannot hold`,
      'bundles hold numeric constants only; remove or fold the string-valued node',
    );
  }
  const view = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  // float16/bfloat16 are widened on decode: they are stored as float32
  if (d instanceof Float32Array) return { bytes: view(d), dtype: 'float32' };
  if (d instanceof Float64Array && (t.dtype === 'int64' || t.dtype === 'uint64')) {
    const out = new BigInt64Array(d.length);
    for (let i = 0; i < d.length; i++) out[i] = BigInt(Math.trunc(d[i]!));
    return { bytes: view(out), dtype: 'int64' };
  }
  return { bytes: view(d), dtype: t.dtype };
}

export function addParam(file: BlobFile, t: Tensor, owner: string): ParamRef {
  const { bytes, dtype } = tensorBytes(t, owner);
  return { ...file.add(bytes), dtype, dims: [...t.dims] };
}
