/**
 * Reading a database: stream every `*.jsonl` file of a directory (or one named file) line by
 * line, and every compacted `*.jsonl.gz` (compacted-file.ts: a header line, then records), keep
 * the valid records, count — never throw on — corrupt ones (not JSON, failing the schema, a key
 * that does not match its spec, a torn last line after kill -9, a record of another target than
 * its compacted file's), and deduplicate by record id with preferRecord (independent of file and
 * line order). A compacted file that is not gzip or whose header is wrong is refused (BAD_INPUT).
 */
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { gunzipSync } from 'node:zlib';
import { userError } from '../errors.js';
import { COMPACTED_SUFFIX, parseCompactedHeader, trialsOf } from './compacted-file.js';
import { maxTrials, type TrialCounts } from './compact.js';
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
  /** Per target: the trials each tuning run spent, from compacted files' headers (compact.ts runKey). */
  readonly trials: ReadonlyMap<string, TrialCounts>;
}

export interface ScanOptions {
  readonly onWarning?: WarningSink;
  /** A missing directory reads as empty instead of FILE_NOT_FOUND (a fresh cache). */
  readonly allowMissing?: boolean;
}

const EXAMPLES = 3;

const isRecordsFile = (name: string) => (name.endsWith('.jsonl') || name.endsWith(COMPACTED_SUFFIX)) && !name.startsWith('.');

/** The records files of a database path: `*.jsonl` and `*.jsonl.gz` directly inside a directory (sorted), or the file itself. */
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
        'pass --db DIR pointing at a directory of *.jsonl or *.jsonl.gz tuning records (veltair compile creates one)',
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
      'pass a directory of *.jsonl files or one .jsonl or .jsonl.gz file',
    );
  }
  const names = (await readdir(path)).filter(isRecordsFile).sort();
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

/** The lines of a compacted file (small: read whole); a file that is not gzip is refused. */
async function* compactedLines(file: string): AsyncGenerator<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw userError('FILE_UNREADABLE', `cannot read ${file}: ${(e as Error).message}`, 'check its permissions');
  }
  let text: string;
  try {
    text = gunzipSync(bytes).toString('utf8');
  } catch (e) {
    throw userError(
      'BAD_INPUT',
      `${file} is not a readable gzip file (${(e as Error).message})`,
      'a *.jsonl.gz in a tuning database must be written by `veltair db compact`; rebuild it, or move it out of the database',
    );
  }
  yield* text.split('\n');
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
  const trials = new Map<string, TrialCounts>();
  const examples: CorruptLine[] = [];
  let lines = 0,
    corrupt = 0,
    duplicates = 0;
  for (const file of files) {
    const compacted = file.endsWith(COMPACTED_SUFFIX);
    let n = 0;
    let fileTarget: string | undefined;
    for await (const text of compacted ? compactedLines(file) : fileLines(file)) {
      n++;
      if (compacted && n === 1) {
        const header = parseCompactedHeader(text, file);
        fileTarget = header.target;
        trials.set(header.target, maxTrials(trials.get(header.target) ?? new Map(), trialsOf(header)));
        continue;
      }
      if (text.trim() === '') continue; // the separator a writer adds after a torn line
      lines++;
      refuseNewerFormat(text, file, n);
      const parsed = parseRecordLine(text);
      const problem =
        'problem' in parsed
          ? parsed.problem
          : fileTarget !== undefined && parsed.record.target !== fileTarget
            ? `record of target ${parsed.record.target} in the compacted file of ${fileTarget}`
            : undefined;
      if (problem !== undefined || 'problem' in parsed) {
        corrupt++;
        if (examples.length < EXAMPLES) examples.push({ file, line: n, problem: problem ?? 'invalid' });
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
  return { files, records, lines, corrupt, corruptExamples: examples, duplicates, trials };
}

export function scanDatabase(path: string, o: ScanOptions = {}): Promise<ScanResult> {
  return scanDatabases([path], o);
}
