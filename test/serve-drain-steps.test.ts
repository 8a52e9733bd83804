/**
 * The drain's order and deadline (src/serve/drain.ts), with its steps recorded instead of sockets:
 * draining begins first and the listener closes only after the grace period; idle connections
 * close after the listener; the backend is released last; the deadline cuts off whatever is
 * still open — or a backend that never finishes — and the report says so.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runDrain, type DrainSteps } from '../src/serve/drain.js';

function recorder(o: { listenerClosesAfter?: 'never' | 'at once'; backend?: 'never' | 'at once'; open?: number } = {}) {
  const log: string[] = [];
  const never = new Promise<void>(() => undefined);
  const steps: DrainSteps = {
    beginDraining: () => { log.push('begin'); },
    stopListening: () => { log.push('stop listening'); return o.listenerClosesAfter === 'never' ? never : Promise.resolve(); },
    closeIdle: () => { log.push('close idle'); },
    destroyAll: () => { log.push('destroy all'); return o.open ?? 0; },
    closeBackend: () => { log.push('close backend'); return o.backend === 'never' ? never : Promise.resolve(); },
  };
  return { log, steps };
}

test('a drain with nothing left over: begin, grace, stop listening, close idle, release the backend; not cut short', async () => {
  const { log, steps } = recorder();
  const drained = runDrain(steps, { graceMs: 300, timeoutMs: 60_000 });
  assert.deepEqual(log, ['begin'], 'draining begins at once');
  // A timer due before the grace timer runs before it, however late both are: the listener is still open then.
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(log, ['begin'], 'the listener stays open during the grace period');
  assert.deepEqual(await drained, { cutShort: false, connectionsCut: 0 });
  assert.deepEqual(log, ['begin', 'stop listening', 'close idle', 'close backend']);
});

test('connections still open at the deadline are cut off, and the report says how many', async () => {
  const { log, steps } = recorder({ listenerClosesAfter: 'never', open: 2 });
  assert.deepEqual(await runDrain(steps, { graceMs: 0, timeoutMs: 100 }), { cutShort: true, connectionsCut: 2 });
  assert.deepEqual(log, ['begin', 'stop listening', 'close idle', 'destroy all', 'close backend']);
});

test('a backend that never finishes is bounded by the deadline too', async () => {
  const { steps } = recorder({ backend: 'never' });
  assert.deepEqual(await runDrain(steps, { graceMs: 0, timeoutMs: 100 }), { cutShort: true, connectionsCut: 0 });
});
