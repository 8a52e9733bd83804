import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowerToLayers } from '../src/ir/lower.js';
import { fixture, maxRelErr, randomTensor, rng, tensor, values } from './ir-fixture.js';

/** Y = X[m,k] · W[k,n] + bias, float64. */
function denseRef(x: Float64Array, w: Float64Array, bias: Float64Array | undefined, m: number, k: number, n: number): Float64Array {
  const y = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let acc = bias?.[j] ?? 0;
      for (let p = 0; p < k; p++) acc += x[i * k + p]! * w[p * n + j]!;
      y[i * n + j] = acc;
    }
  return y;
}

test('Gemm transB=1 with alpha/beta folds into a K×N dense weight and bias, numerically', () => {
  const rand = rng(21);
  const [m, k, n] = [3, 5, 4];
  const b = randomTensor([n, k], rand);
  const c = randomTensor([n], rand);
  const g = lowerToLayers(
    fixture({
      inputs: { a: [m, k] },
      outputs: ['y'],
      constants: { b, c },
      nodes: [{ op: 'Gemm', inputs: ['a', 'b', 'c'], outputs: 'y', shape: [m, n], name: 'fc', attrs: { transB: 1, alpha: 0.5, beta: 2 } }],
    }),
  );
  assert.equal(g.layers.length, 1);
  const dense = g.layers[0]!;
  assert.equal(dense.op, 'dense');
  assert.equal(dense.name, 'fc');
  assert.deepEqual(dense.outputs, ['y']);
  assert.deepEqual(dense.params.weight?.dims, [k, n]);
  assert.deepEqual(dense.workload && { m: dense.workload.op === 'dense' ? dense.workload.m : -1, epilogue: dense.workload.epilogue }, {
    m,
    epilogue: ['bias'],
  });
  const a = values(randomTensor([m, k], rand));
  // the ONNX definition, directly: Y = alpha · A · Bᵀ + beta · C
  const bv = values(b);
  const cv = values(c);
  const expected = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let p = 0; p < k; p++) acc += a[i * k + p]! * bv[j * k + p]!;
      expected[i * n + j] = 0.5 * acc + 2 * cv[j]!;
    }
  const got = denseRef(a, values(dense.params.weight), values(dense.params.bias), m, k, n);
  assert.ok(maxRelErr(got, expected) < 1e-6, `error ${maxRelErr(got, expected)}`);
  assert.equal(dense.macs, m * k * n);
});

test('Gemm without C is a dense layer with no epilogue; a full [M,N] C stays a separate add', () => {
  const rand = rng(22);
  const b = randomTensor([3, 4], rand);
  const plain = lowerToLayers(
    fixture({
      inputs: { a: [2, 3] },
      outputs: ['y'],
      constants: { b },
      nodes: [{ op: 'Gemm', inputs: ['a', 'b'], outputs: 'y', shape: [2, 4] }],
    }),
  );
  assert.deepEqual(
    plain.layers.map((l) => l.op),
    ['dense'],
  );
  assert.deepEqual(plain.layers[0]!.workload?.epilogue, []);
  assert.deepEqual(values(plain.layers[0]!.params.weight), values(b));
  const full = lowerToLayers(
    fixture({
      inputs: { a: [2, 3] },
      outputs: ['y'],
      constants: { b: randomTensor([3, 4], rand), c: randomTensor([2, 4], rand) },
      nodes: [{ op: 'Gemm', inputs: ['a', 'b', 'c'], outputs: 'y', shape: [2, 4] }],
    }),
  );
  assert.deepEqual(
    full.layers.map((l) => l.op),
    ['dense', 'add'],
  );
  assert.deepEqual(full.layers[1]!.outputs, ['y']);
  assert.deepEqual(full.layers[1]!.inputs, [full.layers[0]!.outputs[0]]);
});

test('MatMul [1,384,1024]×[1024,4096] + bias → dense m=384 with a bias epilogue', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: [1, 384, 1024] },
      outputs: ['y'],
      constants: { w: tensor([1024, 4096]), b: tensor([4096]) },
      nodes: [
        { op: 'MatMul', inputs: ['x', 'w'], outputs: 'h', shape: [1, 384, 4096] },
        { op: 'Add', inputs: ['h', 'b'], outputs: 'y', shape: [1, 384, 4096] },
      ],
    }),
  );
  assert.equal(g.layers.length, 1);
  const w = g.layers[0]!.workload;
  assert.ok(w !== undefined && w.op === 'dense');
  assert.deepEqual({ m: w.m, k: w.k, n: w.n, epilogue: w.epilogue }, { m: 384, k: 1024, n: 4096, epilogue: ['bias'] });
  assert.equal(g.layers[0]!.macs, 384 * 1024 * 4096);
  assert.deepEqual(g.layers[0]!.outputShape, [1, 384, 4096]);
});

test('a MatMul whose constant is on the left stays a non-tunable matmul with exact MACs', () => {
  const g = lowerToLayers(
    fixture({
      inputs: { x: [4, 6] },
      outputs: ['y'],
      constants: { a: tensor([3, 4]) },
      nodes: [{ op: 'MatMul', inputs: ['a', 'x'], outputs: 'y', shape: [3, 6] }],
    }),
  );
  const l = g.layers[0]!;
  assert.deepEqual(
    { op: l.op, tunable: l.tunable, macs: l.macs, inputs: l.inputs },
    { op: 'matmul', tunable: false, macs: 3 * 4 * 6, inputs: ['x'] },
  );
  assert.deepEqual(l.params.A?.dims, [3, 4]);
  assert.equal(l.workload, undefined);
});

test('MatMul + bias + GELU (erf form) fuses into one dense layer', () => {
  const S = [1, 8, 16];
  const g = lowerToLayers(
    fixture({
      inputs: { x: [1, 8, 4] },
      outputs: ['y'],
      constants: {
        w: tensor([4, 16]),
        b: tensor([16]),
        sqrt2: tensor([], [1.4142135381698608]),
        one: tensor([], [1]),
        half: tensor([], [0.5]),
      },
      nodes: [
        { op: 'MatMul', inputs: ['x', 'w'], outputs: 'h', shape: S },
        { op: 'Add', inputs: ['b', 'h'], outputs: 'hb', shape: S },
        { op: 'Div', inputs: ['hb', 'sqrt2'], outputs: 't', shape: S },
        { op: 'Erf', inputs: ['t'], outputs: 'e', shape: S },
        { op: 'Add', inputs: ['e', 'one'], outputs: 'a', shape: S },
        { op: 'Mul', inputs: ['hb', 'a'], outputs: 'm', shape: S },
        { op: 'Mul', inputs: ['m', 'half'], outputs: 'y', shape: S },
      ],
    }),
  );
  assert.deepEqual(
    g.layers.map((l) => l.op),
    ['dense'],
  );
  assert.deepEqual(g.layers[0]!.workload?.epilogue, ['bias', 'gelu']);
  assert.equal(g.layers[0]!.workload?.op === 'dense' && g.layers[0]!.workload.m, 8);
  assert.deepEqual(g.layers[0]!.outputs, ['y']);
});
