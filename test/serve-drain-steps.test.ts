/**
 * The drain's order and deadline (src/serve/drain.ts), with its steps recorded instead of sockets:
 * draining begins first and the listener closes only after the grace period; idle connections
 * close after the listener; the backend is released last; the deadline cuts off whatever is
 * still open — or a backend that never finishes — and the report says so; a hurry (a second
 * SIGTERM) brings that deadline forward, in the grace period or after it; the listener waits for
 * connections the kernel holds but the server has not accepted (read from /proc/net/tcp).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pendingInTable } from '../src/serve/accept-queue.js';
import { runDrain, type DrainSteps } from '../src/serve/drain.js';

function recorder(o: { listenerClosesAfter?: 'never' | 'at once'; backend?: 'never' | 'at once'; open?: number } = {}) {
  const log: string[] = [];
  const never = new Promise<void>(() => undefined);
  const steps: DrainSteps = {
    beginDraining: () => {
      log.push('begin');
    },
    pendingAccepts: () => 0,
    stopListening: () => {
      log.push('stop listening');
      return o.listenerClosesAfter === 'never' ? never : Promise.resolve();
    },
    closeIdle: () => {
      log.push('close idle');
    },
    destroyAll: () => {
      log.push('destroy all');
      return o.open ?? 0;
    },
    closeBackend: () => {
      log.push('close backend');
      return o.backend === 'never' ? never : Promise.resolve();
    },
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

test(
  'a hurry during the grace period cuts the drain short at once: listener closed, connections cut, backend released',
  { timeout: 30_000 },
  async () => {
    const { log, steps } = recorder({ listenerClosesAfter: 'never', open: 2 });
    let hurry!: () => void;
    // Grace and deadline far beyond the test's timeout: only the hurry can end this drain in time.
    const drained = runDrain(steps, {
      graceMs: 600_000,
      timeoutMs: 1_200_000,
      hurry: new Promise<void>((r) => {
        hurry = r;
      }),
    });
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(log, ['begin'], 'the grace period runs until the hurry');
    hurry();
    assert.deepEqual(await drained, { cutShort: true, connectionsCut: 2, hurried: true });
    assert.deepEqual(log, ['begin', 'stop listening', 'close idle', 'destroy all', 'close backend']);
  },
);

test('a hurry after the grace period, while connections are still answered, cuts them off', { timeout: 30_000 }, async () => {
  const { log, steps } = recorder({ listenerClosesAfter: 'never', open: 1 });
  let hurry!: () => void;
  const drained = runDrain(
    {
      ...steps,
      stopListening: () => {
        hurry();
        return steps.stopListening();
      },
    },
    {
      graceMs: 0,
      timeoutMs: 1_200_000,
      hurry: new Promise<void>((r) => {
        hurry = r;
      }),
    },
  );
  assert.deepEqual(await drained, { cutShort: true, connectionsCut: 1, hurried: true });
  assert.deepEqual(log, ['begin', 'stop listening', 'close idle', 'destroy all', 'close backend']);
});

test('the listener is not closed while the kernel still holds connections the server has not accepted', async () => {
  const { log, steps } = recorder();
  let pending = 3;
  const drained = runDrain(
    {
      ...steps,
      pendingAccepts: () => {
        log.push(`pending ${pending}`);
        return pending--;
      },
    },
    { graceMs: 0, timeoutMs: 60_000 },
  );
  assert.deepEqual(await drained, { cutShort: false, connectionsCut: 0 });
  assert.deepEqual(log, ['begin', 'pending 3', 'pending 2', 'pending 1', 'pending 0', 'stop listening', 'close idle', 'close backend']);
});

test("pending connections from /proc/net/tcp: the LISTEN row's accept queue plus half-open ones, of this port only", () => {
  const table = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:1F40 00000000:0000 0A 00000000:00000005 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0',
    '   1: 0100007F:1F40 0100007F:D431 03 00000000:00000000 00:00000000 00000000  1000        0 0 1 0 100 0 0 10 0',
    '   2: 0100007F:1F40 0100007F:D432 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0 100 0 0 10 0',
    '   3: 0100007F:1F41 00000000:0000 0A 00000000:00000007 00:00000000 00000000  1000        0 3 1 0 100 0 0 10 0',
  ].join('\n');
  assert.equal(pendingInTable(table, 0x1f40), 6, '5 queued + 1 half-open; the established one is accepted already');
  assert.equal(pendingInTable(table, 0x1f41), 7);
  assert.equal(pendingInTable(table, 9), 0);
});
