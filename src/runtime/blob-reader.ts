/**
 * The bundle's blobs (weights, packed weights, params), each read from its byte range of its file once.
 * Whole files are not read: a large model's packed weights (vit_h_14: 2.5 GB) are over what one read
 * of a file into a Buffer may hold (2 GiB).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { BlobRef } from '../bundle/manifest.js';
import { internalError } from '../errors.js';

/** Reads blobs of the bundle in `dir`; `close` releases its files. */
export function blobReader(dir: string): { read: (ref: BlobRef) => Uint8Array; close: () => void } {
  const fds = new Map<string, number>();
  const blobs = new Map<string, Uint8Array>();
  const read = (ref: BlobRef): Uint8Array => {
    // readBundle has already checked that ref.file is listed, stays inside the bundle and holds the range.
    const key = `${ref.file}@${ref.offset}+${ref.length}`;
    const cached = blobs.get(key);
    if (cached) return cached;
    let fd = fds.get(ref.file);
    if (fd === undefined) {
      fd = openSync(join(dir, ref.file), 'r');
      fds.set(ref.file, fd);
    }
    const bytes = Buffer.allocUnsafeSlow(ref.length);
    let done = 0;
    while (done < ref.length) {
      const n = readSync(fd, bytes, done, ref.length - done, ref.offset + done);
      if (n === 0) throw internalError(`blob ${ref.file}@${ref.offset} lies outside its file`);
      done += n;
    }
    blobs.set(key, bytes);
    return bytes;
  };
  return {
    read,
    close: () => {
      for (const fd of fds.values()) closeSync(fd);
    },
  };
}
