/**
 * Models exported by PyTorch's own ONNX exporter (torch 1.13, opset 13): veltair's front end and layer
 * IR must find every conv, dense and batch-matmul layer PyTorch runs, with MACs within 1% of
 * PyTorch's own count (forward hooks / F.linear / matmul wrappers, see
 * test/fixtures/torch/mac_counter.py). The fixtures cover BatchNormalization left in the file,
 * un-folded shape sub-graphs (Shape/Gather/Unsqueeze/Concat/Reshape, ConstantOfShape, Expand, Where),
 * nn.MultiheadAttention as torch 1.13 exports it, a hand-written HuggingFace-style BERT with a
 * symbolic batch, and a CNN whose spatial dims are symbolic and need pinning.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import * as ort from 'onnxruntime-node';
import { loadModel } from '../src/onnx/load.js';
import { lowerToLayers } from '../src/ir/lower.js';
import { isVeltairError } from '../src/errors.js';
import type { Layer, LayerGraph } from '../src/ir/layer.js';
import type { InferredModel } from '../src/onnx/model.js';

const SYSTEM_PYTHON = '/usr/bin/python3';
const EXPORT_SCRIPT = fileURLToPath(new URL('../../test/fixtures/torch/export_models.py', import.meta.url));
const MAC_TOLERANCE = 0.01;

interface CountedLayer {
  readonly kind: TunableKind;
  readonly macs: number;
  readonly inputShapes: readonly (readonly number[])[];
  readonly outputShape: readonly number[];
}

interface ManifestEntry {
  readonly name: string;
  readonly file: string;
  readonly inputName: string;
  readonly inputDtype: 'float32' | 'int64';
  readonly inputShape: readonly number[];
  readonly symbolicAxes: Readonly<Record<string, string>>;
  readonly convCount: number;
  readonly denseCount: number;
  readonly batchMatmulCount: number;
  readonly convMacs: number;
  readonly denseMacs: number;
  readonly batchMatmulMacs: number;
  readonly totalMacs: number;
  readonly layers: readonly CountedLayer[];
}

type TunableKind = 'conv2d' | 'dense' | 'batch_matmul';

const KIND_FIELDS: Record<TunableKind, { count: keyof ManifestEntry; macs: keyof ManifestEntry }> = {
  conv2d: { count: 'convCount', macs: 'convMacs' },
  dense: { count: 'denseCount', macs: 'denseMacs' },
  batch_matmul: { count: 'batchMatmulCount', macs: 'batchMatmulMacs' },
};

/** ONNX ops each fixture must hold, so the test really covers the exporter patterns it claims to. */
const REQUIRED_OPS: Readonly<Record<string, readonly string[]>> = {
  resnet18_nofold: ['BatchNormalization', 'Identity', 'Flatten', 'Gemm'],
  mobilenet_v3_small: ['HardSigmoid', 'GlobalAveragePool', 'Gemm'],
  efficientnet_b0: ['Sigmoid', 'Mul', 'GlobalAveragePool'],
  squeezenet1_1: ['Concat', 'MaxPool'],
  googlenet_dynamic: ['Concat', 'MaxPool', 'Gemm'],
  vit_small_nofold: ['Shape', 'Gather', 'Unsqueeze', 'Concat', 'Reshape', 'ConstantOfShape', 'Expand', 'Where', 'Erf'],
  transformer_encoder: ['Shape', 'Gather', 'Unsqueeze', 'Concat', 'Reshape', 'Slice', 'Erf', 'Softmax'],
  tiny_bert: ['Shape', 'Gather', 'ConstantOfShape', 'Slice', 'Reshape', 'Erf', 'Softmax', 'Tanh'],
};

async function assertTorchImportable(): Promise<void> {
  const probe = await execa(SYSTEM_PYTHON, ['-c', 'import torch, torchvision'], { reject: false });
  const detail = (probe.stderr || probe.message || '').trim().split('\n').pop();
  assert.equal(
    probe.exitCode,
    0,
    `${SYSTEM_PYTHON} cannot import torch and torchvision (${detail}); ` +
      'run .ci/install-deps.sh, which installs python3-torch and python3-torchvision',
  );
}

async function exportFixtures(outDir: string): Promise<ManifestEntry[]> {
  await execa(SYSTEM_PYTHON, [EXPORT_SCRIPT, outDir], {
    env: { PYTHONDONTWRITEBYTECODE: '1' },
    timeout: 600_000,
  });
  return JSON.parse(await readFile(path.join(outDir, 'manifest.json'), 'utf8')) as ManifestEntry[];
}

function pinnedShapes(entry: ManifestEntry): Map<string, number[]> {
  return new Map([[entry.inputName, [...entry.inputShape]]]);
}

function layersOfKind(layers: readonly Layer[], kind: TunableKind): Layer[] {
  return layers.filter((layer) => layer.op === kind);
}

/**
 * Pairs torch's layers with veltair's by equal MACs (a multiset match) and lists what is left on
 * each side: the layers one side has and the other lacks or counts differently.
 */
function unmatched(expected: readonly CountedLayer[], got: readonly Layer[]): string {
  const remaining = [...got];
  const missing: CountedLayer[] = [];
  for (const want of expected) {
    const at = remaining.findIndex((layer) => layer.macs === want.macs);
    if (at >= 0) remaining.splice(at, 1);
    else missing.push(want);
  }
  const fmtTorch = (l: CountedLayer) => `${JSON.stringify(l.inputShapes)}->${JSON.stringify(l.outputShape)} ${l.macs}`;
  const fmtVeltair = (l: Layer) => `${l.name} ${JSON.stringify(l.inputShapes)}->${JSON.stringify(l.outputShape)} ${l.macs}`;
  return (
    `torch only: [${missing.slice(0, 12).map(fmtTorch).join('; ')}${missing.length > 12 ? '; …' : ''}]` +
    ` veltair only: [${remaining.slice(0, 12).map(fmtVeltair).join('; ')}${remaining.length > 12 ? '; …' : ''}]`
  );
}

function assertKindMatches(entry: ManifestEntry, layers: readonly Layer[], kind: TunableKind): void {
  const expectedLayers = entry.layers.filter((layer) => layer.kind === kind);
  const expectedCount = entry[KIND_FIELDS[kind].count] as number;
  const expectedMacs = entry[KIND_FIELDS[kind].macs] as number;
  const got = layersOfKind(layers, kind);
  const gotMacs = got.reduce((sum, layer) => sum + layer.macs, 0);
  const detail = unmatched(expectedLayers, got);
  assert.equal(got.length, expectedCount, `${entry.name}: ${kind} layers: veltair ${got.length}, torch ${expectedCount}; ${detail}`);
  const relativeError = expectedMacs === 0 ? Math.abs(gotMacs) : Math.abs(gotMacs - expectedMacs) / expectedMacs;
  assert.ok(
    relativeError <= MAC_TOLERANCE,
    `${entry.name}: ${kind} MACs: veltair ${gotMacs}, torch ${expectedMacs} ` + `(${(relativeError * 100).toFixed(2)}% off); ${detail}`,
  );
}

function ortFeed(entry: ManifestEntry): ort.Tensor {
  const size = entry.inputShape.reduce((a, b) => a * b, 1);
  return entry.inputDtype === 'int64'
    ? new ort.Tensor('int64', new BigInt64Array(size), [...entry.inputShape])
    : new ort.Tensor('float32', new Float32Array(size), [...entry.inputShape]);
}

/** Loads and lowers a fixture once, lazily, so each check that needs it reports its own failure. */
function lazyLowering(entry: ManifestEntry, file: string) {
  let inferred: Promise<InferredModel> | undefined;
  let graph: Promise<LayerGraph> | undefined;
  const load = () => (inferred ??= loadModel(file, { inputShapes: pinnedShapes(entry) }));
  const lower = () => (graph ??= load().then(lowerToLayers));
  return { load, lower };
}

async function checkModel(t: TestContext, entry: ManifestEntry, file: string): Promise<void> {
  const { load, lower } = lazyLowering(entry, file);

  await t.test('holds the exporter patterns it stands for', async () => {
    const ops = new Set((await load()).model.graph.nodes.map((node) => node.opType));
    const lacking = (REQUIRED_OPS[entry.name] ?? []).filter((op) => !ops.has(op));
    assert.deepEqual(lacking, [], `${entry.name}: the export lacks ${lacking.join(', ')}`);
  });

  await t.test('conv, dense and batch_matmul layers match PyTorch within 1% MACs', async () => {
    const { layers } = await lower();
    for (const kind of Object.keys(KIND_FIELDS) as TunableKind[]) assertKindMatches(entry, layers, kind);
  });

  await t.test('output shape agrees with ONNX Runtime at the pinned input shape', async () => {
    const session = await ort.InferenceSession.create(file);
    const result = await session.run({ [entry.inputName]: ortFeed(entry) });
    const reference = result[session.outputNames[0]!]!;
    assert.deepEqual([...(await lower()).outputs[0]!.shape], reference.dims.map(Number));
  });

  if (Object.keys(entry.symbolicAxes).length > 1) {
    await t.test('refuses to guess symbolic non-batch dims without --input-shape', async () => {
      await assert.rejects(loadModel(file, { inputShapes: new Map() }), (e: unknown) => isVeltairError(e) && e.code === 'SYMBOLIC_DIM');
    });
  }
}

test("models exported by PyTorch: veltair finds every conv/dense/batch_matmul layer with PyTorch's MACs", async (t) => {
  await assertTorchImportable();
  const outDir = await mkdtemp(path.join(tmpdir(), 'veltair-torch-'));
  try {
    const manifest = await exportFixtures(outDir);
    assert.deepEqual(manifest.map((e) => e.name).sort(), Object.keys(REQUIRED_OPS).sort());
    for (const entry of manifest) {
      await t.test(entry.name, (t2) => checkModel(t2, entry, path.join(outDir, entry.file)));
    }
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
});
