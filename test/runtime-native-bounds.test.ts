/**
 * The executor's load-time bounds checks, driven through the addon with hand-made plan blobs (the
 * TypeScript encoder refuses these plans itself, so the native checks are reached directly): every
 * operand is (ref, bytes), and an operand whose bytes reach past the arena's end or past its
 * param's size is a VT_PLAN error at create(), never a read past a buffer at run time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadRuntimeAddon } from '../src/runtime/native-bridge.js';
import { encodePlan, arenaRef, paramRef, type NativePlan } from '../src/runtime/native-plan.js';
import { OP } from '../src/runtime/ops.js';
import { PLAN_FORMAT, PLAN_MAGIC } from '../src/toolchain/abi.js';

const ARENA = 128;

/** A one-step COPY plan blob: ints [bytes]; in/out as (ref, bytes). */
function copyBlob(src: [number, number], dst: [number, number], copyBytes: number): Float64Array {
  return Float64Array.from([PLAN_MAGIC, PLAN_FORMAT, 1, ARENA, 1, 1, 0, 64, 64, 64,
    OP.COPY, 1, 1, 1, 1, 0, 0, ...src, ...dst, copyBytes]);
}

test('an operand reaching past the arena or its param is refused when the executor is created', async () => {
  const addon = await loadRuntimeAddon();
  const ok = addon.create(copyBlob([0, 64], [64, 64], 64), null, [], []);
  addon.close(ok);
  const refused = (blob: Float64Array, params: ArrayBufferView[] = []) =>
    assert.throws(() => addon.create(blob, null, [], params), (e: Error & { code?: string }) =>
      e.code === 'VT_PLAN' && /reaches past its end|does not exist/.test(e.message), 'refused at create');
  refused(copyBlob([0, 64], [96, 64], 64)); // offset inside the arena, offset + size not: the old check let this through
  refused(copyBlob([0, ARENA + 1], [64, 64], 64));
  refused(copyBlob([0, 64], [64, -1], 64));
  refused(copyBlob([-1, 4], [64, 64], 64)); // NONE spans nothing
  refused(copyBlob([paramRef(0), 64], [64, 64], 64), [new Float32Array(8)]); // 32-byte param read as 64
  refused(copyBlob([paramRef(1), 4], [64, 64], 64), [new Float32Array(8)]); // no such param
  const fits = addon.create(copyBlob([paramRef(0), 32], [64, 32], 32), null, [], [new Float32Array(8)]);
  addon.close(fits);
});

test('the encoder states every size and refuses one outside the arena before C sees it', () => {
  const plan = (bytes: number): NativePlan => ({
    arenaBytes: ARENA, inputs: [{ name: 'x', dtype: 'float32', shape: [16], offset: 0, bytes: 64 }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [16], offset: 64, bytes: 64 }], symbols: [], params: [],
    steps: [{ op: OP.COPY, threads: 1, label: 'copy', inputs: [arenaRef(0)], outputs: [arenaRef(96)], inputBytes: [64], outputBytes: [bytes],
      ints: [64], floats: [] }],
  });
  const words = encodePlan(plan(32));
  assert.deepEqual([...words.slice(17, 21)], [0, 64, 96, 32], 'operands go out as (ref, bytes) pairs');
  assert.throws(() => encodePlan(plan(64)), /outside the arena/);
});
