/**
 * The zoo's image classifiers and Tiny-YOLOv2: each written to disk, run once in ONNX Runtime, and
 * its conv/dense layers and MACs (counted independently by zoo-harness) pinned to the published
 * figures: torchvision's model table (GFLOPS there are multiply-adds) and darknet's BFLOPs / 2.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { findZooModel, writeModelSpec } from '../src/zoo/index.js';
import type { ZooOptionValues } from '../src/zoo/index.js';
import { assertClose, assertDeclaredOutputs, countLayers, runInOrt, withTempDir } from './zoo-harness.js';

interface Expectation {
  readonly name: string;
  readonly opts?: ZooOptionValues;
  readonly convs: number;
  readonly dense: number;
  readonly gmacs: number;
  readonly tolerance: number;
  readonly output: readonly number[];
}

const MODELS: readonly Expectation[] = [
  // 1 stem + 16 bottlenecks × 3 + 4 downsample 1×1 convs; torchvision: 4.09 GFLOPS
  { name: 'resnet50', convs: 53, dense: 1, gmacs: 4.09, tolerance: 0.01, output: [1, 1000] },
  // stem + (2 + 16×3) block convs + final 1×1 to 1280; torchvision: 0.30 GFLOPS
  { name: 'mobilenet_v2', convs: 52, dense: 1, gmacs: 0.3, tolerance: 0.02, output: [1, 1000] },
  // 3 stem convs + 9 Inception modules × 6; torchvision: 1.50 GFLOPS
  { name: 'googlenet', convs: 57, dense: 1, gmacs: 1.5, tolerance: 0.02, output: [1, 1000] },
  // stem + block 1 (dw, 2 SE, project) + 15 blocks × 5 + head; torchvision: 0.39 GFLOPS
  { name: 'efficientnet_b0', convs: 81, dense: 1, gmacs: 0.39, tolerance: 0.02, output: [1, 1000] },
  // darknet yolov2-tiny-voc.cfg at 416: 6.97 BFLOPs = 2 × 3.485 GMACs
  { name: 'tiny_yolov2', convs: 9, dense: 0, gmacs: 6.97 / 2, tolerance: 0.01, output: [1, 125, 13, 13] },
];

for (const m of MODELS) {
  test(`zoo ${m.name}: ${m.convs} convs + ${m.dense} dense, ≈${m.gmacs.toFixed(3)} GMACs, runs in ONNX Runtime`, async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, `${m.name}.onnx`);
      const spec = findZooModel(m.name).build(m.opts);
      const written = await writeModelSpec(spec, path);
      assert.ok(written.bytes > 1_000_000, 'the file carries real weights');
      assert.equal(spec.opset, 13);
      assert.deepEqual(
        spec.outputs.map((o) => o.shape),
        [m.output],
      );
      assertDeclaredOutputs(spec);
      const count = countLayers(spec);
      assert.equal(count.convs, m.convs, 'conv layers');
      assert.equal(count.dense, m.dense, 'dense layers');
      assertClose(count.totalMacs / 1e9, m.gmacs, m.tolerance, `${m.name} GMACs`);
      await runInOrt(path, spec);
    });
  });
}

test("zoo googlenet: the paper's 5×5 branch is the only difference from torchvision's 3×3 and costs ≈84 MMACs more", () => {
  const torchvision = countLayers(findZooModel('googlenet').build());
  const paper = countLayers(findZooModel('googlenet').build({ branch5x5: true }));
  assert.equal(paper.convs, torchvision.convs);
  // each module's third branch: (25 − 9)·H·W·c5red·c5 more; summed over the 9 modules
  const extra =
    16 * (28 * 28 * (16 * 32 + 32 * 96) + 14 * 14 * (16 * 48 + 24 * 64 + 24 * 64 + 32 * 64 + 32 * 128) + 7 * 7 * (32 * 128 + 48 * 128));
  assert.equal(paper.totalMacs - torchvision.totalMacs, extra);
});

test('zoo models use the node patterns exporters emit: separate BN, Clip(min,max) ReLU6, SiLU as Sigmoid·Mul', () => {
  const ops = (name: string): Map<string, number> => {
    const counts = new Map<string, number>();
    for (const n of findZooModel(name).build().nodes) counts.set(n.op, (counts.get(n.op) ?? 0) + 1);
    return counts;
  };
  const resnet = ops('resnet50');
  assert.equal(resnet.get('BatchNormalization'), 53);
  assert.equal(resnet.get('Add'), 16);
  const mobilenet = ops('mobilenet_v2');
  assert.equal(mobilenet.get('Clip'), 35);
  assert.equal(mobilenet.get('Add'), 10);
  const clip = findZooModel('mobilenet_v2')
    .build()
    .nodes.find((n) => n.op === 'Clip');
  assert.equal(clip?.inputs.length, 3, 'opset-13 Clip takes min and max as inputs');
  const effnet = ops('efficientnet_b0');
  // SiLU after stem, head, every expand/dw conv and inside every SE: Sigmoid count = SiLUs + SE gates
  assert.equal(effnet.get('GlobalAveragePool'), 17, '16 SE blocks + the classifier');
  assert.equal(effnet.get('Sigmoid'), 2 + 15 + 16 + 16 + 16);
  const yolo = ops('tiny_yolov2');
  assert.equal(yolo.get('LeakyRelu'), 8);
  assert.equal(yolo.get('MaxPool'), 6);
});
