/**
 * The tuning database on disk: a directory of JSON Lines files (`records.jsonl`, and
 * `shard-<i>-of-<n>.jsonl` written by sharded CI jobs), one record per line, append-only.
 *
 * Concurrency and crash safety rest on three things:
 *  1. Each append is ONE write(2) of complete lines to a file opened with O_APPEND. On Linux local
 *     filesystems (ext4, xfs, btrfs, tmpfs, overlayfs) such a write is serialised under the inode
 *     lock, so lines of two writers never interleave, whatever their length. NFS and other network
 *     filesystems give no such guarantee: keep the database on a local disk.
 *  2. kill -9 can at worst leave a torn last line. Readers skip and count it; the next writer sees
 *     the file does not end in '\n' and starts its write with one, so the torn fragment stays a
 *     line of its own and the new record is intact.
 *  3. Writers share the directory lock (lock.ts): appends hold it for one write, prune and merge
 *     for their whole rewrite, which goes to a temp file that is fsynced and renamed over
 *     `records.jsonl` — a reader sees the old or the new file, never half of one.
 * Nothing is ever rewritten in place.
 */
import { mkdir, open, readdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { writeTextAtomic } from '../atomic-file.js';
import { CODEGEN_VERSION } from '../codegen/kernel.js';
import { internalError, userError } from '../errors.js';
import { cacheDir, repoRoot } from '../toolchain/paths.js';
import type { Target } from '../toolchain/target.js';
import { maxTrials } from './compact.js';
import { COMPACTED_SUFFIX } from './compacted-file.js';
import { withLock, type LockOptions } from './lock.js';
import { isComplete, medianMs, preferRecord, recordId, recordLine, type TuningRecord } from './record.js';
import { scanDatabase, scanDatabases, type ScanOptions, type ScanResult, type WarningSink } from './scan.js';
import { targetFingerprint } from './target-fingerprint.js';

export const RECORDS_FILE = 'records.jsonl';

/** The records file a `--shard i/n` job appends to (i is 0-based). */
export function shardFileName(index: number, count: number): string {
  if (!Number.isInteger(index) || !Number.isInteger(count) || index < 0 || index >= count) {
    throw internalError(`bad shard ${index}/${count}`);
  }
  return `shard-${index}-of-${count}.jsonl`;
}

/** `$VELTAIR_CACHE_DIR`, else `$XDG_CACHE_HOME/veltair`, else `~/.cache/veltair` — plus `/tuning-db`. */
export function defaultDatabaseDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'tuning-db');
}

/** The read-only records shipped in the package's `tuning-db/` (found from this file, not the cwd). */
export function shippedDatabaseDir(): string {
  return join(repoRoot(), 'tuning-db');
}

/** Turn a filesystem error on a destination into one clear user error. */
export function unwritable(path: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException).code;
  if (
    code === 'EACCES' ||
    code === 'EPERM' ||
    code === 'EROFS' ||
    code === 'ENOTDIR' ||
    code === 'EEXIST' ||
    code === 'ENOENT' ||
    code === 'EISDIR'
  ) {
    return userError(
      'FILE_UNWRITABLE',
      `cannot write the tuning database at ${path} (${code})`,
      'choose a directory you can write to (--db DIR / -o DIR), or fix its permissions',
    );
  }
  return e as Error;
}

/** Create a database directory (or say why it cannot be one). */
export async function ensureDatabaseDir(dir: string): Promise<void> {
  const existing = await stat(dir).catch(() => undefined);
  if (existing && !existing.isDirectory()) {
    throw userError(
      'BAD_ARGUMENT',
      `${dir} is a file, not a tuning database directory`,
      'writes (append, merge -o, prune) need a directory; merge the file into one: veltair db merge FILE -o DIR',
    );
  }
  try {
    await mkdir(dir, { recursive: true });
  } catch (e) {
    throw unwritable(dir, e);
  }
}

export interface AppendOptions extends LockOptions {
  /** Records file inside the directory (default records.jsonl), e.g. shardFileName(i, n). */
  readonly file?: string;
}

/** Append records as complete lines in one write (see the header for why that is safe). */
export async function appendRecords(dir: string, records: readonly TuningRecord[], o: AppendOptions = {}): Promise<void> {
  if (records.length === 0) return;
  const file = o.file ?? RECORDS_FILE;
  if (!/^[\w.-]+\.jsonl$/.test(file) || file.startsWith('.')) throw internalError(`bad records file name ${JSON.stringify(file)}`);
  const text = records.map(recordLine).join('');
  await ensureDatabaseDir(dir);
  await withLock(
    dir,
    async () => {
      const path = join(dir, file);
      let fh;
      try {
        fh = await open(path, 'a+');
      } catch (e) {
        throw unwritable(path, e);
      }
      try {
        const { size } = await fh.stat();
        let torn = false;
        if (size > 0) {
          const last = Buffer.alloc(1);
          await fh.read(last, 0, 1, size - 1);
          torn = last[0] !== 0x0a;
        }
        const bytes = Buffer.from(torn ? '\n' + text : text, 'utf8');
        let written = 0;
        // One write in practice; a short write (disk full) is finished rather than left torn.
        while (written < bytes.length) {
          const { bytesWritten } = await fh.write(bytes, written, bytes.length - written, null);
          if (bytesWritten <= 0) throw internalError(`short write to ${path}`);
          written += bytesWritten;
        }
      } catch (e) {
        throw unwritable(path, e);
      } finally {
        await fh.close();
      }
    },
    o,
  );
}

/** Records in a deterministic order: by workload, then target, then id. */
function sortedRecords(records: Iterable<[string, TuningRecord]>): TuningRecord[] {
  return [...records]
    .sort(([ia, a], [ib, b]) => a.workload.localeCompare(b.workload) || a.target.localeCompare(b.target) || ia.localeCompare(ib))
    .map(([, r]) => r);
}

/** Write `records` to `path` via a fsynced temp file in the same directory and a rename. */
export async function writeRecordsAtomically(path: string, records: Iterable<[string, TuningRecord]>): Promise<number> {
  const list = sortedRecords(records);
  await writeTextAtomic(path, list.map(recordLine).join(''), unwritable);
  return list.length;
}

export interface RewriteResult {
  readonly scan: ScanResult;
  readonly written: number;
  readonly removedFiles: readonly string[];
}

/**
 * Replace a database directory's content by `keep(scan)` in one `records.jsonl`, under the lock:
 * read everything (plus `extraSources`), write + rename the new file, then remove the other
 * files it folded in. A crash before the removals leaves duplicates, which readers drop.
 */
export async function rewriteDatabase(
  dir: string,
  keep: (scan: ScanResult) => Iterable<[string, TuningRecord]>,
  o: { extraSources?: readonly string[]; onWarning?: WarningSink; allowMissing?: boolean } & LockOptions = {},
): Promise<RewriteResult> {
  await ensureDatabaseDir(dir);
  await refuseCompactedDir(dir);
  return withLock(
    dir,
    async () => {
      const scan = await scanDatabases([dir, ...(o.extraSources ?? [])], { onWarning: o.onWarning, allowMissing: o.allowMissing });
      const target = resolve(dir, RECORDS_FILE);
      const written = await writeRecordsAtomically(target, keep(scan));
      const folded = scan.files.filter((f) => dirname(f) === resolve(dir) && f !== target);
      for (const f of folded) await unlink(f).catch(() => undefined);
      return { scan, written, removedFiles: folded };
    },
    o,
  );
}

/**
 * A folder of compacted files (compacted-file.ts) is rewritten by `veltair db compact` only:
 * merging or pruning it into one records.jsonl would drop the trial counts their headers keep.
 */
async function refuseCompactedDir(dir: string): Promise<void> {
  const compacted = (await readdir(dir)).filter((n) => n.endsWith(COMPACTED_SUFFIX) && !n.startsWith('.'));
  if (compacted.length === 0) return;
  throw userError(
    'BAD_ARGUMENT',
    `${dir} holds compacted record files (${compacted[0]}${compacted.length > 1 ? ', …' : ''}); merge and prune do not rewrite them`,
    'update it with veltair db compact --db SRC -o DIR, or merge it into another folder: veltair db merge DIR -o OTHER',
  );
}

/** What an open database knows about itself. */
export interface DatabaseIndexStats {
  /** Unique records for this target (user + shipped), all statuses. */
  readonly records: number;
  readonly ok: number;
  readonly workloads: number;
  /** Of `records`, how many came only from the shipped layer. */
  readonly shipped: number;
  /** Of `records`, how many measured kernels of another code generator version (never used as measurements). */
  readonly otherCodegen: number;
  readonly otherTargets: number;
  readonly corrupt: number;
  readonly duplicates: number;
}

/**
 * An open database for one target and this code generator. A record measured a kernel: its id
 * carries the codegen version (record.ts recordIdOf), and a kernel of another codegen version is
 * other code, so `lookup` and `records` return only this version's records — what may go into a
 * bundle as a measurement. Older versions' schedules are still a good place to start a search:
 * `seeds` returns them, to be measured again.
 */
export interface TuningDatabase {
  readonly dir: string;
  readonly target: string;
  /** This target's ok, complete (record.ts isComplete) records for a workload, measured with this codegen version. */
  lookup(workloadKey: string): TuningRecord[];
  /** This target's records for a workload (this codegen version), failures and raced ones included. */
  records(workloadKey: string): TuningRecord[];
  /** This target's ok records of a workload from other codegen versions, fastest quiet first: search seeds only. */
  seeds(workloadKey: string): TuningRecord[];
  /** Other targets' ok, complete records for a workload: never measurements here, only seeds (db/transfer.ts). */
  foreign(workloadKey: string): TuningRecord[];
  /**
   * Every ok, complete record the database holds, of every target and workload: what the search's
   * ranking model (tune/rank-model.ts) learns from. Never measurements for this target.
   */
  corpus(): TuningRecord[];
  /** Already measured on this target (any status)? */
  has(id: string): boolean;
  /**
   * Trials a tuning run of this workload at `threads` spent on this target with this codegen, as a
   * compacted set remembers them (compacted-file.ts) — more than `records` holds when compaction
   * dropped candidates; 0 when no compacted file covers the run.
   */
  trialsSpent(workloadKey: string, threads: number): number;
  /** Append to the user layer (never the shipped one) and index the records. */
  append(records: readonly TuningRecord[], o?: AppendOptions): Promise<void>;
  stats(): DatabaseIndexStats;
}

export interface OpenOptions {
  /** The machine records must be for: a Target or its fingerprint. Other targets' records are counted, never returned. */
  readonly target: Target | string;
  /** Read-only layer merged in (default: the package's tuning-db/); false for none. */
  readonly shipped?: string | false;
  readonly onWarning?: WarningSink;
  /** Default true: a database that does not exist yet opens empty and is created on first append. */
  readonly allowMissing?: boolean;
}

/** Open a database for one target: the user directory plus the shipped read-only layer. */
export async function openDatabase(dir: string, o: OpenOptions): Promise<TuningDatabase> {
  const fingerprint = typeof o.target === 'string' ? o.target : targetFingerprint(o.target);
  const scanOptions: ScanOptions = { onWarning: o.onWarning, allowMissing: o.allowMissing ?? true };
  const user = await scanDatabase(dir, scanOptions);
  const shippedDir = o.shipped === undefined ? shippedDatabaseDir() : o.shipped;
  const shipped =
    shippedDir && resolve(shippedDir) !== resolve(dir)
      ? await scanDatabase(shippedDir, { onWarning: o.onWarning, allowMissing: true })
      : undefined;

  const byId = new Map<string, TuningRecord>();
  const byWorkload = new Map<string, TuningRecord[]>();
  const fromShipped = new Set<string>();
  const foreignByWorkload = new Map<string, Map<string, TuningRecord>>();
  let otherTargets = 0;
  const index = (id: string, r: TuningRecord, isShipped: boolean) => {
    if (r.target !== fingerprint) {
      otherTargets++;
      if (r.status === 'ok' && isComplete(r)) {
        const m = foreignByWorkload.get(r.workload) ?? new Map<string, TuningRecord>();
        m.set(id, r);
        foreignByWorkload.set(r.workload, m);
      }
      return;
    }
    const list = byWorkload.get(r.workload) ?? [];
    const seen = byId.get(id);
    const kept = seen ? preferRecord(seen, r) : r;
    if (seen === kept) return;
    if (seen) list.splice(list.indexOf(seen), 1);
    list.push(kept);
    byWorkload.set(r.workload, list);
    byId.set(id, kept);
    if (isShipped) fromShipped.add(id);
    else fromShipped.delete(id);
  };
  for (const [id, r] of user.records) index(id, r, false);
  for (const [id, r] of shipped?.records ?? []) index(id, r, true);

  const trials = maxTrials(user.trials.get(fingerprint) ?? new Map(), shipped?.trials.get(fingerprint) ?? new Map());
  const current = (r: TuningRecord) => r.tool.codegen === CODEGEN_VERSION;
  const quietMs = (r: TuningRecord) => medianMs(r, 0) ?? Infinity;
  return {
    dir,
    target: fingerprint,
    lookup: (key) => (byWorkload.get(key) ?? []).filter((r) => r.status === 'ok' && isComplete(r) && current(r)),
    records: (key) => (byWorkload.get(key) ?? []).filter(current),
    seeds: (key) =>
      (byWorkload.get(key) ?? [])
        .filter((r) => r.status === 'ok' && isComplete(r) && !current(r))
        .sort((a, b) => quietMs(a) - quietMs(b) || (recordId(a) < recordId(b) ? -1 : 1)),
    foreign: (key) => [...(foreignByWorkload.get(key)?.values() ?? [])],
    corpus: () => [
      ...[...byId.values()].filter((r) => r.status === 'ok' && isComplete(r)),
      ...[...foreignByWorkload.values()].flatMap((m) => [...m.values()]),
    ],
    has: (id) => byId.has(id),
    trialsSpent: (key, threads) => trials.get(`${key} ${threads} ${CODEGEN_VERSION}`) ?? 0,
    async append(records, ao) {
      const foreign = records.find((r) => r.target !== fingerprint);
      if (foreign) throw internalError(`record for target ${foreign.target} appended to a database opened for ${fingerprint}`);
      await appendRecords(dir, records, ao);
      for (const r of records) index(recordId(r), r, false);
    },
    stats: () => ({
      records: byId.size,
      ok: [...byId.values()].filter((r) => r.status === 'ok').length,
      workloads: byWorkload.size,
      shipped: fromShipped.size,
      otherCodegen: [...byId.values()].filter((r) => !current(r)).length,
      otherTargets,
      corrupt: user.corrupt + (shipped?.corrupt ?? 0),
      duplicates: user.duplicates + (shipped?.duplicates ?? 0),
    }),
  };
}
