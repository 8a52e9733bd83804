/**
 * Blobs are read from their byte ranges, not as whole files: a bundle whose packed weights pass 2 GiB
 * (vit_h_14's are 2.5 GB) loads. The large file here is sparse, so it takes no disk.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, openSync, closeSync, rmSync, writeSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blobReader } from '../src/runtime/blob-reader.js';

const ref = (file: string, offset: number, length: number) => ({ file, offset, length, sha256: '' });

test('a blob beyond 2 GiB into its file is read from its range, once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-blobs-'));
  try {
    const far = 2 ** 31 + 4096;
    const fd = openSync(join(dir, 'packed.bin'), 'w');
    ftruncateSync(fd, far + 64);
    writeSync(fd, Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]), 0, 8, far);
    writeSync(fd, Buffer.from([9, 8, 7]), 0, 3, 10);
    closeSync(fd);
    const blobs = blobReader(dir);
    try {
      assert.deepEqual([...blobs.read(ref('packed.bin', far + 2, 4))], [3, 4, 5, 6]);
      assert.deepEqual([...blobs.read(ref('packed.bin', 10, 3))], [9, 8, 7]);
      assert.equal(blobs.read(ref('packed.bin', 10, 3)), blobs.read(ref('packed.bin', 10, 3)), 'the same range is read once');
      assert.throws(() => blobs.read(ref('packed.bin', far + 60, 8)), /outside its file/);
    } finally {
      blobs.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
