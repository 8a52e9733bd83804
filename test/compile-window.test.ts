/**
 * The tuner's timing window as a compile option: 100 ms unless given, and a value outside 5 to 10 000
 * ms refused with a typed error that names the flag.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_WINDOW_MS, resolveCompileOptions } from '../src/compile/options.js';
import { VeltairError } from '../src/errors.js';

test('the window is 100 ms unless given', () => {
  assert.equal(DEFAULT_WINDOW_MS, 100);
  assert.equal(resolveCompileOptions({ output: 'b' }).windowMs, 100);
  assert.equal(resolveCompileOptions({ output: 'b', windowMs: 25 }).windowMs, 25);
});

test('a window outside 5 to 10 000 ms, or not whole, is a typed error naming --window-ms', () => {
  for (const windowMs of [0, 4, 10_001, 12.5, Number.NaN]) {
    assert.throws(
      () => resolveCompileOptions({ output: 'b', windowMs }),
      (e: unknown) =>
        e instanceof VeltairError && e.code === 'BAD_ARGUMENT' && /--window-ms/.test(e.message) && /5 to 10000/.test(e.message),
      String(windowMs),
    );
  }
});
