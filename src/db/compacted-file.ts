/**
 * A compacted record file, `<target fingerprint>.jsonl.gz`: gzip of JSON Lines whose first line is
 * a header and whose other lines are tuning records of that one target, sorted by workload, thread
 * count and record id. The header says what the file is and how many trials each tuning run spent
 * before compaction dropped its other candidates:
 *
 *   {"kind":"veltair-compacted-records","v":1,"target":"t1-…","trials":[["conv2d-…",1,3,8],…]}
 *
 * (`trials`: [workload, threads, codegen version, trials], sorted). The bytes are a function of the
 * records alone: fixed gzip level, no file name, mtime 0 and the OS byte fixed to 3 (Unix) in the
 * header, so the same records give the same file on every host and a git diff only moves when a
 * record does.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { userError } from '../errors.js';
import { recordId, recordLine, type TuningRecord } from './record.js';
import { FINGERPRINT_PATTERN } from './target-fingerprint.js';
import type { TrialCounts } from './compact.js';

export const COMPACTED_KIND = 'veltair-compacted-records';
export const COMPACTED_FORMAT_VERSION = 1;
export const COMPACTED_SUFFIX = '.jsonl.gz';
const GZIP_LEVEL = 9;
/** Byte 9 of a gzip member: the OS that wrote it (RFC 1952); zlib sets it per platform. */
const GZIP_OS_OFFSET = 9;
const GZIP_OS_UNIX = 3;

export interface CompactedHeader {
  readonly kind: typeof COMPACTED_KIND;
  readonly v: number;
  readonly target: string;
  readonly trials: readonly (readonly [string, number, number, number])[];
}

export function compactedFileName(target: string): string {
  return `${target}${COMPACTED_SUFFIX}`;
}

/** Records in the file's order: workload, thread count, record id. */
export function sortForFile(records: readonly TuningRecord[]): TuningRecord[] {
  return records
    .map((r) => ({ r, id: recordId(r) }))
    .sort((a, b) =>
      a.r.workload < b.r.workload ? -1 : a.r.workload > b.r.workload ? 1 : a.r.threads - b.r.threads || (a.id < b.id ? -1 : 1),
    )
    .map((x) => x.r);
}

function headerOf(target: string, trials: TrialCounts): CompactedHeader {
  const rows = [...trials]
    .map(([key, n]) => {
      const [workload, threads, codegen] = key.split(' ');
      return [workload!, Number(threads), Number(codegen), n] as const;
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1] || a[2] - b[2]));
  return { kind: COMPACTED_KIND, v: COMPACTED_FORMAT_VERSION, target, trials: rows };
}

/** The uncompressed text of a target's compacted file (what the index's content hash is over). */
export function compactedText(target: string, records: readonly TuningRecord[], trials: TrialCounts): string {
  const other = records.find((r) => r.target !== target);
  if (other) throw new Error(`compacted file for ${target} given a record of ${other.target}`);
  return JSON.stringify(headerOf(target, trials)) + '\n' + sortForFile(records).map(recordLine).join('');
}

/** gzip with the header fields fixed, so the bytes depend on the text alone. */
export function gzipDeterministic(text: string): Buffer {
  const bytes = gzipSync(Buffer.from(text, 'utf8'), { level: GZIP_LEVEL });
  bytes[GZIP_OS_OFFSET] = GZIP_OS_UNIX;
  return bytes;
}

export function contentHash(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/** A header line of `file` (its line 1), checked field by field; throws BAD_INPUT naming the field. */
export function parseCompactedHeader(line: string, file: string): CompactedHeader {
  const bad = (field: string, why: string) =>
    userError(
      'BAD_INPUT',
      `${file}:1 is not a compacted records header: ${field} ${why}`,
      'a compacted file starts with the header `veltair db compact` writes; rebuild it with veltair db compact, or move the file out of the database',
    );
  let h: Record<string, unknown>;
  try {
    h = JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw bad('line', 'is not JSON');
  }
  if (h === null || typeof h !== 'object' || Array.isArray(h)) throw bad('line', 'is not a JSON object');
  if (h.kind !== COMPACTED_KIND) throw bad('field "kind"', `must be ${JSON.stringify(COMPACTED_KIND)}`);
  if (h.v !== COMPACTED_FORMAT_VERSION) {
    throw userError(
      'BAD_INPUT',
      `${file}:1 is compacted format v${String(h.v)}; this veltair reads v${COMPACTED_FORMAT_VERSION}`,
      'it was written by another veltair: update veltair, or rebuild the file with veltair db compact',
    );
  }
  if (typeof h.target !== 'string' || !new RegExp(FINGERPRINT_PATTERN).test(h.target))
    throw bad('field "target"', 'must be a target fingerprint');
  const rowOk = (t: unknown) =>
    Array.isArray(t) &&
    t.length === 4 &&
    typeof t[0] === 'string' &&
    [t[1], t[2], t[3]].every((n) => Number.isInteger(n) && (n as number) >= 0);
  if (!Array.isArray(h.trials) || !h.trials.every(rowOk))
    throw bad('field "trials"', 'must be a list of [workload, threads, codegen, trials]');
  return h as unknown as CompactedHeader;
}

/** The header's trial counts keyed as compact.ts runKey. */
export function trialsOf(h: CompactedHeader): Map<string, number> {
  return new Map(h.trials.map(([w, t, c, n]) => [`${w} ${t} ${c}`, n]));
}
