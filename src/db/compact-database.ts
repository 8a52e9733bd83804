/**
 * `veltair db compact`: write a database's records as compacted per-target files
 * (compacted-file.ts) into an output folder such as the package's `tuning-db/`, and the folder's
 * `index.json`. The folder's own records are read too (unless told not to), so compacting a new
 * database into it adds to what it holds; compacting the same records again gives the same bytes
 * (a file whose content is unchanged is not rewritten). Every file is written atomically, under
 * the folder's writer lock: a kill -9 leaves each file old or new, never half of one.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { writeFileAtomic } from '../atomic-file.js';
import { compactRecords, countTrials, maxTrials } from './compact.js';
import {
  COMPACTED_SUFFIX,
  compactedFileName,
  compactedText,
  contentHash,
  gzipDeterministic,
  parseCompactedHeader,
} from './compacted-file.js';
import { withLock } from './lock.js';
import type { TuningRecord } from './record.js';
import { databaseFiles, scanDatabase, scanDatabases, type WarningSink } from './scan.js';
import { ensureDatabaseDir, unwritable } from './store.js';

export const INDEX_FILE = 'index.json';

export interface CompactOptions {
  /** Databases to compact (directories or records files). */
  readonly sources: readonly string[];
  /** The folder of compacted files (e.g. the package's tuning-db/); created if missing. */
  readonly outDir: string;
  /** Only this target fingerprint (default: every target in the input). */
  readonly target?: string;
  /** Read the output folder's own records as input too (default true). */
  readonly includeExisting?: boolean;
  readonly onWarning?: WarningSink;
  /** How a file is written (default writeFileAtomic); tests pass one that fails midway. */
  readonly writeFile?: (path: string, bytes: Uint8Array) => Promise<void>;
}

/** One target's entry of index.json. */
export interface CompactedTargetSummary {
  readonly file: string;
  readonly cpuModel: string;
  /** ISA flags the target has, sorted. */
  readonly isa: readonly string[];
  readonly cores: number;
  readonly cc: string;
  readonly records: number;
  readonly workloads: number;
  readonly bytes: number;
  /** sha256 of the uncompressed text (header and records). */
  readonly sha256: string;
}

export interface CompactedIndex {
  readonly kind: 'veltair-tuning-db-index';
  readonly v: 1;
  readonly targets: Readonly<Record<string, CompactedTargetSummary>>;
}

export interface CompactResult {
  readonly outDir: string;
  readonly recordsRead: number;
  readonly corrupt: number;
  /** Per target compacted: records kept, and whether its file changed. */
  readonly targets: readonly { target: string; records: number; changed: boolean }[];
  readonly index: CompactedIndex;
}

/** The uncompressed text of a compacted file, or undefined when it is missing or unreadable. */
async function existingText(path: string): Promise<string | undefined> {
  try {
    return gunzipSync(await readFile(path)).toString('utf8');
  } catch {
    return undefined;
  }
}

function groupByTarget(records: Iterable<TuningRecord>): Map<string, TuningRecord[]> {
  const out = new Map<string, TuningRecord[]>();
  for (const r of records) out.set(r.target, [...(out.get(r.target) ?? []), r]);
  return out;
}

/** One compacted file's index entry, read back from disk. */
async function summarize(dir: string, file: string, onWarning?: WarningSink): Promise<[string, CompactedTargetSummary]> {
  const path = join(dir, file);
  const bytes = await readFile(path);
  const text = gunzipSync(bytes).toString('utf8');
  const header = parseCompactedHeader(text.slice(0, text.indexOf('\n')), path);
  const scan = await scanDatabase(path, { onWarning });
  const first = [...scan.records.values()][0];
  const spec = first?.targetSpec;
  return [
    header.target,
    {
      file,
      cpuModel: spec?.cpuModel ?? '',
      isa: spec
        ? Object.entries(spec.isa)
            .filter(([, has]) => has)
            .map(([flag]) => flag)
            .sort()
        : [],
      cores: spec?.cores ?? 0,
      cc: spec?.cc ?? '',
      records: scan.records.size,
      workloads: new Set([...scan.records.values()].map((r) => r.workload)).size,
      bytes: bytes.length,
      sha256: contentHash(text),
    },
  ];
}

/** index.json of every compacted file in `dir`, targets sorted. */
export async function buildIndex(dir: string, onWarning?: WarningSink): Promise<CompactedIndex> {
  const files = (await readdir(dir)).filter((n) => n.endsWith(COMPACTED_SUFFIX) && !n.startsWith('.')).sort();
  const entries = [];
  for (const f of files) entries.push(await summarize(dir, f, onWarning));
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { kind: 'veltair-tuning-db-index', v: 1, targets: Object.fromEntries(entries) };
}

export async function compactDatabase(o: CompactOptions): Promise<CompactResult> {
  for (const s of o.sources) await databaseFiles(s); // FILE_NOT_FOUND before anything is written
  await ensureDatabaseDir(o.outDir);
  const write = o.writeFile ?? ((path: string, bytes: Uint8Array) => writeFileAtomic(path, bytes, unwritable));
  return withLock(o.outDir, async () => {
    const inputs = [...o.sources, ...(o.includeExisting === false ? [] : [o.outDir])];
    const scan = await scanDatabases(inputs, { onWarning: o.onWarning, allowMissing: true });
    const byTarget = groupByTarget(scan.records.values());
    const targets = [...byTarget.keys()].filter((t) => o.target === undefined || t === o.target).sort();
    const written: { target: string; records: number; changed: boolean }[] = [];
    for (const target of targets) {
      const records = byTarget.get(target)!;
      const trials = maxTrials(countTrials(records), scan.trials.get(target) ?? new Map());
      const kept = compactRecords(records);
      const text = compactedText(target, kept, trials);
      const path = join(o.outDir, compactedFileName(target));
      const changed = (await existingText(path)) !== text;
      if (changed) await write(path, gzipDeterministic(text));
      written.push({ target, records: kept.length, changed });
    }
    const index = await buildIndex(o.outDir, o.onWarning);
    const indexText = JSON.stringify(index, null, 1) + '\n';
    const indexPath = join(o.outDir, INDEX_FILE);
    if ((await readFile(indexPath, 'utf8').catch(() => undefined)) !== indexText) await write(indexPath, Buffer.from(indexText, 'utf8'));
    return { outDir: o.outDir, recordsRead: scan.records.size, corrupt: scan.corrupt, targets: written, index };
  });
}
