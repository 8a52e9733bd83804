/**
 * The zoo's detectors, up to their raw heads. SSD-ResNet34 is pinned at MLPerf's 1200×1200 by
 * analysis only (433 GOPs per MLPerf Inference v0.5, Reddi et al. 2020, Table 1; one MAC = 2 ops)
 * and run through ONNX Runtime at 400×400, where it is ~9× cheaper; SSD-MobileNet-v1 is pinned
 * to the same table's 2.47 GOPs and run at its native 300×300.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { isVeltairError } from '../src/errors.js';
import { findZooModel, writeModelSpec } from '../src/zoo/index.js';
import { assertClose, assertDeclaredOutputs, countLayers, propagateShapes, runInOrt, withTempDir } from './zoo-harness.js';

const ssdR34 = findZooModel('ssd_resnet34');

test('zoo ssd_resnet34 at 1200×1200: MLPerf feature maps, 15130 boxes, 51 convs, ≈433 GOPs', () => {
  const spec = ssdR34.build();
  assert.deepEqual(
    spec.inputs.map((i) => i.shape),
    [[1, 3, 1200, 1200]],
  );
  assert.deepEqual(
    spec.outputs.map((o) => [o.name, o.shape]),
    [
      ['locs', [1, 4, 15130]],
      ['confs', [1, 81, 15130]],
    ],
  );
  assertDeclaredOutputs(spec);
  const shapes = propagateShapes(spec);
  // backbone: stem /4, layer2 /2, layer3 kept at stride 1 → 256×150×150
  assert.deepEqual(shapes.get('conv1'), [1, 64, 600, 600]);
  assert.deepEqual(shapes.get('layer3.5.relu'), [1, 256, 150, 150]);
  // the stride-3 heads land on MLPerf's dboxes_R34_coco feature sizes
  const headSizes = [0, 1, 2, 3, 4, 5].map((i) => shapes.get(`loc.${i}`)?.slice(2));
  assert.deepEqual(headSizes, [
    [50, 50],
    [25, 25],
    [13, 13],
    [7, 7],
    [3, 3],
    [3, 3],
  ]);
  const count = countLayers(spec);
  // 1 stem + 3·2 + (4·2 + 1) + (6·2 + 1) backbone, 5·2 extra, 6·2 heads
  assert.equal(count.convs, 51);
  assert.equal(count.dense, 0);
  assertClose((2 * count.totalMacs) / 1e9, 433, 0.01, 'SSD-ResNet34 GOPs');
});

test('zoo ssd_resnet34 at 400×400 runs in ONNX Runtime with [1,4,N] / [1,81,N] heads', async () => {
  const spec = ssdR34.build({ resolution: 400 });
  // maps 50,25,13,7,3,1 → heads 17,9,5,3,1,1: 4·289 + 6·81 + 6·25 + 6·9 + 4 + 4 boxes
  const boxes = 4 * 289 + 6 * 81 + 6 * 25 + 6 * 9 + 4 + 4;
  assert.deepEqual(
    spec.outputs.map((o) => o.shape),
    [
      [1, 4, boxes],
      [1, 81, boxes],
    ],
  );
  assertDeclaredOutputs(spec);
  await withTempDir(async (dir) => {
    const path = join(dir, 'ssd_resnet34_400.onnx');
    await writeModelSpec(spec, path);
    await runInOrt(path, spec);
  });
});

test('zoo ssd_resnet34 refuses resolutions where the last extra block no longer fits', () => {
  assert.throws(
    () => ssdR34.build({ resolution: 300 }),
    (e: unknown) => {
      assert.ok(isVeltairError(e));
      assert.equal(e.code, 'BAD_ARGUMENT');
      assert.match(e.message, /resolution.*385/);
      return true;
    },
  );
  // the smallest accepted size still builds a well-formed graph
  assertDeclaredOutputs(ssdR34.build({ resolution: 385 }));
});

test('zoo ssd_mobilenet_v1: 47 convs, 1917 boxes × 91 classes, ≈2.47 GOPs, runs in ONNX Runtime', async () => {
  const spec = findZooModel('ssd_mobilenet_v1').build();
  assert.deepEqual(
    spec.outputs.map((o) => [o.name, o.shape]),
    [
      ['box_encodings', [1, 1917, 4]],
      ['class_predictions', [1, 1917, 91]],
    ],
  );
  assertDeclaredOutputs(spec);
  const shapes = propagateShapes(spec);
  const maps = [0, 1, 2, 3, 4, 5].map((i) => shapes.get(`BoxPredictor_${i}/BoxEncodingPredictor`)?.slice(2));
  assert.deepEqual(maps, [
    [19, 19],
    [10, 10],
    [5, 5],
    [3, 3],
    [2, 2],
    [1, 1],
  ]);
  // TF SAME on an even input with stride 2 pads only at the bottom/right, as tf2onnx writes it
  const stem = spec.nodes.find((n) => n.name === 'FeatureExtractor/MobilenetV1/Conv2d_0');
  assert.deepEqual(stem?.attrs?.pads, [0, 0, 1, 1]);
  const count = countLayers(spec);
  // stem + 13 × (depthwise + pointwise) + 4 × 2 extra + 6 × 2 predictors
  assert.equal(count.convs, 47);
  assertClose((2 * count.totalMacs) / 1e9, 2.47, 0.01, 'SSD-MobileNet-v1 GOPs');
  await withTempDir(async (dir) => {
    const path = join(dir, 'ssd_mobilenet_v1.onnx');
    await writeModelSpec(spec, path);
    await runInOrt(path, spec);
  });
});
