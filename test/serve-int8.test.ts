/**
 * A quantized tenant served beside a float one: the dispatcher runs the INT8 model's blocks like
 * any other, so requests to both models, sent together, all answer 200, and every INT8 answer
 * equals the integer reference bit for bit whatever versions and blocks the scheduler chose.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { compileModel } from '../src/compile/compile-model.js';
import type { Tensor } from '../src/onnx/model.js';
import { runReferenceGraph } from '../src/quantize/run-graph.js';
import { loadBundle } from '../src/runtime/session.js';
import { quantizedGraph } from './int8-runtime-fixture.js';
import { smallCnn } from './quantize-fixture.js';
import { assertClose, compileModels, model, post, startInProcess } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-serve-int8-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('an INT8 model and a float model served together answer every request, the INT8 one exactly', { timeout: 300_000 }, async () => {
  const { bytes, graph, samples } = await quantizedGraph(smallCnn(), 8, 6);
  const onnx = join(root, 'qcnn.onnx');
  writeFileSync(onnx, bytes);
  const qcnn = join(root, 'qcnn.bundle');
  const r = await compileModel(onnx, { output: qcnn, trials: 2, levels: [0], maxVersions: 2, db: join(root, 'db') });
  assert.equal(r.int8?.failed, 0, r.notes.join('\n'));
  const { tiny } = await compileModels(root, ['tiny']);

  const [input, output] = [graph.inputs[0]!.name, graph.outputs[0]!.name];
  const tinyX = Float32Array.from({ length: 3 * 8 * 8 }, (_, i) => Math.sin(i));
  const local = await loadBundle(tiny!);
  const tinyWant = (await local.run({ input: { dtype: 'float32', shape: [1, 3, 8, 8], data: tinyX } })).output!.data as Float32Array;
  local.close();

  const { server, url } = await startInProcess([model('qcnn', qcnn), model('tiny', tiny!)]);
  try {
    const quantized = samples.map((sample) => {
      const x = sample[input]!;
      const feed: Tensor = { dtype: 'float32', dims: x.shape, data: x.data as Float32Array };
      const want = runReferenceGraph(graph, new Map([[input, feed]])).get(output)!.data as Float32Array;
      const body = { inputs: [{ name: input, shape: x.shape, datatype: 'FP32', data: Array.from(x.data as Float32Array) }] };
      return { want, answer: post(`${url}/v2/models/qcnn/infer`, body) };
    });
    const floats = samples.map(() =>
      post(`${url}/v2/models/tiny/infer`, { inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: Array.from(tinyX) }] }),
    );
    for (const [i, q] of quantized.entries()) {
      const a = await q.answer;
      assert.equal(a.status, 200, Buffer.from(a.bytes).toString());
      const out = (a.json().outputs as { name: string; data: number[] }[]).find((o) => o.name === output)!;
      assert.deepEqual(out.data, Array.from(q.want), `INT8 request ${i}`);
    }
    for (const [i, f] of floats.entries()) {
      const a = await f;
      assert.equal(a.status, 200, Buffer.from(a.bytes).toString());
      assertClose((a.json().outputs as { data: number[] }[])[0]!.data, tinyWant, `float request ${i}`);
    }
  } finally {
    await server.stop();
  }
});
