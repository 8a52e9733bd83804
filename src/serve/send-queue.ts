/**
 * How many bytes of each connection to a port the kernel has sent and not had acknowledged yet
 * (Linux's tx_queue), so the send timeout (connections.ts) can tell a client that reads an answer
 * slowly from one that stopped reading.
 *
 * Node's own counters do not show it: one large write stays whole in socket.writableLength (and in
 * the handle's writeQueueSize) until its last byte is out, however much the client has read. The
 * kernel's queue moves whenever the client acknowledges a byte and more is queued behind it; it
 * stays put when the client's receive window is shut. Read from /proc/net/tcp{,6}; undefined where
 * that cannot be read, and the send timeout then judges by Node's counters alone.
 */
import { readFileSync } from 'node:fs';

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
