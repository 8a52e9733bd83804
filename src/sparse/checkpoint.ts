/**
 * Training checkpoints: one file per finished epoch, `checkpoint-EEEE.vtckpt`, written atomically
 * (atomic-file.ts) after the epoch, so kill -9 loses at most the epoch in progress. A new
 * checkpoint never replaces an earlier one: it gets its own name, and only once it is durable are
 * checkpoints older than the previous one deleted (two are kept). A run that fails therefore
 * leaves every earlier good checkpoint as it was.
 *
 * Layout: "VTSPCKP1" | u32 LE header bytes | header JSON | zero padding to 64 | tensors, each
 * starting on a 64-byte boundary, float32 little-endian. The header lists the tensors with their
 * offsets and the sha256 of the tensor bytes, which a reader checks before trusting any of them.
 */
import { createHash } from 'node:crypto';
import { open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { userError } from '../errors.js';
import { writeFileAtomic } from '../atomic-file.js';
import type { TensorName } from './native.js';

const MAGIC = 'VTSPCKP1';
export const CHECKPOINT_FORMAT = 1;
const KEEP = 2;

export interface TensorEntry {
  readonly layer: number;
  readonly name: TensorName;
  readonly offset: number;
  readonly length: number;
}

export interface CheckpointTensor {
  readonly layer: number;
  readonly name: TensorName;
  readonly data: Float32Array;
}

export interface CheckpointHeader<S> {
  readonly format: number;
  readonly epochsDone: number;
  readonly adamStep: number;
  readonly state: S;
  readonly tensors: readonly TensorEntry[];
  readonly tensorsSha256: string;
}

export const checkpointName = (epochsDone: number) => `checkpoint-${String(epochsDone).padStart(4, '0')}.vtckpt`;
const NAME = /^checkpoint-(\d{4,})\.vtckpt$/;

const pad64 = (n: number) => (64 - (n % 64)) % 64;

export async function writeCheckpoint<S>(
  dir: string,
  epochsDone: number,
  adamStep: number,
  state: S,
  tensors: readonly CheckpointTensor[],
): Promise<string> {
  const hash = createHash('sha256');
  const entries: TensorEntry[] = [];
  let offset = 0;
  for (const t of tensors) {
    entries.push({ layer: t.layer, name: t.name, offset, length: t.data.length });
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    hash.update(bytes);
    offset += bytes.byteLength + pad64(bytes.byteLength);
  }
  const header: CheckpointHeader<S> = {
    format: CHECKPOINT_FORMAT,
    epochsDone,
    adamStep,
    state,
    tensors: entries,
    tensorsSha256: hash.digest('hex'),
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const lead = Buffer.alloc(12);
  lead.write(MAGIC, 0, 'latin1');
  lead.writeUInt32LE(json.byteLength, 8);
  const path = join(dir, checkpointName(epochsDone));
  async function* chunks(): AsyncIterable<Uint8Array> {
    yield lead;
    yield json;
    yield new Uint8Array(pad64(12 + json.byteLength));
    for (const t of tensors) {
      const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      yield bytes;
      yield new Uint8Array(pad64(bytes.byteLength));
    }
  }
  await writeFileAtomic(path, chunks());
  await pruneCheckpoints(dir);
  return path;
}

/** Epoch numbers of the checkpoints in `dir`, newest first. */
export async function listCheckpoints(dir: string): Promise<number[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names
    .map((n) => NAME.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
}

async function pruneCheckpoints(dir: string): Promise<void> {
  const epochs = await listCheckpoints(dir);
  for (const e of epochs.slice(KEEP)) await rm(join(dir, checkpointName(e)), { force: true });
}

export interface LoadedCheckpoint<S> {
  readonly path: string;
  readonly header: CheckpointHeader<S>;
  readonly tensors: readonly CheckpointTensor[];
}

const bad = (path: string, why: string) =>
  userError(
    'BAD_INPUT',
    `checkpoint ${path} is unusable: ${why}`,
    'resume from an intact checkpoint, or start a new run in another -o directory',
  );

export async function readCheckpoint<S>(path: string): Promise<LoadedCheckpoint<S>> {
  const fh = await open(path, 'r');
  try {
    const lead = Buffer.alloc(12);
    await fh.read(lead, 0, 12, 0);
    if (lead.toString('latin1', 0, 8) !== MAGIC) throw bad(path, 'not a veltair training checkpoint');
    const n = lead.readUInt32LE(8);
    const { size } = await fh.stat();
    if (n > size) throw bad(path, 'truncated header');
    const json = Buffer.alloc(n);
    await fh.read(json, 0, n, 12);
    let header: CheckpointHeader<S>;
    try {
      header = JSON.parse(json.toString('utf8')) as CheckpointHeader<S>;
    } catch {
      throw bad(path, 'corrupt header');
    }
    if (header.format !== CHECKPOINT_FORMAT) throw bad(path, `format ${header.format}, this veltair reads ${CHECKPOINT_FORMAT}`);
    const base = 12 + n + pad64(12 + n);
    const hash = createHash('sha256');
    const tensors: CheckpointTensor[] = [];
    for (const e of header.tensors) {
      const data = new Float32Array(e.length);
      const bytes = new Uint8Array(data.buffer);
      const { bytesRead } = await fh.read(bytes, 0, bytes.byteLength, base + e.offset);
      if (bytesRead !== bytes.byteLength) throw bad(path, 'truncated tensors');
      hash.update(bytes);
      tensors.push({ layer: e.layer, name: e.name, data });
    }
    if (hash.digest('hex') !== header.tensorsSha256) throw bad(path, 'tensor bytes do not match their sha256');
    return { path, header, tensors };
  } finally {
    await fh.close();
  }
}

/** The newest checkpoint that reads back intact (an older one if the newest is damaged), or null. */
export async function readLatestCheckpoint<S>(dir: string, warn: (m: string) => void): Promise<LoadedCheckpoint<S> | null> {
  for (const e of await listCheckpoints(dir)) {
    const path = join(dir, checkpointName(e));
    try {
      return await readCheckpoint<S>(path);
    } catch (err) {
      warn(`skipping ${path}: ${(err as Error).message}`);
    }
  }
  return null;
}
