/**
 * Files written whole or not at all (rule 3 of the house rules): the bytes go to a hidden temp name
 * in the same directory, are fsynced, renamed over the target, and the directory is fsynced, so a
 * crash or kill -9 leaves the old file or the new one, never half of one, and a failed write
 * leaves no temp behind. One helper for every room (it is a shared module: it imports only
 * errors.ts), so the temp names, the fsyncs and the cleanup are the same everywhere.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { userError } from './errors.js';

/** A hidden temp name beside `path`, unique to this process and call (it contains `.tmp-`). */
export function tempNameFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

export function isTempName(name: string): boolean {
  return /^\..+\.tmp-\d+-[0-9a-f]{8}$/.test(name);
}

/** The default error of a failed write: FILE_UNWRITABLE for the errors a user can fix, else the error itself. */
export function unwritableFile(path: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException).code;
  if (code !== undefined && ['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOTDIR', 'EISDIR', 'ENOENT', 'EDQUOT'].includes(code)) {
    return userError('FILE_UNWRITABLE', `cannot write ${path} (${code})`, 'choose an output directory you can write to, with free space');
  }
  return e as Error;
}

/** What a caller throws when a write fails (the temp is already removed); by default unwritableFile. */
export type WriteErrorMapper = (path: string, e: unknown) => Error;

/** Whole contents: text (UTF-8), bytes, or chunks written in order (a large file need not be one buffer). */
export type FileContents = string | Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

function chunksOf(data: FileContents): Iterable<Uint8Array> | AsyncIterable<Uint8Array> {
  if (typeof data === 'string') return [Buffer.from(data, 'utf8')];
  return data instanceof Uint8Array ? [data] : data;
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r').catch(() => undefined);
  if (!fh) return;
  try {
    await fh.sync();
  } catch {
    /* some filesystems refuse directory fsync */
  } finally {
    await fh.close();
  }
}

function fsyncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    /* some filesystems refuse directory fsync */
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Write `data` into `path` atomically. */
export async function writeFileAtomic(path: string, data: FileContents, onError: WriteErrorMapper = unwritableFile): Promise<void> {
  const temp = tempNameFor(path);
  let fh;
  try {
    fh = await open(temp, 'wx');
  } catch (e) {
    throw onError(path, e);
  }
  try {
    for await (const c of chunksOf(data)) {
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
    throw onError(path, e);
  }
}

export function writeTextAtomic(path: string, text: string, onError?: WriteErrorMapper): Promise<void> {
  return writeFileAtomic(path, text, onError);
}

/** The same for synchronous callers (a CLI step that writes one small file). */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, onError: WriteErrorMapper = unwritableFile): void {
  const temp = tempNameFor(path);
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let fd: number | undefined;
  try {
    fd = openSync(temp, 'wx');
    for (let off = 0; off < bytes.byteLength;) off += writeSync(fd, bytes, off, bytes.byteLength - off);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, path);
  } catch (e) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        /* already failing */
      }
    }
    rmSync(temp, { force: true });
    throw onError(path, e);
  }
  fsyncDirSync(dirname(path));
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
