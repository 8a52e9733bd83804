/**
 * What bench-layers measures, before anything is timed: which layers (unique workloads, the
 * indices `veltair inspect` prints) and which schedules (presets first, the requested thread
 * count, no duplicates, at most --trials).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { encodeModel } from '../src/onnx/encode.js';
import { loadModel } from '../src/onnx/load.js';
import { lowerToLayers } from '../src/ir/lower.js';
import { isVeltairError } from '../src/errors.js';
import { compactRanges, describeWorkload, searchSchedules, selectBenchLayers } from '../src/compare/layers.js';
import { defaultTableRefresh, localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { isValid } from '../src/space/knobs.js';
import { syntheticTarget } from '../src/toolchain/target.js';
import { f32 } from './onnx-test-models.js';

const dir = mkdtempSync(join(tmpdir(), 'veltair-bench-select-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Two identical 3x3 convs (+relu), a maxpool, a third conv of another shape. */
async function graph() {
  const path = join(dir, 'twice.onnx');
  writeFileSync(
    path,
    encodeModel({
      opset: 13,
      inputs: [{ name: 'x', dtype: 'float32', shape: [1, 16, 8, 8] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [1, 32, 4, 4] }],
      initializers: [
        ['w1', f32([16, 16, 3, 3])],
        ['w2', f32([16, 16, 3, 3], 0.25)],
        ['w3', f32([32, 16, 1, 1])],
      ],
      nodes: [
        { op: 'Conv', inputs: ['x', 'w1'], outputs: ['a'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
        { op: 'Relu', inputs: ['a'], outputs: ['ar'] },
        { op: 'Conv', inputs: ['ar', 'w2'], outputs: ['b'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
        { op: 'Relu', inputs: ['b'], outputs: ['br'] },
        { op: 'MaxPool', inputs: ['br'], outputs: ['p'], attrs: { kernel_shape: [2, 2], strides: [2, 2] } },
        { op: 'Conv', inputs: ['p', 'w3'], outputs: ['y'], attrs: { kernel_shape: [1, 1] } },
      ],
    }),
  );
  return lowerToLayers(await loadModel(path));
}

test('default selection: one entry per unique tunable workload, first index kept, the others listed', async () => {
  const g = await graph();
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['conv2d', 'conv2d', 'maxpool', 'conv2d'],
  );
  const sel = selectBenchLayers(g);
  assert.deepEqual(
    sel.map((s) => [s.index, s.alsoIndices]),
    [
      [0, [1]],
      [3, []],
    ],
  );
  assert.equal(sel[0]!.workload.key, g.layers[1]!.workload!.key);
  assert.equal(describeWorkload(sel[0]!.workload), 'conv 3x3 16>16 s1 8x8 +relu');
});

test('--layers keeps the requested order and deduplicates; a non-tunable index names the valid ones', async () => {
  const g = await graph();
  assert.deepEqual(
    selectBenchLayers(g, [3, 1, 0]).map((s) => [s.index, s.alsoIndices]),
    [
      [3, []],
      [1, [0]],
    ],
  );
  assert.throws(
    () => selectBenchLayers(g, [0, 2]),
    (e: unknown) =>
      isVeltairError(e) &&
      e.code === 'BAD_ARGUMENT' &&
      /layer 2 is a maxpool layer/.test(e.message) &&
      /tunable layer indices: 0-1,3/.test(e.hint),
  );
  assert.throws(
    () => selectBenchLayers(g, [4]),
    (e: unknown) => isVeltairError(e) && /layer 4 is out of range \(0\.\.3\)/.test(e.message),
  );
});

test('compactRanges folds consecutive indices', () => {
  assert.equal(compactRanges([5, 0, 1, 2, 7, 8, 2]), '0-2,5,7-8');
  assert.equal(compactRanges([]), '');
});

test('search schedules: the three presets first, then distinct samples, all at the requested threads', async () => {
  const g = await graph();
  const w = g.layers[0]!.workload!;
  const t = syntheticTarget({ avx512f: true, avx2: true, fma: true }, 4);
  const s = searchSchedules(w, t, 2, 10, 1);
  assert.ok(s.length <= 10 && s.length >= 3);
  const keys = s.map((x) => JSON.stringify(x));
  assert.equal(new Set(keys).size, keys.length, 'no duplicates');
  const presets = [defaultTableRefresh(w, t, 2), localityGreedy(w, t, 2), parallelHeavy(w, t, 2)].map((x) => JSON.stringify(x));
  assert.deepEqual(keys.slice(0, new Set(presets).size), [...new Set(presets)]);
  for (const x of s) {
    assert.equal(x.threads, 2);
    assert.ok(isValid(x, w, t));
  }
  assert.equal(searchSchedules(w, t, 1, 2, 1).length, 2, '--trials caps the count');
  assert.deepEqual(searchSchedules(w, t, 1, 8, 7), searchSchedules(w, t, 1, 8, 7), 'seeded: the same schedules every run');
});
