import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { encodeModel } from '../src/onnx/encode.js';
import { startInstancePool } from '../src/ort/instances.js';
import { seededFloats } from '../src/random.js';
import { tinyModelSpec } from './compile-fixture.js';
import { SCHED_BATCH, threadSched } from './thread-sched.js';

test('ort-instances: N instances answer concurrent requests of one queue exactly as a plain ONNX Runtime session does', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-ort-instances-'));
  const path = join(dir, 'tiny.onnx');
  writeFileSync(path, encodeModel(tinyModelSpec()));
  const reference = await ort.InferenceSession.create(path);
  const pool = await startInstancePool(path, 2, 1, 0);
  try {
    assert.equal(pool.count, 2);
    const inputs = Array.from({ length: 6 }, (_, i) => seededFloats(3 * 8 * 8, 40 + i, -1, 1));
    const answers = await Promise.all(inputs.map((x) => pool.run({ input: { dtype: 'float32', shape: [1, 3, 8, 8], data: x } })));
    for (const [i, x] of inputs.entries()) {
      const want = (await reference.run({ input: new ort.Tensor('float32', x, [1, 3, 8, 8]) }))['output']!;
      const got = answers[i]!['output']!;
      assert.deepEqual([...got.shape], [...want.dims]);
      assert.deepEqual(Array.from(got.data as Float32Array), Array.from(want.data as Float32Array), `request ${i}`);
    }
    await assert.rejects(pool.run({ input: { dtype: 'float32', shape: [1, 3, 4, 4], data: new Float32Array(48) } }), /ONNX Runtime/);
    const after = await pool.run({ input: { dtype: 'float32', shape: [1, 3, 8, 8], data: inputs[0]! } });
    assert.equal(after['output']!.data.length, 10, 'the pool goes on after a failed request');
  } finally {
    await pool.close();
    await reference.release();
  }
});

test("ort-instances: a pool started with a nice value runs its instances as veltair's block threads run, the caller's thread untouched", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'veltair-ort-instances-'));
  const path = join(dir, 'tiny.onnx');
  writeFileSync(path, encodeModel(tinyModelSpec()));
  const main = threadSched().find((t) => t.tid === process.pid)!;
  const nice = Math.min(19, main.nice + 7);
  const pool = await startInstancePool(path, 2, 1, nice);
  try {
    await pool.run({ input: { dtype: 'float32', shape: [1, 3, 8, 8], data: seededFloats(3 * 8 * 8, 7, -1, 1) } });
    const niced = threadSched().filter((t) => t.nice === nice);
    assert.ok(niced.length >= 2, `both instances' threads run at nice ${nice} (${niced.length} threads do)`);
    assert.ok(
      niced.every((t) => t.policy === SCHED_BATCH),
      'each is a batch thread (SCHED_BATCH), so waking an instance never preempts the thread that handed it the request',
    );
    assert.deepEqual(
      threadSched().find((t) => t.tid === process.pid),
      main,
    );
  } finally {
    await pool.close();
  }
});
