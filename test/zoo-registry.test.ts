/** The zoo registry: names, option checking, and atomic, reproducible writes. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { isVeltairError } from '../src/errors.js';
import { findZooModel, writeZooModel, zooModels } from '../src/zoo/index.js';
import { withTempDir } from './zoo-harness.js';

const NAMES = ['resnet50', 'mobilenet_v2', 'googlenet', 'efficientnet_b0', 'tiny_yolov2', 'ssd_resnet34', 'ssd_mobilenet_v1', 'bert_large'];

function rejectsWith(code: string, pattern: RegExp): (e: unknown) => boolean {
  return (e) => {
    assert.ok(isVeltairError(e), `expected a VeltairError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.equal(e.exitCode, 1);
    assert.match(`${e.message}\n${e.hint}`, pattern);
    return true;
  };
}

test('zoo registry lists the seven VELTAIR models (SSD in both variants), each documented and seedable', () => {
  assert.deepEqual(
    zooModels.map((m) => m.name),
    NAMES,
  );
  for (const m of zooModels) {
    assert.ok(m.description.length > 20 && m.reference.length > 20, `${m.name} says what it is and where it comes from`);
    assert.ok(
      m.options.some((o) => o.name === 'seed'),
      `${m.name} takes a seed`,
    );
  }
});

test('zoo inputs() agree with the built graph, options included', () => {
  const cases = [
    ['mobilenet_v2', {}],
    ['ssd_resnet34', { resolution: 400 }],
    ['bert_large', { layers: 1 }],
  ] as const;
  for (const [name, opts] of cases) {
    const model = findZooModel(name);
    assert.deepEqual(model.inputs(opts), model.build(opts).inputs, name);
  }
  assert.deepEqual(findZooModel('ssd_resnet34').inputs({ resolution: 600 })[0]?.shape, [1, 3, 600, 600]);
  assert.deepEqual(
    findZooModel('bert_large')
      .inputs({ embeddings: true })
      .map((i) => i.dtype),
    ['int64', 'int64', 'int64'],
  );
});

test('zoo rejects an unknown model name with every valid name in the message', async () => {
  assert.throws(() => findZooModel('resnet51'), rejectsWith('BAD_ARGUMENT', new RegExp(NAMES.join('.*'), 's')));
  await withTempDir(async (dir) => {
    await assert.rejects(writeZooModel('alexnet', join(dir, 'a.onnx')), rejectsWith('BAD_ARGUMENT', /alexnet/));
    assert.deepEqual(await readdir(dir), []);
  });
});

test('zoo rejects unknown, mistyped and out-of-range options', () => {
  assert.throws(() => findZooModel('resnet50').build({ resolution: 224 }), rejectsWith('BAD_ARGUMENT', /no option "resolution".*seed/s));
  assert.throws(() => findZooModel('bert_large').build({ layers: 25 }), rejectsWith('BAD_ARGUMENT', /layers.*\[1, 24\].*25/));
  assert.throws(() => findZooModel('bert_large').build({ layers: 1.5 }), rejectsWith('BAD_ARGUMENT', /layers/));
  assert.throws(() => findZooModel('bert_large').build({ embeddings: 1 }), rejectsWith('BAD_ARGUMENT', /embeddings must be true or false/));
  assert.throws(() => findZooModel('googlenet').inputs({ seed: -1 }), rejectsWith('BAD_ARGUMENT', /seed/));
});

test('zoo writes are reproducible for a seed and differ across seeds', async () => {
  await withTempDir(async (dir) => {
    const sha = async (file: string): Promise<string> =>
      createHash('sha256')
        .update(await readFile(file))
        .digest('hex');
    const a = join(dir, 'a.onnx'),
      b = join(dir, 'b.onnx'),
      c = join(dir, 'c.onnx');
    const written = await writeZooModel('mobilenet_v2', a);
    await writeZooModel('mobilenet_v2', b, { seed: 1 });
    await writeZooModel('mobilenet_v2', c, { seed: 2 });
    assert.equal((await readFile(a)).byteLength, written.bytes);
    assert.equal(await sha(a), await sha(b), 'default seed is 1 and the output is deterministic');
    assert.notEqual(await sha(a), await sha(c));
  });
});

test('zoo writes atomically: replaces an existing file, leaves no temp files, fails cleanly on a missing folder', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'model.onnx');
    await writeFile(out, 'old');
    await writeZooModel('tiny_yolov2', out);
    assert.ok((await readFile(out)).byteLength > 60e6);
    assert.deepEqual(await readdir(dir), ['model.onnx']);
    const missing = join(dir, 'no-such-folder', 'model.onnx');
    await assert.rejects(writeZooModel('mobilenet_v2', missing), rejectsWith('FILE_NOT_FOUND', /no-such-folder/));
    assert.deepEqual(await readdir(dir), ['model.onnx']);
  });
});
