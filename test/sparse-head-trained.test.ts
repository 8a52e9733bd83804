/**
 * A model exported by `veltair train` compiles with the index it was trained with (lsh-index.json
 * beside it, its weight sha256 matching) and is calibrated on the data it was trained with
 * (training.json names it); a damaged index is one clear error, an index of other weights is
 * rebuilt from the model's own weights, said so.
 */
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { isVeltairError } from '../src/errors.js';
import { HEAD_JSON, type HeadMeta } from '../src/sparse-head/format.js';
import { INDEX_BIN, INDEX_JSON } from '../src/sparse/hash-index.js';
import { compileFixture, veltair } from './compile-fixture.js';

let work: string;
let run: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'veltair-sparse-trained-'));
  const data = join(work, 'data');
  const made = await veltair(['data', 'planted', '-o', data, '--labels', '2000', '--features', '500', '--train', '3000', '--test', '300']);
  assert.equal(made.exitCode, 0, made.stderr);
  await writeFile(
    join(data, 'spec.json'),
    JSON.stringify({
      input: 500,
      layers: [
        { dim: 32, activation: 'relu' },
        { dim: 2000, activation: 'softmax', sparsity: 0.05 },
      ],
    }),
  );
  run = join(work, 'run');
  const trained = await veltair([
    'train',
    join(data, 'spec.json'),
    join(data, 'train.txt'),
    '--eval',
    join(data, 'test.txt'),
    '-o',
    run,
    '--epochs',
    '1',
    '--threads',
    '1',
  ]);
  assert.equal(trained.exitCode, 0, trained.stderr);
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

const compile = (model: string, out: string) =>
  compileFixture(model, {
    output: out,
    trials: 1,
    levels: [0],
    threads: [1],
    profileThreads: [],
    db: join(work, 'db'),
    sparseMinOutputs: 1000,
    calibrationRows: 100,
  });

test("the trained index and the training run's data are used", async () => {
  const out = join(work, 'trained.bundle');
  await compile(join(run, 'model.onnx'), out);
  const meta = JSON.parse(await readFile(join(out, HEAD_JSON), 'utf8')) as HeadMeta;
  assert.equal(meta.index.source, 'trained');
  assert.equal(meta.calibration.source, 'training-data');
  assert.equal(meta.calibration.labelled, true);
  const index = JSON.parse(await readFile(join(run, INDEX_JSON), 'utf8')) as { layers: { weightsSha256: string; K: number; L: number }[] };
  assert.equal(meta.weightsSha256, index.layers[0]!.weightsSha256, 'the head indexes the same weights the training run indexed');
  assert.deepEqual([meta.hash.K, meta.hash.L], [index.layers[0]!.K, index.layers[0]!.L]);
});

test('a damaged trained index is one clear error; an index of other weights is rebuilt, with a note', async () => {
  const damaged = join(work, 'damaged');
  await cp(run, damaged, { recursive: true });
  const bin = await readFile(join(damaged, INDEX_BIN));
  bin[100]! ^= 0xff;
  await writeFile(join(damaged, INDEX_BIN), bin);
  await assert.rejects(
    compile(join(damaged, 'model.onnx'), join(work, 'never.bundle')),
    (e: unknown) => isVeltairError(e) && /lsh-index\.bin does not match the sha256/.test(e.message),
  );

  const other = join(work, 'other');
  await cp(run, other, { recursive: true });
  const json = JSON.parse(await readFile(join(other, INDEX_JSON), 'utf8')) as { layers: { weightsSha256: string }[] };
  json.layers[0]!.weightsSha256 = '0'.repeat(64);
  await writeFile(join(other, INDEX_JSON), JSON.stringify(json));
  const out = join(work, 'rebuilt.bundle');
  const r = await compile(join(other, 'model.onnx'), out);
  assert.ok(
    r.notes.some((n) => /indexes other weights/.test(n)),
    r.notes.join('\n'),
  );
  const meta = JSON.parse(await readFile(join(out, HEAD_JSON), 'utf8')) as HeadMeta;
  assert.equal(meta.index.source, 'compiled');
});
