/**
 * A figure, data file or report as veltair writes it: the extension decides the format (anything
 * else is refused up front), an existing file is replaced only with --force (never a directory),
 * and the bytes go to a hidden temp file in the same directory that is then renamed over the
 * target, so a reader sees the old file or the new one, never half of one.
 */
import { lstatSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { tempNameFor } from '../atomic-file.js';
import { quoteForMessage, userError } from '../errors.js';

export interface OutputFile<F extends string> {
  /** Absolute path. */
  readonly path: string;
  readonly format: F;
}

/** Check `path` (given as `flag`) before any work: a known extension, writable, not in the way. */
export function planOutput<F extends string>(
  flag: string,
  path: string,
  formats: readonly F[],
  force: boolean,
  command = 'veltair plot',
): OutputFile<F> {
  const ext = extname(path).toLowerCase().slice(1);
  const format = formats.find((f) => f === ext);
  const list = formats.map((f) => `.${f}`).join(' or ');
  if (!format) {
    throw userError(
      'BAD_ARGUMENT',
      `${flag} ${quoteForMessage(path)} has ${ext ? `extension .${ext}` : 'no extension'}; ${command} writes ${list} there`,
      `name the file with its format, e.g. ${flag} figure.${formats[0]}`,
    );
  }
  const abs = resolve(path);
  const info = (() => {
    try {
      return lstatSync(abs);
    } catch {
      return undefined;
    }
  })();
  if (info && !info.isFile()) {
    throw userError(
      'OUTPUT_EXISTS',
      `${flag} ${abs} exists and is not a regular file; --force only replaces files`,
      `give a file name ending in ${list}`,
    );
  }
  if (info && !force) throw userError('OUTPUT_EXISTS', `${abs} already exists`, 'pass --force to replace it, or choose another file name');
  const parent = dirname(abs);
  const dir = (() => {
    try {
      return statSync(parent);
    } catch {
      return undefined;
    }
  })();
  if (!dir?.isDirectory()) {
    throw userError(
      'FILE_UNWRITABLE',
      `cannot write ${abs}: directory ${parent} does not exist`,
      'create the directory first, or choose another path',
    );
  }
  return { path: abs, format };
}

/** Bytes staged next to their target; commit renames them into place. */
export interface StagedFile {
  readonly temp: string;
  readonly path: string;
}

export function stageFile(path: string, bytes: string | Uint8Array): StagedFile {
  const temp = tempNameFor(path);
  try {
    writeFileSync(temp, bytes, { flag: 'wx' });
  } catch (e) {
    rmSync(temp, { force: true });
    throw userError(
      'FILE_UNWRITABLE',
      `cannot write ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
      'choose a path in a directory you can write to, or fix its permissions',
    );
  }
  return { temp, path };
}

/** Rename every staged file into place; on failure remove the temps not yet renamed. */
export function commitFiles(files: readonly StagedFile[]): void {
  let done = 0;
  try {
    for (const f of files) {
      renameSync(f.temp, f.path);
      done++;
    }
  } catch (e) {
    for (const f of files.slice(done)) rmSync(f.temp, { force: true });
    throw userError(
      'FILE_UNWRITABLE',
      `cannot write ${files[done]!.path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
      'choose a path in a directory you can write to, or fix its permissions',
    );
  }
}

/** Remove staged temps (after a later failure). */
export function discardFiles(files: readonly StagedFile[]): void {
  for (const f of files) rmSync(f.temp, { force: true });
}
