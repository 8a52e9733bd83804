/**
 * The public API alone (the package entry, src/index.ts): compileModel compiles the tiny fixture
 * model from its bytes, loadBundle loads the bundle, and the run computes what ONNX Runtime does
 * on the same input. Bad options are typed errors naming the option, before anything is tuned.
 * The package's exports map serves the entry and nothing under it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { compileModel, isVeltairError, loadBundle, type CompileOptions } from '../src/index.js';
import { encodeModel } from '../src/onnx/encode.js';
import { tinyModelSpec } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';
import { assertClose, ortRun } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-api-'));
after(() => rmSync(root, { recursive: true, force: true }));

const budget: CompileOptions = { trials: 1, levels: [0], maxVersions: 1, threads: [1], profileThreads: [], db: join(root, 'db') };

test('compileModel, loadBundle and run through the package entry compute what ONNX Runtime does', { timeout: 600_000 }, async () => {
  const bytes = encodeModel(tinyModelSpec());
  const file = join(root, 'tiny.onnx');
  writeFileSync(file, bytes);
  const notes: string[] = [];
  const output = join(root, 'tiny.bundle');
  const result = await compileModel(bytes, { ...budget, output, onNote: (m) => notes.push(m) });
  assert.equal(result.bundle, output);
  assert.equal(result.tunableLayers, 2);
  assert.ok(result.layers >= result.tunableLayers);
  assert.deepEqual(result.notes, notes);
  assert.ok(result.bytes !== null && result.bytes > 0);
  const manifest = JSON.parse(readFileSync(join(output, 'manifest.json'), 'utf8')) as {
    model: { path: string };
    options: { levels: number[] };
  };
  assert.equal(manifest.model.path, 'model.onnx', 'bytes are recorded under a fixed name');
  assert.deepEqual(manifest.options.levels, [0]);

  const session = await loadBundle(result.bundle!, { threads: 1 });
  try {
    const input = seeded(3 * 8 * 8, 11, -1, 1);
    const got = (await session.run({ input }))['output']!.data as Float32Array;
    assertClose(got, (await ortRun(file, { input: { dtype: 'float32', shape: [1, 3, 8, 8], data: input } }))['output']!, 'api bundle');
  } finally {
    session.close();
  }
});

test('bad options are BAD_ARGUMENT errors naming the option, thrown before any tuning', async () => {
  const bytes = encodeModel(tinyModelSpec());
  const cases: [CompileOptions, string][] = [
    [{ ...budget }, 'options.output'],
    [{ ...budget, output: join(root, 'a'), levels: [0, 5] }, 'options.levels'],
    [{ ...budget, output: join(root, 'b'), trials: 0 }, 'options.trials'],
    [{ ...budget, output: join(root, 'c'), maxVersions: 6 }, 'options.maxVersions'],
    [{ ...budget, output: join(root, 'd'), shard: { index: 2, count: 2 } }, 'options.shard'],
  ];
  for (const [options, mention] of cases) {
    await assert.rejects(
      compileModel(bytes, options),
      (e: unknown) => isVeltairError(e) && e.code === 'BAD_ARGUMENT' && e.message.includes(mention) && e.hint.length > 0,
      mention,
    );
  }
  await assert.rejects(
    compileModel(new Uint8Array([1, 2, 3]), { ...budget, output: join(root, 'e') }),
    (e: unknown) => isVeltairError(e) && e.code === 'NOT_ONNX',
  );
});

test('the exports map serves the package entry and nothing under it', async () => {
  const name = 'veltair';
  const api = (await import(name)) as Record<string, unknown>;
  for (const f of ['compileModel', 'loadBundle', 'serve', 'simulate', 'train']) assert.equal(typeof api[f], 'function', f);
  const inside = `${name}/dist/src/cli/main.js`;
  await assert.rejects(import(inside), (e: unknown) => (e as NodeJS.ErrnoException).code === 'ERR_PACKAGE_PATH_NOT_EXPORTED');
});
