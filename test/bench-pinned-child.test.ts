/**
 * The ONNX Runtime children of the benchmarks (src/ort/pinned-child.ts) cannot run between their
 * requests: a busy child is stopped after each answer, runs again for the next request, and is gone
 * after close — and it still answers errors as one line.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { startPinnedChild } from '../src/ort/pinned-child.js';

const state = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '')[0];
  } catch {
    return 'gone';
  }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The state a signal puts a process in shows up a moment later: wait for it (at most 5 s). */
async function settlesTo(pid: number, want: string): Promise<string> {
  let got = state(pid);
  for (let i = 0; i < 500 && got !== want; i++) {
    await sleep(10);
    got = state(pid);
  }
  return got;
}

test('a pinned child is stopped between requests and runs again for the next', async () => {
  const child = await startPinnedChild(resolve('test/fixtures/busy-child.mjs'), [0]);
  try {
    const first = await child.ask<{ ticks: number; pid: number }>({ op: 'count' });
    assert.equal(await settlesTo(first.pid, 'T'), 'T', 'stopped once it has answered');
    await sleep(200);
    assert.equal(state(first.pid), 'T', 'and stays stopped');
    const second = await child.ask<{ ticks: number }>({ op: 'count' });
    assert.ok(second.ticks > first.ticks, 'it runs again for the next request');
    await assert.rejects(child.ask({ op: 'nope' }), /unknown op nope/);
    assert.equal(await settlesTo(first.pid, 'T'), 'T', 'an error answer stops it too');
    const closing = Date.now();
    await child.close();
    assert.equal(await settlesTo(first.pid, 'gone'), 'gone', 'close ends a stopped child');
    assert.ok(Date.now() - closing < 4000, 'by ending its input, not by the 5 s kill');
  } finally {
    await child.close();
  }
});
