/**
 * The zoo models through veltair's own front end and IR (what `veltair inspect` reports): conv and
 * dense layer counts and MACs against the published figures, and inferred output shapes against
 * what ONNX Runtime actually produces for the same file.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { loadModel } from '../src/onnx/load.js';
import { lowerToLayers, summarise } from '../src/ir/lower.js';
import { writeZooModel, type ZooOptionValues } from '../src/zoo/index.js';

const dir = mkdtempSync(join(tmpdir(), 'veltair-zoo-inspect-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Published {
  readonly name: string;
  readonly opts?: ZooOptionValues;
  readonly convs: number;
  readonly dense: number;
  readonly batchMatmuls?: number;
  /** conv + dense + batch_matmul GMACs, published figure */
  readonly gmacs: number;
  readonly tolerance: number;
}

const MODELS: readonly Published[] = [
  { name: 'resnet50', convs: 53, dense: 1, gmacs: 4.09, tolerance: 0.01 },
  { name: 'mobilenet_v2', convs: 52, dense: 1, gmacs: 0.3, tolerance: 0.02 },
  { name: 'googlenet', convs: 57, dense: 1, gmacs: 1.5, tolerance: 0.01 },
  { name: 'efficientnet_b0', convs: 81, dense: 1, gmacs: 0.39, tolerance: 0.02 },
  { name: 'tiny_yolov2', convs: 9, dense: 0, gmacs: 6.97 / 2, tolerance: 0.01 },
  { name: 'ssd_mobilenet_v1', convs: 47, dense: 0, gmacs: 2.47 / 2, tolerance: 0.01 },
  // MLPerf: 433 GOPs at 1200×1200; at 400×400 the convs scale by (400/1200)² except for the
  // unpadded tail, so the 1200 figure is pinned through the independent counter in zoo tests.
  { name: 'ssd_resnet34', opts: { resolution: 400 }, convs: 51, dense: 0, gmacs: 24.06, tolerance: 0.01 },
  // per encoder layer: 384·(4·1024² + 2·1024·4096) + 2·16·384²·64
  { name: 'bert_large', opts: { layers: 1 }, convs: 0, dense: 6, batchMatmuls: 2, gmacs: 5.134, tolerance: 0.01 },
];

function randomFeeds(inputs: readonly { name: string; dtype: string; shape: readonly number[] }[]): Record<string, ort.Tensor> {
  let s = 12345;
  const next = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  return Object.fromEntries(
    inputs.map((v) => {
      const n = v.shape.reduce((a, b) => a * b, 1);
      return [
        v.name,
        new ort.Tensor(
          'float32',
          Float32Array.from({ length: n }, () => next() - 0.5),
          [...v.shape],
        ),
      ];
    }),
  );
}

for (const m of MODELS) {
  test(`inspect ${m.name}: ${m.convs} conv + ${m.dense} dense layers, ≈${m.gmacs} GMACs, output shapes = ONNX Runtime's`, async () => {
    const path = join(dir, `${m.name}.onnx`);
    await writeZooModel(m.name, path, m.opts ?? {});
    const inferred = await loadModel(path);
    const graph = lowerToLayers(inferred);
    const count = (op: string) => graph.layers.filter((l) => l.op === op);
    assert.equal(count('conv2d').length, m.convs, 'conv2d layers');
    assert.equal(count('dense').length, m.dense, 'dense layers');
    assert.equal(count('batch_matmul').length, m.batchMatmuls ?? 0, 'batch_matmul layers');
    const tunableMacs = graph.layers.filter((l) => l.tunable).reduce((a, l) => a + l.macs, 0);
    const err = Math.abs(tunableMacs / 1e9 - m.gmacs) / m.gmacs;
    assert.ok(err <= m.tolerance, `${(tunableMacs / 1e9).toFixed(4)} GMACs is ${(err * 100).toFixed(2)}% from ${m.gmacs}`);
    const totals = summarise(graph);
    assert.equal(totals.tunableLayers, graph.layers.filter((l) => l.tunable).length);
    assert.ok(totals.uniqueWorkloads <= totals.tunableLayers && totals.uniqueWorkloads > 0);

    const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1, interOpNumThreads: 1 });
    const results = await session.run(randomFeeds(inferred.inputs));
    for (const out of inferred.outputs) {
      assert.deepEqual([...results[out.name]!.dims], [...out.shape], `shape of output ${out.name}`);
    }
    await session.release();
  });
}
