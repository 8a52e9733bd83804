/**
 * Files written whole or not at all (the house rule, as in src/db/store.ts): into a temp name in
 * the same directory, fsynced, renamed over the target, and the directory fsynced, so a crash or
 * kill -9 leaves the old file or the new one, never half of one.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { userError } from '../errors.js';

export function tempNameFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

export function isTempName(name: string): boolean {
  return /^\..+\.tmp-\d+-[0-9a-f]{8}$/.test(name);
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r').catch(() => undefined);
  if (!fh) return;
  try { await fh.sync(); } catch { /* some filesystems refuse directory fsync */ } finally { await fh.close(); }
}

export function unwritableFile(path: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException).code;
  if (code !== undefined && ['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOTDIR', 'EISDIR', 'ENOENT', 'EDQUOT'].includes(code)) {
    return userError('FILE_UNWRITABLE', `cannot write ${path} (${code})`, 'choose an output directory you can write to, with free space');
  }
  return e as Error;
}

/** Write `chunks` in order into `path` atomically. */
export async function writeFileAtomic(path: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
  const temp = tempNameFor(path);
  let fh;
  try {
    fh = await open(temp, 'wx');
  } catch (e) {
    throw unwritableFile(path, e);
  }
  try {
    for await (const c of chunks) {
      let off = 0;
      while (off < c.byteLength) {
        const { bytesWritten } = await fh.write(c, off, c.byteLength - off);
        off += bytesWritten;
      }
    }
    await fh.sync();
    await fh.close();
    fh = undefined;
    await rename(temp, path);
    await fsyncDir(dirname(path));
  } catch (e) {
    if (fh) await fh.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw unwritableFile(path, e);
  }
}

export function writeTextAtomic(path: string, text: string): Promise<void> {
  return writeFileAtomic(path, [Buffer.from(text, 'utf8')]);
}

/** A header line, then `lines`, as UTF-8 chunks of about 1 MiB: text for writeFileAtomic without one write per line. */
export function* lineChunks(header: string, lines: Iterable<string>): Generator<Uint8Array> {
  let buf: string[] = [header];
  let size = header.length + 1;
  for (const line of lines) {
    buf.push(line);
    size += line.length + 1;
    if (size >= 1 << 20) {
      yield Buffer.from(buf.join('\n') + '\n', 'utf8');
      buf = [];
      size = 0;
    }
  }
  if (buf.length > 0) yield Buffer.from(buf.join('\n') + '\n', 'utf8');
}
