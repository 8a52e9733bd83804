/**
 * The zoo's BERT-Large: exporter node patterns (decomposed LayerNorm, Erf GELU, scaled-masked
 * softmax attention), MACs per encoder layer against the closed form, the default staying under
 * 200 MB, and one-layer models (with and without embeddings) run in ONNX Runtime.
 */
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { findZooModel, writeModelSpec } from '../src/zoo/index.js';
import { countLayers, assertDeclaredOutputs, runInOrt, withTempDir } from './zoo-harness.js';
import type { ModelSpec } from '../src/onnx/encode.js';
import type { Tensor } from '../src/onnx/model.js';

const bert = findZooModel('bert_large');
const S = 384,
  H = 1024,
  HEADS = 16,
  HEAD_DIM = 64,
  FFN = 4096;
/** Q, K, V, output projections and the two FFN matmuls. */
const DENSE_MACS_PER_LAYER = S * (4 * H * H + 2 * H * FFN);
/** Q·Kᵀ and P·V over all heads. */
const ATTENTION_MACS_PER_LAYER = 2 * HEADS * S * S * HEAD_DIM;

function weightBytes(spec: ModelSpec): number {
  let bytes = 0;
  for (const [, t] of spec.initializers as ReadonlyMap<string, Tensor>) bytes += t.data.length * (t.dtype === 'int64' ? 8 : 4);
  return bytes;
}

test('zoo bert_large: MACs per encoder layer match the closed form at sequence 384', () => {
  for (const layers of [1, 2]) {
    const count = countLayers(bert.build({ layers }));
    assert.equal(count.convs, 0);
    assert.equal(count.dense, 6 * layers);
    assert.equal(count.batchMatmuls, 2 * layers);
    assert.equal(count.denseMacs, layers * DENSE_MACS_PER_LAYER);
    assert.equal(count.batchMatmulMacs, layers * ATTENTION_MACS_PER_LAYER);
  }
});

test('zoo bert_large: the default (3 encoder layers, no embedding tables) stays under 200 MB', () => {
  const spec = bert.build();
  assert.equal(countLayers(spec).dense, 18);
  const bytes = weightBytes(spec);
  assert.ok(bytes < 200e6, `default weights are ${bytes} bytes`);
  assert.ok(bytes > 150e6, 'three BERT-Large layers are ≈151 MB of float32');
  assertDeclaredOutputs(spec);
});

test('zoo bert_large: LayerNorm, GELU and attention use the PyTorch opset-13 export patterns', () => {
  const spec = bert.build({ layers: 1 });
  assert.equal(spec.opset, 13);
  const ops = spec.nodes.map((n) => n.op);
  const run = (name: string): string[] => spec.nodes.filter((n) => (n.name ?? '').startsWith(name)).map((n) => n.op);
  assert.deepEqual(run('encoder.layer.0.output.LayerNorm'), ['ReduceMean', 'Sub', 'Pow', 'ReduceMean', 'Add', 'Sqrt', 'Div', 'Mul', 'Add']);
  assert.deepEqual(run('encoder.layer.0.intermediate.gelu'), ['Div', 'Erf', 'Add', 'Mul', 'Mul']);
  const qk = spec.nodes.findIndex((n) => n.name === 'encoder.layer.0.attention.self.qk');
  assert.deepEqual(ops.slice(qk, qk + 4), ['MatMul', 'Div', 'Add', 'Softmax']);
  assert.equal(ops.filter((o) => o === 'Softmax').length, 1);
  const keyTranspose = spec.nodes.find((n) => n.name === 'encoder.layer.0.attention.self.key.heads');
  assert.deepEqual(keyTranspose?.attrs?.perm, [0, 2, 3, 1]);
});

test('zoo bert_large with 1 layer runs in ONNX Runtime from hidden states + additive mask', async () => {
  const spec = bert.build({ layers: 1 });
  assert.deepEqual(
    spec.inputs.map((i) => [i.name, i.dtype, i.shape]),
    [
      ['hidden_states', 'float32', [1, S, H]],
      ['attention_mask', 'float32', [1, 1, 1, S]],
    ],
  );
  assert.deepEqual(
    spec.outputs.map((o) => [o.name, o.shape]),
    [['last_hidden_state', [1, S, H]]],
  );
  await withTempDir(async (dir) => {
    const path = join(dir, 'bert1.onnx');
    await writeModelSpec(spec, path);
    assert.ok((await stat(path)).size > 50e6);
    await runInOrt(path, spec);
  });
});

test('zoo bert_large with embeddings runs in ONNX Runtime from int64 token ids', async () => {
  const spec = bert.build({ layers: 1, embeddings: true, sequence: 128 });
  assert.deepEqual(
    spec.inputs.map((i) => [i.name, i.dtype, i.shape]),
    [
      ['input_ids', 'int64', [1, 128]],
      ['token_type_ids', 'int64', [1, 128]],
      ['attention_mask', 'int64', [1, 128]],
    ],
  );
  assert.deepEqual(
    spec.outputs.map((o) => o.shape),
    [[1, 128, H]],
  );
  assertDeclaredOutputs(spec);
  await withTempDir(async (dir) => {
    const path = join(dir, 'bert1e.onnx');
    await writeModelSpec(spec, path);
    await runInOrt(path, spec, { input_ids: [0, 30521], token_type_ids: [0, 1], attention_mask: [0, 1] });
  });
});
