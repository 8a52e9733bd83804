/**
 * The database directory's writer lock: `<dir>/.lock`, created atomically (written aside, then linked into place) and holding
 * {pid, host, nonce, since}. Every writer takes it: appenders for the duration of one write (a
 * few syscalls), prune and merge for their whole read–rewrite–rename. That is what makes pruning
 * during a concurrent append safe: an append either lands before prune reads the file or after
 * prune renamed the new file into place — never into the old inode prune is about to replace.
 *
 * A holder killed with -9 leaves its lock behind; it is broken when its pid is gone on this host
 * (or, for an unreadable lock file, once it is older than STALE_UNREADABLE_MS; tryCreate never
 * leaves one, but a lock written by hand or by an older veltair may be). Breaking renames
 * the lock aside and checks it was the stale one, so two breakers cannot both win; if a breaker
 * finds it took a live lock it links it back. Locks from another host are never broken (the
 * database must live on a local filesystem anyway: see store.ts).
 */
import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { userError } from '../errors.js';

export const LOCK_FILE = '.lock';
const STALE_UNREADABLE_MS = 10_000;

interface LockInfo {
  pid: number;
  host: string;
  nonce: string;
  since: string;
}

export interface LockOptions {
  /** Give up after this long (default 60 s: a prune of a large database holds the lock a while). */
  readonly timeoutMs?: number;
}

export interface HeldLock {
  release(): Promise<void>;
}

async function readLock(path: string): Promise<LockInfo | undefined> {
  try {
    const info = JSON.parse(await readFile(path, 'utf8')) as LockInfo;
    return typeof info.pid === 'number' && typeof info.nonce === 'string' ? info : undefined;
  } catch {
    return undefined;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isStale(path: string, info: LockInfo | undefined): Promise<boolean> {
  if (info) return info.host === hostname() && !pidAlive(info.pid);
  try {
    return Date.now() - (await stat(path)).mtimeMs > STALE_UNREADABLE_MS;
  } catch {
    return false; // gone already: the next attempt simply takes it
  }
}

/** Move a stale lock aside; if the file moved turns out not to be the stale one, put it back. */
async function breakStale(path: string, seen: LockInfo | undefined): Promise<void> {
  const aside = `${path}.stale-${randomBytes(6).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch {
    return;
  }
  const moved = await readLock(aside);
  if (moved && moved.nonce !== seen?.nonce) {
    await link(aside, path).catch(() => undefined); // someone took the lock meanwhile: restore it unless replaced
  }
  await unlink(aside).catch(() => undefined);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The lock appears with its content or not at all: written to a file of our own, then linked into
 * place (link fails with EEXIST like O_EXCL). Created empty and then written, a holder killed
 * between the two left an unreadable lock that blocked every writer for STALE_UNREADABLE_MS.
 */
async function tryCreate(path: string, info: LockInfo): Promise<boolean> {
  const mine = `${path}.new-${info.nonce}`;
  try {
    const fh = await open(mine, 'wx');
    try {
      await fh.write(JSON.stringify(info));
    } finally {
      await fh.close();
    }
    await link(mine, path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    await unlink(mine).catch(() => undefined);
  }
}

/** Take the directory's lock, waiting while another live process holds it. */
export async function acquireLock(dir: string, o: LockOptions = {}): Promise<HeldLock> {
  const path = join(dir, LOCK_FILE);
  const info: LockInfo = { pid: process.pid, host: hostname(), nonce: randomBytes(8).toString('hex'), since: new Date().toISOString() };
  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  for (let attempt = 0; ; attempt++) {
    if (await tryCreate(path, info)) break;
    const holder = await readLock(path);
    if (await isStale(path, holder)) {
      await breakStale(path, holder);
      continue;
    }
    if (Date.now() > deadline) {
      const who = holder ? `process ${holder.pid} on ${holder.host} since ${holder.since}` : 'another process';
      throw userError(
        'DB_LOCKED',
        `tuning database ${dir} is locked by ${who}`,
        `wait for that veltair process to finish; if none is running, delete ${path}`,
      );
    }
    await sleep(Math.min(50, 2 + attempt) * (0.5 + Math.random()));
  }
  return {
    async release() {
      const current = await readLock(path);
      if (current?.nonce === info.nonce) await unlink(path).catch(() => undefined);
    },
  };
}

/** Run `fn` holding the directory's lock. */
export async function withLock<T>(dir: string, fn: () => Promise<T>, o: LockOptions = {}): Promise<T> {
  const lock = await acquireLock(dir, o);
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}
