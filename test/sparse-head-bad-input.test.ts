/**
 * Bad input to a sparse head, each one clear error and exit 1: a sparsity of 0 or above 1, a
 * calibration set of the wrong width (.npy and XC), and a tampered head — a flipped byte of
 * sparse/head.bin (the manifest's sha256), or weights that are not the ones the index was built
 * over even with the manifest re-hashed to match (the index's own weight sha256).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeNpy } from '../src/runtime/io-npy.js';
import { loadBundle } from '../src/runtime/session.js';
import { HEAD_BIN, HEAD_JSON, type HeadMeta } from '../src/sparse-head/format.js';
import { assertOneClearError, veltair } from './compile-fixture.js';
import { compileArgs, compilePlanted, FEATURES, writePlantedHead, type PlantedHead } from './sparse-head-fixture.js';

let work: string;
let planted: PlantedHead;
let bundle: string;
let input: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'veltair-sparse-bad-'));
  planted = await writePlantedHead(work);
  bundle = join(work, 'good.bundle');
  await compilePlanted(planted, bundle);
  input = join(work, 'x.npy');
  await writeFile(input, encodeNpy({ dtype: 'float32', shape: [1, FEATURES], data: new Float32Array(FEATURES).fill(0.5) }));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

for (const bad of ['0', '1.5', '1,0.01,x']) {
  test(`--sparsities ${bad} is one clear error, before any tuning`, async () => {
    const r = await veltair(compileArgs(planted, join(work, `never-${bad}`), ['--sparsities', bad]));
    assertOneClearError(r, 'BAD_ARGUMENT', ['--sparsities']);
  });
}

test('a calibration .npy of the wrong width is one clear error naming the file', async () => {
  const file = join(work, 'wide.npy');
  await writeFile(file, encodeNpy({ dtype: 'float32', shape: [3, FEATURES + 1], data: new Float32Array(3 * (FEATURES + 1)) }));
  const r = await veltair([...compileArgs(planted, join(work, 'never-npy')), '--calibration', file]);
  assertOneClearError(r, 'BAD_INPUT', [file, String(FEATURES)]);
});

test('an XC calibration file with a feature past the model input is one clear error naming the file', async () => {
  const file = join(work, 'wide.txt');
  await writeFile(file, `3 ${FEATURES}:1.0 1:0.5\n`);
  const r = await veltair([...compileArgs(planted, join(work, 'never-xc')), '--calibration', file]);
  assert.equal(r.exitCode, 1, r.stderr);
  assert.ok(r.stderr.split('\n')[0]!.includes(file), r.stderr);
});

async function tampered(name: string, change: (bin: Buffer, meta: HeadMeta) => void, rehash: boolean): Promise<string> {
  const dir = join(work, name);
  await cp(bundle, dir, { recursive: true });
  const path = join(dir, HEAD_BIN);
  const bin = await readFile(path);
  change(bin, JSON.parse(await readFile(join(dir, HEAD_JSON), 'utf8')) as HeadMeta);
  await writeFile(path, bin);
  if (rehash) {
    const manifestPath = join(dir, 'manifest.json');
    const m = JSON.parse(await readFile(manifestPath, 'utf8')) as { files: Record<string, { sha256: string; bytes: number }> };
    m.files[HEAD_BIN] = { sha256: createHash('sha256').update(bin).digest('hex'), bytes: bin.byteLength };
    await writeFile(manifestPath, JSON.stringify(m, null, 2) + '\n');
  }
  return dir;
}

test("a flipped byte in the hash tables is refused at load (the manifest's sha256), by the session and by veltair run", async () => {
  const dir = await tampered(
    'flipped.bundle',
    (bin, meta) => {
      bin[meta.blobs.ids.offset + 3]! ^= 0xff;
    },
    false,
  );
  await assert.rejects(loadBundle(dir), (e: Error & { code?: string }) => e.code === 'BAD_BUNDLE' && e.message.includes(HEAD_BIN));
  assertOneClearError(await veltair(['run', dir, '--input', input, '--output-dir', join(work, 'out')]), 'BAD_BUNDLE', [HEAD_BIN]);
});

test('weights the index was not built over are refused even when the manifest is re-hashed to match', async () => {
  const bump = (bin: Buffer, meta: HeadMeta) => {
    bin.writeFloatLE(bin.readFloatLE(meta.blobs.weight.offset) + 1, meta.blobs.weight.offset);
  };
  const dir = await tampered('reweighted.bundle', bump, true);
  await assert.rejects(
    loadBundle(dir),
    (e: Error & { code?: string }) => e.code === 'BAD_BUNDLE' && /does not match its weights/.test(e.message),
  );
  assertOneClearError(await veltair(['run', dir, '--input', input, '--output-dir', join(work, 'out')]), 'BAD_BUNDLE', ['sha256']);
});

test("an out-of-range neuron id in the tables is refused by the addon's checks, not read", async () => {
  const dir = await tampered(
    'bad-id.bundle',
    (bin, meta) => {
      bin.writeUInt32LE(0xfffffff0, meta.blobs.ids.offset);
    },
    true,
  );
  await assert.rejects(loadBundle(dir), (e: Error & { code?: string }) => e.code === 'BAD_BUNDLE' && /not a neuron/.test(e.message));
});

test('veltair run --min-recall runs the fastest version meeting it and says which; a floor outside [0, 1] is one clear error', async () => {
  const meta = JSON.parse(await readFile(join(bundle, HEAD_JSON), 'utf8')) as HeadMeta;
  const kept = meta.versions.filter((v) => v.kept);
  const floor = Math.min(...kept.map((v) => v.recallAt1));
  const want = kept.filter((v) => v.recallAt1 >= floor).sort((a, b) => a.latencyMs['0']! - b.latencyMs['0']!)[0]!;
  const r = await veltair([
    'run',
    bundle,
    '--input',
    input,
    '--output-dir',
    join(work, 'out-floor'),
    '--min-recall',
    String(floor),
    '--json',
  ]);
  assert.equal(r.exitCode, 0, r.stderr);
  assert.deepEqual((JSON.parse(r.stdout) as { sparseVersion: unknown }).sparseVersion, { id: want.id, recallAt1: want.recallAt1 });
  assertOneClearError(await veltair(['run', bundle, '--input', input, '--min-recall', '1.5']), 'BAD_ARGUMENT', ['--min-recall']);
});
