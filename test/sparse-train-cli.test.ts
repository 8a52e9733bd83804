/**
 * `veltair data planted` and `veltair train` through the real binary on a tiny planted set:
 * training reaches precision@1 ≥ 0.9 in three epochs with an LSH-sampled output layer; --json
 * prints one object per epoch and nothing else; the run leaves checkpoints, model.onnx, the hash
 * index and training.json; ONNX Runtime running model.onnx gives the dense outputs of the trained
 * network (restored from its checkpoint); the hash index matches the exported weights.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import onnxProto from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import { readHashIndex } from '../src/sparse/hash-index.js';
import { readLatestCheckpoint } from '../src/sparse/checkpoint.js';
import type { RunState } from '../src/sparse/run.js';
import { createTrainer } from '../src/sparse/trainer.js';
import { readXc } from '../src/sparse/xc-reader.js';
import { veltair } from './compile-fixture.js';
import { maxRelDiff } from './sparse-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-train-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));
const data = join(root, 'data');
const run = join(root, 'run');
const PLANTED = [
  '--labels',
  '500',
  '--features',
  '1000',
  '--train',
  '5000',
  '--test',
  '500',
  '--noise',
  '2',
  '--zipf',
  '0.5',
  '--hidden',
  '64',
];
let epochs: Record<string, unknown>[] = [];

before(async () => {
  const g = await veltair(['data', 'planted', '-o', data, ...PLANTED, '--json']);
  assert.equal(g.exitCode, 0, g.stderr);
  const t = await veltair([
    'train',
    join(data, 'spec.json'),
    join(data, 'train.txt'),
    '--eval',
    join(data, 'test.txt'),
    '-o',
    run,
    '--epochs',
    '3',
    '--sparsity',
    '0.1',
    '--lr',
    '0.005',
    '--batch',
    '64',
    '--threads',
    '2',
    '--json',
  ]);
  assert.equal(t.exitCode, 0, t.stderr);
  epochs = t.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
});

test('the planted generator is deterministic and writes XC files with a header and a matching spec', async () => {
  const again = join(root, 'again');
  assert.equal((await veltair(['data', 'planted', '-o', again, ...PLANTED])).exitCode, 0);
  for (const f of ['train.txt', 'test.txt', 'spec.json'])
    assert.ok(readFileSync(join(data, f)).equals(readFileSync(join(again, f))), `${f} differs between two runs`);
  assert.equal(readFileSync(join(data, 'train.txt'), 'utf8').split('\n')[0], '5000 1000 500');
  assert.deepEqual(JSON.parse(readFileSync(join(data, 'spec.json'), 'utf8')), {
    input: 1000,
    layers: [
      { dim: 64, activation: 'relu' },
      { dim: 500, activation: 'softmax' },
    ],
  });
});

test('--json: one object per epoch with the metrics; a tiny planted set reaches P@1 ≥ 0.9 within three epochs', () => {
  assert.equal(epochs.length, 3);
  for (const [i, e] of epochs.entries()) {
    assert.equal(e['epoch'], i + 1);
    for (const k of ['loss', 'precision@1', 'precision@5', 'recall@5', 'epochSeconds', 'evalSeconds', 'samplesPerSecond'])
      assert.equal(typeof e[k], 'number', k);
    assert.equal(e['samples'], 5000);
    assert.equal(e['threads'], 2);
    const sparse = e['sparse'] as Record<string, number>;
    assert.equal(sparse['sparsity'], 0.1);
    assert.ok(sparse['precision@1']! > 0.3, 'sparse evaluation at the training sparsity is far better than chance (1/500)');
    const lsh = e['lsh'] as Record<string, number>;
    assert.ok(lsh['meanActive']! >= 50 && lsh['meanActive']! <= 53, `50 per input, plus labels beyond the target: ${lsh['meanActive']}`);
    assert.ok(lsh['rebuilds']! >= 1);
  }
  assert.ok((epochs[2]!['loss'] as number) < (epochs[0]!['loss'] as number));
  assert.ok((epochs[2]!['precision@1'] as number) >= 0.9, `P@1 after 3 epochs: ${epochs[2]!['precision@1']}`);
});

test('the run directory holds the last two checkpoints, model.onnx, the hash index and training.json', () => {
  const names = readdirSync(run).sort();
  assert.deepEqual(names, [
    'checkpoint-0002.vtckpt',
    'checkpoint-0003.vtckpt',
    'lsh-index.bin',
    'lsh-index.json',
    'model.onnx',
    'training.json',
  ]);
  const summary = JSON.parse(readFileSync(join(run, 'training.json'), 'utf8'));
  assert.equal(summary.history.length, 3);
  assert.equal(summary.layers[1].hash.family, 'dwta');
});

function dense(d: Awaited<ReturnType<typeof readXc>>, rows: number, input: number): Float32Array {
  const x = new Float32Array(rows * input);
  for (let r = 0; r < rows; r++) for (let k = d.row[r]!; k < d.row[r + 1]!; k++) x[r * input + d.idx[k]!]! += d.val[k]!;
  return x;
}

test("ONNX Runtime on model.onnx gives the trained network's dense outputs (network restored from its checkpoint)", async () => {
  const ck = await readLatestCheckpoint<RunState>(run, () => undefined);
  assert.ok(ck);
  assert.equal(ck.header.epochsDone, 3);
  const test = await readXc(join(data, 'test.txt'), { inputDim: 1000, outputDim: 500 });
  const trainer = await createTrainer(ck.header.state.layers, { ...ck.header.state.settings, threads: 1 }, test);
  trainer.restore(ck.tensors, 3, ck.header.adamStep);
  const rows = 64;
  const ours = trainer.scores(test, 0, rows, 'dense');
  const session = await ort.InferenceSession.create(join(run, 'model.onnx'), { intraOpNumThreads: 1 });
  try {
    const r = await session.run({ features: new ort.Tensor('float32', dense(test, rows, 1000), [rows, 1000]) });
    const theirs = r['scores']!.data as Float32Array;
    assert.equal(theirs.length, rows * 500);
    assert.ok(maxRelDiff(ours, theirs, 1e-6) < 1e-3, `max relative difference ${maxRelDiff(ours, theirs, 1e-6)}`);
  } finally {
    await session.release();
  }
});

test("the hash index names the output layer's initializers, carries the sha256 of exactly those bytes, and caps buckets at R", async () => {
  const { index, bin } = await readHashIndex(run);
  assert.equal(index.layers.length, 1);
  const l = index.layers[0]!;
  assert.deepEqual([l.layer, l.weight, l.bias, l.family, l.dim, l.inputDim], [1, 'layers.1.weight', 'layers.1.bias', 'dwta', 500, 64]);
  const model = onnxProto.onnx.ModelProto.decode(readFileSync(join(run, 'model.onnx')));
  const raw = (name: string) => model.graph!.initializer!.find((t) => t.name === name)!.rawData!;
  assert.deepEqual(model.graph!.initializer!.find((t) => t.name === 'layers.1.weight')!.dims!.map(Number), [500, 64]);
  assert.equal(createHash('sha256').update(raw('layers.1.weight')).update(raw('layers.1.bias')).digest('hex'), l.weightsSha256);
  const offsets = new Uint32Array(
    bin.buffer.slice(bin.byteOffset + l.tables.offsets.offset, bin.byteOffset + l.tables.offsets.offset + l.tables.offsets.bytes),
  );
  assert.equal(offsets.length, l.L * 2 ** l.K + 1);
  for (let b = 0; b + 1 < offsets.length; b++) assert.ok(offsets[b + 1]! - offsets[b]! <= l.R);
  assert.ok(existsSync(join(run, 'lsh-index.bin')));
});
