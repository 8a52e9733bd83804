import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ort from 'onnxruntime-node';
import type { Conv2dWorkload, DenseWorkload, BatchMatmulWorkload } from '../src/ir/workload.js';
import { buildLayerModel, measureOrtLayer, seededFloats } from '../src/ort/layer.js';
import { median } from '../src/stats.js';

const conv: Conv2dWorkload = {
  op: 'conv2d',
  dtype: 'float32',
  n: 1,
  cin: 3,
  h: 7,
  w: 6,
  cout: 4,
  kh: 3,
  kw: 3,
  strideH: 2,
  strideW: 1,
  pads: [1, 0, 1, 2],
  dilationH: 1,
  dilationW: 1,
  groups: 1,
  oh: 4,
  ow: 6,
  epilogue: ['bias', 'relu'],
};

/** Plain reference convolution + bias + relu, straight from the definition. */
function referenceConv(x: Float32Array, w: Float32Array, b: Float32Array): Float32Array {
  const c = conv;
  const y = new Float32Array(c.cout * c.oh * c.ow);
  for (let co = 0; co < c.cout; co++)
    for (let oy = 0; oy < c.oh; oy++)
      for (let ox = 0; ox < c.ow; ox++) {
        let s = b[co]!;
        for (let ci = 0; ci < c.cin; ci++)
          for (let ky = 0; ky < c.kh; ky++)
            for (let kx = 0; kx < c.kw; kx++) {
              const iy = oy * c.strideH - c.pads[0] + ky;
              const ix = ox * c.strideW - c.pads[1] + kx;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              s += x[(ci * c.h + iy) * c.w + ix]! * w[((co * c.cin + ci) * c.kh + ky) * c.kw + kx]!;
            }
        y[(co * c.oh + oy) * c.ow + ox] = Math.max(0, s);
      }
  return y;
}

test('the baseline conv model computes conv + bias + relu with ONNX pad order', async () => {
  const model = buildLayerModel(conv);
  assert.deepEqual(model.opTypes, ['Conv', 'Relu']);
  assert.deepEqual(model.outputShape, [1, 4, 4, 6]);
  const session = await ort.InferenceSession.create(model.bytes);
  const x = seededFloats(3 * 7 * 6, 5);
  const out = await session.run({ x: new ort.Tensor('float32', x, [1, 3, 7, 6]) });
  const y = out['y']!;
  assert.deepEqual(y.dims, [1, 4, 4, 6]);
  // Weights and bias are the seeded values the builder used (seeds 1 and 2).
  const expected = referenceConv(x, seededFloats(4 * 3 * 3 * 3, 1), seededFloats(4, 2));
  const got = y.data as Float32Array;
  expected.forEach((v, i) => assert.ok(Math.abs(v - got[i]!) < 1e-5, `element ${i}: ${got[i]} vs ${v}`));
  await session.release();
});

test('ORT latency of a small conv: positive median of all samples, and the call overhead beside it', async () => {
  const r = await measureOrtLayer({ ...conv, epilogue: ['bias', 'residual_add', 'relu'] }, { threads: 1, minMs: 20, minRepeats: 7 });
  assert.ok(r.samplesMs.length >= 7);
  assert.ok(r.medianMs > 0);
  assert.equal(r.medianMs, median(r.samplesMs));
  assert.ok(r.overhead.samplesMs.length >= 7);
  assert.ok(r.overhead.medianMs > 0);
  assert.equal(r.threads, 1);
  assert.deepEqual(r.opTypes, ['Conv', 'Add', 'Relu']);
});

test('dense and batch-matmul baselines build the ONNX ops that match the workload', async () => {
  const dense: DenseWorkload = { op: 'dense', dtype: 'float32', m: 3, k: 5, n: 4, epilogue: ['bias', 'gelu'] };
  const d = buildLayerModel(dense);
  assert.equal(d.opTypes[0], 'Gemm');
  assert.deepEqual(d.outputShape, [3, 4]);
  const bmm: BatchMatmulWorkload = { op: 'batch_matmul', dtype: 'float32', batch: 2, m: 3, k: 5, n: 4, transB: true, epilogue: [] };
  const b = buildLayerModel(bmm);
  assert.deepEqual(b.opTypes, ['Transpose', 'MatMul']);
  assert.deepEqual(
    b.inputs.map((i) => i.shape),
    [
      [2, 3, 5],
      [2, 4, 5],
    ],
  );
  for (const w of [dense, bmm]) {
    const r = await measureOrtLayer(w, { threads: 1, minMs: 5, minRepeats: 3 });
    assert.ok(r.medianMs > 0 && r.samplesMs.length >= 3);
  }
});
