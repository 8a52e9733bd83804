/**
 * Real ONNX files through the whole front end (encode → loadModel → lowerToLayers), with ONNX
 * Runtime as the reference for the folded weights: the layer's params, applied by a naive kernel,
 * must reproduce what ORT computes from the original graph.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { encodeModel, type ModelSpec } from '../src/onnx/encode.js';
import { loadModel } from '../src/onnx/load.js';
import { lowerToLayers } from '../src/ir/lower.js';
import type { LayerGraph } from '../src/ir/layer.js';
import type { Tensor } from '../src/onnx/model.js';
import { maxRelErr, naiveConv, randomTensor, rng, scalar, tensor, values } from './ir-fixture.js';

async function withModel<T>(spec: ModelSpec, fn: (file: string, graph: LayerGraph) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'veltair-ir-'));
  try {
    const file = path.join(dir, 'model.onnx');
    await writeFile(file, encodeModel(spec));
    return await fn(file, lowerToLayers(await loadModel(file)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function runOrt(file: string, feeds: Record<string, Tensor>, output: string): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(file);
  const ortFeeds = Object.fromEntries(
    Object.entries(feeds).map(([k, t]) => [k, new ort.Tensor('float32', t.data as Float32Array, [...t.dims])]),
  );
  const result = await session.run(ortFeeds);
  return result[output]!.data as Float32Array;
}

test('conv (auto_pad SAME_UPPER, stride 2) + BN + ReLU from a file: folded params reproduce ONNX Runtime', async () => {
  const rand = rng(31);
  const inits = new Map<string, Tensor>([
    ['w', randomTensor([4, 3, 3, 3], rand)],
    ['b', randomTensor([4], rand)],
    ['s', randomTensor([4], rand, 0.5, 2)],
    ['sh', randomTensor([4], rand)],
    ['mu', randomTensor([4], rand)],
    ['var', randomTensor([4], rand, 0.2, 2)],
  ]);
  const spec: ModelSpec = {
    inputs: [{ name: 'x', dtype: 'float32', shape: [1, 3, 9, 9] }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: inits,
    nodes: [
      { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['c'], name: 'conv', attrs: { auto_pad: 'SAME_UPPER', strides: [2, 2] } },
      { op: 'BatchNormalization', inputs: ['c', 's', 'sh', 'mu', 'var'], outputs: ['n'], attrs: { epsilon: { float: 1e-3 } } },
      { op: 'Identity', inputs: ['n'], outputs: ['i'] },
      { op: 'Relu', inputs: ['i'], outputs: ['y'] },
    ],
  };
  const x = randomTensor([1, 3, 9, 9], rand);
  await withModel(spec, async (file, g) => {
    assert.deepEqual(
      g.layers.map((l) => l.op),
      ['conv2d'],
    );
    const conv = g.layers[0]!;
    assert.deepEqual(conv.workload?.epilogue, ['bias', 'relu']);
    assert.deepEqual(conv.outputs, ['y']);
    const pads = conv.attrs.pads as [number, number, number, number];
    const ours = naiveConv(values(x), [1, 3, 9, 9], values(conv.params.weight), [4, 3, 3, 3], values(conv.params.bias), {
      groups: 1,
      strides: [2, 2],
      pads,
      dilations: [1, 1],
    });
    assert.deepEqual(ours.shape, [...conv.outputShape]);
    const relu = ours.data.map((v) => Math.max(0, v));
    const reference = await runOrt(file, { x }, 'y');
    assert.ok(maxRelErr(relu, reference) < 1e-5, `error ${maxRelErr(relu, reference)}`);
  });
});

test('Gemm transB/alpha/beta from a file: dense weight and bias reproduce ONNX Runtime', async () => {
  const rand = rng(32);
  const spec: ModelSpec = {
    inputs: [{ name: 'a', dtype: 'float32', shape: [2, 5] }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: new Map([
      ['b', randomTensor([4, 5], rand)],
      ['c', randomTensor([4], rand)],
    ]),
    nodes: [{ op: 'Gemm', inputs: ['a', 'b', 'c'], outputs: ['y'], attrs: { transB: 1, alpha: { float: 0.5 }, beta: { float: 2 } } }],
  };
  const a = randomTensor([2, 5], rand);
  await withModel(spec, async (file, g) => {
    assert.deepEqual(
      g.layers.map((l) => l.op),
      ['dense'],
    );
    const w = values(g.layers[0]!.params.weight);
    const bias = values(g.layers[0]!.params.bias);
    const av = values(a);
    const ours = new Float64Array(8);
    for (let i = 0; i < 2; i++)
      for (let j = 0; j < 4; j++) {
        let acc = bias[j]!;
        for (let p = 0; p < 5; p++) acc += av[i * 5 + p]! * w[p * 4 + j]!;
        ours[i * 4 + j] = acc;
      }
    const reference = await runOrt(file, { a }, 'y');
    assert.ok(maxRelErr(ours, reference) < 1e-5, `error ${maxRelErr(ours, reference)}`);
  });
});

test('a transformer FFN as exporters write it (decomposed LN, MatMul+Add, erf GELU, residual) lowers to 3 layers', async () => {
  const rand = rng(33);
  const X = [1, 6, 8];
  const spec: ModelSpec = {
    opset: 13,
    inputs: [{ name: 'x', dtype: 'float32', shape: X }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    initializers: new Map<string, Tensor>([
      ['two', scalar(2)],
      ['eps', scalar(1e-12)],
      ['g', randomTensor([8], rand)],
      ['bt', randomTensor([8], rand)],
      ['w1', randomTensor([8, 16], rand)],
      ['b1', randomTensor([16], rand)],
      ['w2', randomTensor([16, 8], rand)],
      ['b2', randomTensor([8], rand)],
      ['sqrt2', scalar(Math.SQRT2)],
      ['one', scalar(1)],
      ['half', scalar(0.5)],
    ]),
    nodes: [
      { op: 'ReduceMean', inputs: ['x'], outputs: ['mu'], attrs: { axes: [-1] } },
      { op: 'Sub', inputs: ['x', 'mu'], outputs: ['d'] },
      { op: 'Pow', inputs: ['d', 'two'], outputs: ['d2'] },
      { op: 'ReduceMean', inputs: ['d2'], outputs: ['v'], attrs: { axes: [-1] } },
      { op: 'Add', inputs: ['v', 'eps'], outputs: ['ve'] },
      { op: 'Sqrt', inputs: ['ve'], outputs: ['sd'] },
      { op: 'Div', inputs: ['d', 'sd'], outputs: ['nrm'] },
      { op: 'Mul', inputs: ['nrm', 'g'], outputs: ['gn'] },
      { op: 'Add', inputs: ['gn', 'bt'], outputs: ['ln'] },
      { op: 'MatMul', inputs: ['ln', 'w1'], outputs: ['h'] },
      { op: 'Add', inputs: ['h', 'b1'], outputs: ['hb'] },
      { op: 'Div', inputs: ['hb', 'sqrt2'], outputs: ['t'] },
      { op: 'Erf', inputs: ['t'], outputs: ['e'] },
      { op: 'Add', inputs: ['e', 'one'], outputs: ['a'] },
      { op: 'Mul', inputs: ['hb', 'a'], outputs: ['m'] },
      { op: 'Mul', inputs: ['m', 'half'], outputs: ['gelu'] },
      { op: 'MatMul', inputs: ['gelu', 'w2'], outputs: ['o'] },
      { op: 'Add', inputs: ['o', 'b2'], outputs: ['ob'] },
      { op: 'Add', inputs: ['ob', 'ln'], outputs: ['y'] },
    ],
  };
  await withModel(spec, async (_file, g) => {
    assert.deepEqual(
      g.layers.map((l) => l.op),
      ['layernormalization', 'dense', 'dense'],
    );
    assert.deepEqual(
      g.layers.map((l) => l.workload?.epilogue),
      [undefined, ['bias', 'gelu'], ['bias', 'residual_add']],
    );
    assert.deepEqual(g.layers[2]!.epilogue[1], { kind: 'residual_add', value: 'ln' });
    const ffn1 = g.layers[1]!.workload;
    assert.ok(ffn1 !== undefined && ffn1.op === 'dense');
    assert.deepEqual([ffn1.m, ffn1.k, ffn1.n], [6, 8, 16]);
    assert.deepEqual(
      values(g.layers[0]!.params.Scale),
      values(spec.initializers instanceof Map ? spec.initializers.get('g') : tensor([0])),
    );
  });
});
