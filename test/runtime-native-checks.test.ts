/**
 * Native checks and conversions with defined results:
 *  - the executor's load-time bounds checks, driven through the addon with hand-made plan blobs
 *    (the TypeScript encoder refuses these plans itself, so the native checks are reached
 *    directly): every operand is (ref, bytes), and an operand whose bytes reach past the arena's
 *    end or past its param's size is a VT_PLAN error at create(), never a read past a buffer;
 *  - Cast and the strided copy's fill on values outside the target type (C leaves a double → int
 *    conversion out of range undefined): they saturate, NaN becomes 0. The sanitizer test runs
 *    this file under -fsanitize=float-cast-overflow too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadRuntimeAddon } from '../src/runtime/native-bridge.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { encodePlan, arenaRef, paramRef, type NativePlan } from '../src/runtime/native-plan.js';
import { KIND, OP } from '../src/runtime/ops.js';
import { PLAN_FORMAT, PLAN_MAGIC } from '../src/toolchain/abi.js';

const ARENA = 128;

/** A one-step COPY plan blob: ints [bytes]; in/out as (ref, bytes). */
function copyBlob(src: [number, number], dst: [number, number], copyBytes: number): Float64Array {
  return Float64Array.from([PLAN_MAGIC, PLAN_FORMAT, 1, ARENA, 1, 1, 0, 64, 64, 64, OP.COPY, 1, 1, 1, 1, 0, 0, ...src, ...dst, copyBytes]);
}

test('an operand reaching past the arena or its param is refused when the executor is created', async () => {
  const addon = await loadRuntimeAddon();
  const ok = addon.create(copyBlob([0, 64], [64, 64], 64), null, [], []);
  addon.close(ok);
  const refused = (blob: Float64Array, params: ArrayBufferView[] = []) =>
    assert.throws(
      () => addon.create(blob, null, [], params),
      (e: Error & { code?: string }) => e.code === 'VT_PLAN' && /reaches past its end|does not exist/.test(e.message),
      'refused at create',
    );
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
    arenaBytes: ARENA,
    inputs: [{ name: 'x', dtype: 'float32', shape: [16], offset: 0, bytes: 64 }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [16], offset: 64, bytes: 64 }],
    symbols: [],
    params: [],
    steps: [
      {
        op: OP.COPY,
        threads: 1,
        label: 'copy',
        inputs: [arenaRef(0)],
        outputs: [arenaRef(96)],
        inputBytes: [64],
        outputBytes: [bytes],
        ints: [64],
        floats: [],
      },
    ],
  });
  const words = encodePlan(plan(32));
  assert.deepEqual([...words.slice(17, 21)], [0, 64, 96, 32], 'operands go out as (ref, bytes) pairs');
  assert.throws(() => encodePlan(plan(64)), /outside the arena/);
});

/** A one-step plan: out = op(in), `n` elements of `inBytes` / `outBytes` each. */
function oneStep(op: number, ints: number[], n: number, inBytes: number, outBytes: number, floats: number[] = []): NativePlan {
  const at = Math.ceil((n * inBytes) / 64) * 64;
  return {
    arenaBytes: at + Math.ceil((n * outBytes) / 64) * 64,
    inputs: [{ name: 'x', dtype: 'float64', shape: [n], offset: 0, bytes: n * inBytes }],
    outputs: [{ name: 'y', dtype: 'float64', shape: [n], offset: at, bytes: n * outBytes }],
    steps: [
      {
        op: op as never,
        threads: 1,
        label: 'step',
        inputs: [arenaRef(0)],
        outputs: [arenaRef(at)],
        inputBytes: [n * inBytes],
        outputBytes: [n * outBytes],
        ints,
        floats,
      },
    ],
    symbols: [],
    params: [],
  };
}

test('Cast saturates values outside the target type and maps NaN to 0', async () => {
  const x = [1e300, -1e300, Number.NaN, 3.7, -3.7, 4e9, -4e9, 2 ** 63, 255.9, -0.5];
  const cases: [string, (b: ArrayBuffer) => ArrayLike<number | bigint>, number, (number | bigint)[]][] = [
    ['int32', (b) => new Int32Array(b), 4, [2147483647, -2147483648, 0, 3, -3, 2147483647, -2147483648, 2147483647, 255, 0]],
    [
      'int64',
      (b) => new BigInt64Array(b),
      8,
      [2n ** 63n - 1n, -(2n ** 63n), 0n, 3n, -3n, 4000000000n, -4000000000n, 2n ** 63n - 1n, 255n, 0n],
    ],
    ['int16', (b) => new Int16Array(b), 2, [32767, -32768, 0, 3, -3, 32767, -32768, 32767, 255, 0]],
    ['uint16', (b) => new Uint16Array(b), 2, [65535, 0, 0, 3, 0, 65535, 0, 65535, 255, 0]],
    ['int8', (b) => new Int8Array(b), 1, [127, -128, 0, 3, -3, 127, -128, 127, 127, 0]],
    ['uint8', (b) => new Uint8Array(b), 1, [255, 0, 0, 3, 0, 255, 0, 255, 255, 0]],
  ];
  for (const [to, view, bytes, expected] of cases) {
    const exec = await createExecutor(oneStep(OP.CAST, [x.length, KIND['float64']!, KIND[to]!], x.length, 8, bytes), null);
    try {
      const [y] = exec.run([Float64Array.from(x)], [new Uint8Array(x.length * bytes)]) as Uint8Array[];
      assert.deepEqual(Array.from(view(y!.buffer as ArrayBuffer)), expected, `float64 → ${to}`);
    } finally {
      exec.close();
    }
  }
});

test("the strided copy's fill value saturates the same way", async () => {
  for (const [to, bytes, fill, view, expected] of [
    ['int32', 4, 1e12, (b: ArrayBuffer) => new Int32Array(b), 2147483647],
    ['uint8', 1, -7, (b: ArrayBuffer) => new Uint8Array(b), 0],
    ['int64', 8, Number.NaN, (b: ArrayBuffer) => new BigInt64Array(b), 0n],
  ] as const) {
    // elem_bytes, fill kind, fill elements, no jobs: out[0] is only filled (Pad's first half).
    const exec = await createExecutor(oneStep(OP.STRIDED_COPY, [bytes, KIND[to]!, 4, 0], 4, bytes, bytes, [fill]), null);
    try {
      const [y] = exec.run([new Uint8Array(4 * bytes)], [new Uint8Array(4 * bytes)]) as Uint8Array[];
      assert.deepEqual([...view(y!.buffer as ArrayBuffer)], [expected, expected, expected, expected], `fill ${fill} as ${to}`);
    } finally {
      exec.close();
    }
  }
});
