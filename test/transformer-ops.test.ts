/**
 * The operators the torchvision transformers export beyond MatMul/Softmax/LayerNorm, against ONNX Runtime:
 * ScatterND building Swin's shifted-window mask from shapes (folded at compile time), Einsum in MaxViT's
 * batched-matmul forms (rewritten to Transpose + MatMul, which ORT must answer as it answers the Einsum), and a MatMul of two constants (Swin-V2's
 * position-bias MLP, folded), and a Concat with a constant part (ViT's class token). An Einsum outside the matmul form
 * is refused before tuning, naming its layer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { encodeModel, type ModelSpec, type NodeSpec } from '../src/onnx/encode.js';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { workGraphOf } from '../src/ir/work-graph.js';
import type { Tensor } from '../src/onnx/model.js';
import { desugarEinsums, matmulForm } from '../src/ir/einsum.js';
import { unsupportedLayers } from '../src/runtime/preflight.js';
import { assertClose, f32, graphOf, runAgainstOrt, seeded, type Feed } from './runtime-harness.js';

const ints = (values: number[], dims = [values.length]): Tensor => ({ dtype: 'int64', dims, data: new Float64Array(values) });
const floats = (dims: number[], seed: number): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
  ),
});

async function againstOrt(spec: ModelSpec, feeds: Feed[], what: string): Promise<void> {
  const { ours, reference } = await runAgainstOrt(spec, feeds);
  assertClose(ours[0]!, reference[0]!, what, 1e-4, 2e-5);
}

/** Swin's mask: zeros shaped like x's spatial dims, with 3 regions numbered by slice assignment, added to x. */
function maskModel(reduction?: string, opset = reduction === 'max' || reduction === 'min' ? 18 : 16): ModelSpec {
  const scatter = (data: string, idx: string, upd: string, out: string): NodeSpec => ({
    op: 'ScatterND',
    inputs: [data, idx, upd],
    outputs: [out],
    attrs: reduction ? { reduction } : {},
  });
  return {
    opset,
    inputs: [{ name: 'x', dtype: 'float32', shape: [4, 3] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [4, 3] }],
    initializers: [
      ['rows01', ints([0, 1], [2, 1])],
      ['row3', ints([-1], [1, 1])],
      ['cell', ints([2, 1], [1, 2])],
      ['ones', floats([2, 3], 3)],
      ['threes', { dtype: 'float32', dims: [1, 3], data: new Float32Array([3, 3, 3]) }],
      ['seven', { dtype: 'float32', dims: [1], data: new Float32Array([7]) }],
    ],
    nodes: [
      { op: 'Shape', inputs: ['x'], outputs: ['shape'] },
      {
        op: 'ConstantOfShape',
        inputs: ['shape'],
        outputs: ['zeros'],
        attrs: { value: { dtype: 'float32', dims: [1], data: new Float32Array([0.5]) } },
      },
      scatter('zeros', 'rows01', 'ones', 'm1'),
      scatter('m1', 'row3', 'threes', 'm2'),
      scatter('m2', 'cell', 'seven', 'mask'),
      { op: 'Add', inputs: ['x', 'mask'], outputs: ['y'] },
    ],
  };
}

test('ScatterND builds a mask from shapes at compile time, as Swin exports its shifted windows, and matches ORT', async () => {
  for (const reduction of [undefined, 'add', 'mul', 'max', 'min']) {
    const spec = maskModel(reduction);
    const { graph } = graphOf(spec);
    assert.ok(
      graph.layers.every((l) => !/scatter/i.test(l.op)),
      'the mask is folded: no ScatterND reaches the runtime',
    );
    await againstOrt(spec, [f32([4, 3], 1)], `ScatterND reduction=${reduction ?? 'none'}`);
  }
});

test('ScatterND with indices of depth 0 replaces the whole of data, as ORT does', async () => {
  const spec: ModelSpec = {
    opset: 16,
    inputs: [{ name: 'x', dtype: 'float32', shape: [2, 3] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [2, 3] }],
    initializers: [
      ['zeros', floats([2, 3], 8)],
      ['none', ints([], [1, 0])],
      ['all', floats([1, 2, 3], 9)],
    ],
    nodes: [
      { op: 'ScatterND', inputs: ['zeros', 'none', 'all'], outputs: ['m'], attrs: { reduction: 'add' } },
      { op: 'Add', inputs: ['x', 'm'], outputs: ['y'] },
    ],
  };
  await againstOrt(spec, [f32([2, 3], 3)], 'ScatterND depth 0');
});

test("a ScatterND reduction newer than the model's opset is refused, naming it", () => {
  assert.throws(() => graphOf(maskModel('max', 16)), /reduction "max" needs opset 18; the model imports 16/);
});

test('ScatterND refuses updates whose shape does not fit the indices, naming the node', () => {
  const spec = maskModel();
  const inits = spec.initializers as readonly (readonly [string, Tensor])[];
  const bad = { ...spec, initializers: inits.map(([n, t]) => (n === 'ones' ? ([n, floats([2, 2], 3)] as const) : ([n, t] as const))) };
  assert.throws(() => graphOf(bad), /ScatterND[\s\S]*updates are \[2, ?2\]/);
});

function einsumModel(equation: string, a: number[], b: number[], out: number[]): ModelSpec {
  return {
    opset: 13,
    inputs: [
      { name: 'a', dtype: 'float32', shape: a },
      { name: 'b', dtype: 'float32', shape: b },
    ],
    outputs: [{ name: 'y', dtype: 'float32', shape: out }],
    initializers: [],
    nodes: [{ op: 'Einsum', inputs: ['a', 'b'], outputs: ['y'], attrs: { equation } }],
  };
}

/** ORT on the model as written, and ORT on the nodes desugarEinsums wrote in its place: the rewrite's own check. */
async function rewriteMatchesOrt(spec: ModelSpec, feeds: Feed[], what: string): Promise<void> {
  const g = workGraphOf(inferModel(decodeModel(encodeModel(spec), 'einsum.onnx')));
  desugarEinsums(g);
  assert.ok(g.nodes.every((n) => n.opType !== 'Einsum') && g.nodes.some((n) => n.opType === 'MatMul'), `${what}: rewritten to MatMul`);
  const nodes: NodeSpec[] = g.nodes.map((n) => {
    const perm = n.attributes.get('perm');
    return { op: n.opType, inputs: n.inputs, outputs: n.outputs, ...(perm?.kind === 'ints' ? { attrs: { perm: perm.value } } : {}) };
  });
  const run = async (model: ModelSpec) => {
    const session = await ort.InferenceSession.create(encodeModel(model));
    const named = feeds.map((f, i) => [model.inputs[i]!.name, new ort.Tensor('float32', f.data as Float32Array, [...f.dims])] as const);
    const out = await session.run(Object.fromEntries(named));
    return out['y']!.data as Float32Array;
  };
  assertClose(await run({ ...spec, nodes }), await run(spec), what, 1e-5, 1e-6);
}

test("Einsum in MaxViT's attention forms is rewritten to Transpose + MatMul that ORT answers identically", async () => {
  const cases: [string, number[], number[], number[]][] = [
    ['bghid,bghjd->bghij', [1, 2, 3, 5, 8], [1, 2, 3, 6, 8], [1, 2, 3, 5, 6]],
    ['bghij,bghjd->bghid', [1, 2, 3, 5, 6], [1, 2, 3, 6, 8], [1, 2, 3, 5, 8]],
    ['b h i d, b h j d -> b h i j', [2, 4, 7, 16], [2, 4, 9, 16], [2, 4, 7, 9]],
    ['bkj,bik->bji', [3, 4, 5], [3, 6, 4], [3, 5, 6]],
    ['ki,jk->ij', [4, 5], [6, 4], [5, 6]],
    ['ik,kj->ji', [4, 5], [5, 6], [6, 4]],
    ['bid,bjd->ibj', [2, 3, 8], [2, 5, 8], [3, 2, 5]],
  ];
  for (const [eq, a, b, out] of cases) {
    const spec = einsumModel(eq, a, b, out);
    const { graph } = graphOf(spec);
    assert.ok(
      graph.layers.some((l) => l.op === 'batch_matmul'),
      `${eq}: a tunable batch_matmul`,
    );
    assert.equal(unsupportedLayers(graph, 8).length, 0, `${eq}: the runtime runs every other step`);
    await rewriteMatchesOrt(spec, [f32(a, 1), f32(b, 2)], eq);
  }
});

test('the batched-matmul reading of an equation, and the equations that have none', () => {
  assert.deepEqual(matmulForm('bghid,bghjd->bghij'), { batch: 'bgh', free: ['i', 'j'], contracted: 'd' });
  assert.equal(matmulForm('ii->i'), undefined, 'one operand');
  assert.equal(matmulForm('ij,jk,kl->il'), undefined, 'three operands');
  assert.equal(matmulForm('bij,bjk->ik'), undefined, 'a batch label summed away');
  assert.equal(matmulForm('ijk,jkl->il'), undefined, 'two contracted labels');
  assert.equal(matmulForm('...ij,...jk->...ik'), undefined, 'ellipsis');
});

test('an Einsum outside the matmul form is refused before tuning, naming its layer', () => {
  for (const [eq, a, b, out] of [
    ['ijk,jkl->il', [2, 3, 4], [3, 4, 5], [2, 5]],
    ['bik,bkj->bij', [2, 3, 1], [2, 4, 5], [2, 3, 5]], // k broadcast from 1: a MatMul would read K as 1
  ] as [string, number[], number[], number[]][]) {
    const spec = einsumModel(eq, a, b, out);
    const named = { ...spec, nodes: spec.nodes.map((n) => ({ ...n, name: 'attn/einsum_7' })) };
    const found = unsupportedLayers(graphOf(named).graph, 8);
    assert.equal(found.length, 1, eq);
    assert.match(found[0]!.message, /einsum.*attn\/einsum_7/i, eq);
  }
});

test("a MatMul of two constants folds, as Swin-V2's position-bias MLP over its coordinate table, and matches ORT", async () => {
  const spec: ModelSpec = {
    opset: 13,
    inputs: [{ name: 'x', dtype: 'float32', shape: [2, 9, 3] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [2, 9, 3] }],
    initializers: [
      ['table', floats([1, 9, 2], 4)],
      ['w1', floats([2, 16], 5)],
      ['w2', floats([16, 3], 6)],
    ],
    nodes: [
      { op: 'MatMul', inputs: ['table', 'w1'], outputs: ['h'] },
      { op: 'Relu', inputs: ['h'], outputs: ['r'] },
      { op: 'MatMul', inputs: ['r', 'w2'], outputs: ['bias'] },
      { op: 'Add', inputs: ['x', 'bias'], outputs: ['y'] },
    ],
  };
  const { graph } = graphOf(spec);
  assert.ok(
    graph.layers.every((l) => l.op !== 'matmul' && l.op !== 'dense'),
    'the MLP is folded away',
  );
  await againstOrt(spec, [f32([2, 9, 3], 7)], 'constant MLP');
});

test("constant MatMuls fold with numpy's broadcasting and 1-D operands, as ORT computes them", async () => {
  const cases: [number[], number[], number[]][] = [
    [
      [2, 1, 3, 4],
      [5, 4, 2],
      [2, 5, 3, 2],
    ],
    [[4], [3, 4, 2], [3, 2]],
    [[2, 3, 4], [4], [2, 3]],
  ];
  for (const [a, b, out] of cases) {
    const spec: ModelSpec = {
      opset: 13,
      inputs: [{ name: 'x', dtype: 'float32', shape: out }],
      outputs: [{ name: 'y', dtype: 'float32', shape: out }],
      initializers: [
        ['a', floats(a, 10)],
        ['b', floats(b, 11)],
      ],
      nodes: [
        { op: 'MatMul', inputs: ['a', 'b'], outputs: ['p'] },
        { op: 'Add', inputs: ['x', 'p'], outputs: ['y'] },
      ],
    };
    assert.ok(
      graphOf(spec).graph.layers.every((l) => l.op === 'add'),
      `${a} × ${b}: folded`,
    );
    await againstOrt(spec, [f32(out, 12)], `${a} × ${b}`);
  }
});

/** ViT's token sequence: patches transposed to [1, tokens, dim], then the class token (a constant) prepended or appended. */
function classTokenModel(constantFirst: boolean): ModelSpec {
  return {
    opset: 13,
    inputs: [{ name: 'x', dtype: 'float32', shape: [1, 8, 4] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [1, 5, 8] }],
    initializers: [
      ['cls', floats([1, 1, 8], 9)],
      ['two', { dtype: 'float32', dims: [], data: new Float32Array([2]) }],
    ],
    nodes: [
      { op: 'Transpose', inputs: ['x'], outputs: ['t'], attrs: { perm: [0, 2, 1] } },
      { op: 'Concat', inputs: constantFirst ? ['cls', 't'] : ['t', 'cls'], outputs: ['c'], attrs: { axis: 1 } },
      { op: 'Mul', inputs: ['c', 'two'], outputs: ['y'] },
    ],
  };
}

test("a Concat with a constant part (ViT's class token) puts every part at its own slice, as ORT does", async () => {
  for (const constantFirst of [true, false]) {
    const spec = classTokenModel(constantFirst);
    const { ours, reference } = await runAgainstOrt(spec, [f32([1, 8, 4], 4)]);
    const cls = Array.from(floats([1, 1, 8], 9).data as Float32Array, (v) => 2 * v);
    const at = constantFirst ? 0 : 32;
    assert.deepEqual(
      Array.from(reference[0] as Float32Array).slice(at, at + 8),
      cls.map(Math.fround),
      'the reference holds the class token',
    );
    assertClose(ours[0]!, reference[0]!, `Concat, constant ${constantFirst ? 'first' : 'last'}`, 1e-6, 1e-7);
  }
});
