/**
 * Arrays laid end to end in one binary file, each starting at a multiple of 64 bytes (so a reader's
 * typed-array views are aligned for any element type, and for SIMD loads): the layout of both
 * lsh-index.bin (hash-index.ts) and a bundle's sparse/head.bin (head-format.ts).
 */

/** Where one array sits in the file. */
export interface Blob {
  readonly offset: number;
  readonly bytes: number;
}

export interface BlobWriter {
  /** Append an array (its bytes as they are, little-endian on x86) and return where it went. */
  put(v: ArrayBufferView): Blob;
  /** The file's contents so far, in order, padding included. */
  readonly parts: readonly Uint8Array[];
}

export function blobWriter(): BlobWriter {
  const parts: Uint8Array[] = [];
  let offset = 0;
  return {
    parts,
    put(v) {
      const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
      const at = offset;
      parts.push(bytes);
      offset += bytes.byteLength;
      const pad = (64 - (offset % 64)) % 64;
      if (pad) {
        parts.push(new Uint8Array(pad));
        offset += pad;
      }
      return { offset: at, bytes: bytes.byteLength };
    },
  };
}
