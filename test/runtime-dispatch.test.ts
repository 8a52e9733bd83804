/**
 * The native executor walks long plans of tiny steps correctly: thousands of 64-byte copies that
 * ping-pong between two arena slots, and thousands of 16-element ReLUs (2 threads allowed, so the
 * serial fast path for tiny ops is taken), each step reading what the one before it wrote. What
 * such a plan costs per step is a benchmark, not a test: `node dist/src/bench/dispatch.js`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { tinyStepPlan } from '../src/bench/dispatch.js';

const BYTES = 64;

test('a plan of 20 000 tiny steps runs every step, in order, on every call', async () => {
  for (const kind of ['copy', 'relu'] as const) {
    for (const steps of [1, 20_000, 20_001]) {
      const exec = await createExecutor(tinyStepPlan(steps, kind), null);
      try {
        assert.equal(exec.stepCount, steps);
        const x = Float32Array.from({ length: BYTES / 4 }, (_, i) => (i % 2 ? -1 : 1) * (i + 0.5));
        const expected = kind === 'copy' ? [...x] : [...x].map((v) => Math.max(0, v));
        for (let call = 0; call < 3; call++) {
          const [y] = exec.run([x]) as Float32Array[];
          assert.deepEqual([...y!], expected, `${kind}, ${steps} steps, call ${call}: the value made it through every step`);
        }
        // The steps really chain: an odd plan ends in the other slot, read from there.
        assert.equal(exec.outputs[0]!.offset, (steps % 2) * BYTES);
      } finally {
        exec.close();
      }
    }
  }
});
