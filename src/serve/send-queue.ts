/**
 * Where an answer stands on its way out, so the send timeout (connections.ts) can tell a client that
 * reads an answer slowly from one that stopped reading.
 *
 * Three counters, each blind somewhere: one large write stays whole in socket.writableLength until
 * its last byte is out, however much the client has read. libuv's write queue (the handle's
 * writeQueueSize) shrinks as each piece of that write reaches the kernel, but stays at 0 once all
 * of it is there. The kernel's unacknowledged bytes (Linux's tx_queue) move while the client
 * acknowledges what is queued, but read the same whenever the send buffer is full to its cap, which
 * is where a slow reader's pauses leave it at every look. Progress is any of them moving.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';

/** One look at an answer's way out; a field is undefined where this host or socket does not say. */
export interface SendQueue {
  /** Bytes in Node's writable buffer (socket.writableLength). */
  buffered: number;
  /** Bytes libuv has not yet handed to the kernel. */
  uvQueued?: number;
  /** Bytes the kernel has sent or holds and the client has not acknowledged. */
  unacked?: number;
}

/** Whether an answer moved between two looks: Node's buffer or libuv's queue shrank, or the kernel's queue changed. */
export function sendMoved(before: SendQueue | undefined, now: SendQueue): boolean {
  if (before === undefined) return true;
  if (now.buffered < before.buffered) return true;
  if (now.uvQueued !== undefined && before.uvQueued !== undefined && now.uvQueued < before.uvQueued) return true;
  return now.unacked !== before.unacked;
}

/** libuv's write queue of a socket, read from its handle (not public API: undefined where a Node does not have it). */
export function uvQueuedBytes(socket: Socket): number | undefined {
  const handle = (socket as unknown as { _handle?: { writeQueueSize?: unknown } })._handle;
  const size = handle?.writeQueueSize;
  return typeof size === 'number' && Number.isFinite(size) ? size : undefined;
}

const LISTEN = '0A';

/**
 * Unacknowledged bytes per peer port of the connections whose local port is `port`, in one
 * /proc/net/tcp-format table (pure, for tests). A peer port seen twice (two peers' addresses) maps
 * to undefined: it cannot be told which is which by port alone.
 */
export function unackedInTable(table: string, port: number, into = new Map<number, number | undefined>()): Map<number, number | undefined> {
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || f[3] === LISTEN) continue;
    const local = f[1]!,
      remote = f[2]!;
    if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) !== port) continue;
    const peer = parseInt(remote.slice(remote.lastIndexOf(':') + 1), 16);
    const unacked = parseInt(f[4]!.split(':')[0] ?? '', 16);
    into.set(peer, into.has(peer) || !Number.isFinite(unacked) ? undefined : unacked);
  }
  return into;
}

/** Unacknowledged bytes per peer port of `port`'s connections, or undefined where the kernel does not say (not Linux, no /proc). */
export function unackedBytes(port: number): Map<number, number | undefined> | undefined {
  let found: Map<number, number | undefined> | undefined;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let table: string;
    try {
      table = readFileSync(file, 'utf8');
    } catch {
      continue; // no such table here (no IPv6, not Linux): the other one, or nothing
    }
    found = unackedInTable(table, port, found);
  }
  return found;
}
