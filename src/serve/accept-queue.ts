/**
 * How many connections to a listening port the kernel holds that the server has not accepted yet:
 * established ones in the listen socket's accept queue, and half-open ones (SYN_RECV). Closing the
 * listening socket resets every one of them, so the drain closes it only when this is 0.
 *
 * Seen on a loaded 2-core machine: sixteen loopback connects made at once were accepted over
 * ~800 ms, several still queued when a fixed grace period ended. Read from /proc/net/tcp{,6}
 * (Linux: a LISTEN row's rx_queue is its accept-queue length); undefined where that cannot be read,
 * and the drain then relies on the grace period alone.
 */
import { readFileSync } from 'node:fs';

const LISTEN = '0A';
const SYN_RECV = '03';

/** Pending connections to `port` in one /proc/net/tcp-format table (pure, for tests). */
export function pendingInTable(table: string, port: number): number {
  let pending = 0;
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5) continue;
    const local = f[1]!;
    if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) !== port) continue;
    if (f[3] === LISTEN) pending += parseInt(f[4]!.split(':')[1] ?? '0', 16) || 0;
    else if (f[3] === SYN_RECV) pending++;
  }
  return pending;
}

/** Pending connections to `port` the kernel reports, or undefined where it does not (not Linux, no /proc). */
export function pendingAccepts(port: number): number | undefined {
  let total: number | undefined;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      total = (total ?? 0) + pendingInTable(readFileSync(file, 'utf8'), port);
    } catch {
      // no such table here (no IPv6, not Linux): the other one, or nothing
    }
  }
  return total;
}
