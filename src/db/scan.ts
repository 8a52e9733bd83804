/**
 * Reading a database: stream every `*.jsonl` file of a directory (or one named file) line by
 * line, keep the valid records, count — never throw on — corrupt ones (not JSON, failing the
 * schema, a key that does not match its spec, a torn last line after kill -9), and deduplicate by
 * record id with preferRecord (independent of file and line order).
 */
import { open, readdir, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { userError } from '../errors.js';
import { parseRecordLine, preferRecord, recordId, type TuningRecord } from './record.js';
import { FINGERPRINT_VERSION_NUMBER } from './target-fingerprint.js';

/** Called once per scan with a one-line summary when corrupt lines were skipped. */
export type WarningSink = (message: string) => void;

export interface CorruptLine {
  readonly file: string;
  readonly line: number;
  readonly problem: string;
}

export interface ScanResult {
  readonly files: readonly string[];
  /** Unique records by id, in first-seen order. */
  readonly records: ReadonlyMap<string, TuningRecord>;
  /** Non-blank lines read. */
  readonly lines: number;
  readonly corrupt: number;
  /** The first few corrupt lines, for messages. */
  readonly corruptExamples: readonly CorruptLine[];
  /** Valid lines whose id was already seen. */
  readonly duplicates: number;
}

export interface ScanOptions {
  readonly onWarning?: WarningSink;
  /** A missing directory reads as empty instead of FILE_NOT_FOUND (a fresh cache). */
  readonly allowMissing?: boolean;
}

const EXAMPLES = 3;

/** The records files of a database path: `*.jsonl` directly inside a directory (sorted), or the file itself. */
export async function databaseFiles(path: string, allowMissing = false): Promise<string[]> {
  let info;
  try {
    info = await stat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      if (allowMissing) return [];
      throw userError(
        'FILE_NOT_FOUND',
        `tuning database ${path} does not exist`,
        'pass --db DIR pointing at a directory of *.jsonl tuning records (veltair compile creates one)',
      );
    }
    throw userError(
      'FILE_UNREADABLE',
      `cannot read tuning database ${path}: ${(e as Error).message}`,
      'check the path and its permissions',
    );
  }
  if (info.isFile()) return [resolve(path)];
  if (!info.isDirectory()) {
    throw userError(
      'BAD_ARGUMENT',
      `${path} is neither a directory nor a records file`,
      'pass a directory of *.jsonl files or one .jsonl file',
    );
  }
  const names = (await readdir(path)).filter((n) => n.endsWith('.jsonl') && !n.startsWith('.')).sort();
  return names.map((n) => resolve(path, n));
}

/** Every line of a file; a file removed meanwhile (a concurrent prune folded it) reads as empty. */
async function* fileLines(file: string): AsyncGenerator<string> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw userError('FILE_UNREADABLE', `cannot read ${file}: ${(e as Error).message}`, 'check its permissions');
  }
  // the stream closes the handle when it ends or is destroyed
  yield* createInterface({ input: handle.createReadStream({ encoding: 'utf8' }), crlfDelay: Infinity });
}

/**
 * A record written by a newer veltair (a later record format or target-fingerprint version) is not
 * corrupt and must not be skipped as such: refuse the database, saying what to do.
 */
function refuseNewerFormat(line: string, file: string, n: number): void {
  const fp = /"target"\s*:\s*"t(\d+)-/.exec(line);
  const v = /^\s*\{\s*"v"\s*:\s*(\d+)/.exec(line);
  const newer =
    fp && Number(fp[1]) > FINGERPRINT_VERSION_NUMBER
      ? `target fingerprint version t${fp[1]}`
      : v && Number(v[1]) > 1
        ? `record format v${v[1]}`
        : undefined;
  if (newer === undefined) return;
  throw userError(
    'BAD_INPUT',
    `${file}:${n} holds a tuning record of ${newer}; this veltair reads t${FINGERPRINT_VERSION_NUMBER} records of format v1`,
    'it was written by a newer veltair: update veltair, or keep those records out of this --db',
  );
}

export function corruptSummary(path: string, corrupt: number, examples: readonly CorruptLine[]): string {
  const where = examples.map((c) => `${basename(c.file)}:${c.line} ${c.problem}`).join('; ');
  return (
    `tuning database ${path}: skipped ${corrupt} corrupt line${corrupt === 1 ? '' : 's'} (${where}${corrupt > examples.length ? '; …' : ''}); ` +
    'run `veltair db prune` to drop them'
  );
}

/** Read one or more database paths as one set of records. */
export async function scanDatabases(paths: readonly string[], o: ScanOptions = {}): Promise<ScanResult> {
  const files: string[] = [];
  for (const p of paths) files.push(...(await databaseFiles(p, o.allowMissing)));
  const records = new Map<string, TuningRecord>();
  const examples: CorruptLine[] = [];
  let lines = 0,
    corrupt = 0,
    duplicates = 0;
  for (const file of files) {
    let n = 0;
    for await (const text of fileLines(file)) {
      n++;
      if (text.trim() === '') continue; // the separator a writer adds after a torn line
      lines++;
      refuseNewerFormat(text, file, n);
      const parsed = parseRecordLine(text);
      if ('problem' in parsed) {
        corrupt++;
        if (examples.length < EXAMPLES) examples.push({ file, line: n, problem: parsed.problem });
        continue;
      }
      const id = recordId(parsed.record);
      const seen = records.get(id);
      if (seen) {
        duplicates++;
        records.set(id, preferRecord(seen, parsed.record));
      } else {
        records.set(id, parsed.record);
      }
    }
  }
  if (corrupt > 0) o.onWarning?.(corruptSummary(paths.join(', '), corrupt, examples));
  return { files, records, lines, corrupt, corruptExamples: examples, duplicates };
}

export function scanDatabase(path: string, o: ScanOptions = {}): Promise<ScanResult> {
  return scanDatabases([path], o);
}
