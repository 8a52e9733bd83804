/**
 * The op-bandwidth benchmark's accounting (bytes a plan step moves, the copy size standing for it)
 * and the copy-bandwidth probe it compares against: real memcpy on this machine, one rate per size,
 * and a clear error for a probe it cannot run.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execa } from 'execa';
import { bytesMoved, copySizeFor } from '../src/bench/op-bandwidth.js';
import { measureCopyBandwidth } from '../src/measure/copy-bandwidth.js';
import { ensureTool } from '../src/toolchain/tools.js';

const sizes = new Map([
  [0, 4096],
  [1, 1024],
  [2, 4096],
  [3, 512],
]);
const bytes = (id: number) => sizes.get(id)!;

test('bytesMoved: distinct inputs read once, outputs written once; selecting ops read what they write', () => {
  assert.equal(bytesMoved({ inputs: [0, 1], outputs: [2] }, 'add', bytes), 4096 + 1024 + 4096);
  assert.equal(bytesMoved({ inputs: [0, 0], outputs: [2] }, 'mul', bytes), 4096 + 4096, 'x * x reads x once');
  // A channel gather takes each output channel from one of its inputs: a 4096-byte input feeding 512 bytes of output reads 512.
  assert.equal(bytesMoved({ inputs: [0, 2], outputs: [3] }, 'channelgather', bytes), 512 + 512);
  assert.equal(bytesMoved({ inputs: [0, 1], outputs: [3] }, 'gather', bytes), 1024);
  assert.equal(bytesMoved({ inputs: [0], outputs: [] }, 'reshape', bytes), 0, 'a step writing nothing moves nothing');
});

test('copySizeFor: half the bytes moved, on a grid of √2 steps, at least 64 bytes', () => {
  assert.equal(copySizeFor(2 * 65536), 65536);
  assert.equal(copySizeFor(2 * 1_000_000), Math.round(2 ** (Math.round(Math.log2(1_000_000) * 2) / 2)));
  assert.equal(copySizeFor(10), 64);
  // Sizes within a step of each other share one probe size.
  assert.equal(copySizeFor(2 * 65000), copySizeFor(2 * 66000));
  assert.notEqual(copySizeFor(2 * 65536), copySizeFor(4 * 65536));
});

test('measureCopyBandwidth: one positive rate per distinct size, on the first core', { timeout: 60_000 }, async () => {
  const bw = await measureCopyBandwidth([4096, 65536, 4096], { ms: 2, reps: 2 });
  assert.deepEqual([...bw.keys()], [4096, 65536]);
  for (const gbps of bw.values()) assert.ok(Number.isFinite(gbps) && gbps > 0, `rate ${gbps}`);
});

test('the copy probe refuses a bad option with a JSON error line and exit 2', { timeout: 60_000 }, async () => {
  const r = await execa(await ensureTool('copybw'), ['--cores', '0', '--bytes', 'x'], { reject: false });
  assert.equal(r.exitCode, 2);
  assert.match(JSON.parse(r.stdout).error as string, /usage: copybw/);
});
