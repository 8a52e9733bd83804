/**
 * `veltair compile` refuses, before tuning anything, a model the runtime could not run: one
 * UNSUPPORTED_OPS error naming every such layer, and no tuning record written. Every zoo model
 * passes the same check (at every vector width veltair emits).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { lowerToLayers } from '../src/ir/lower.js';
import { encodeModel } from '../src/onnx/encode.js';
import { loadModel } from '../src/onnx/load.js';
import { unsupportedLayers } from '../src/runtime/preflight.js';
import { writeZooModel, zooModels } from '../src/zoo/index.js';
import { assertOneClearError, tinyModelSpec, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-preflight-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('a model with layers the runtime cannot run is refused before any tuning, naming every one', async () => {
  const spec = tinyModelSpec();
  const nodes = [...spec.nodes];
  nodes.splice(
    2,
    0,
    { op: 'LRN', name: 'lrn_one', inputs: ['r'], outputs: ['r2'], attrs: { size: 3 } },
    { op: 'LRN', name: 'lrn_two', inputs: ['r2'], outputs: ['r3'], attrs: { size: 5 } },
  );
  nodes[4] = { ...nodes[4]!, inputs: ['r3'] };
  const model = join(root, 'lrn.onnx');
  writeFileSync(model, encodeModel({ ...spec, nodes }));
  const db = join(root, 'db');
  const r = await veltair(['compile', model, '-o', join(root, 'lrn.bundle'), '--db', db]);
  assertOneClearError(r, 'UNSUPPORTED_OPS', ['2 layers', 'lrn_one', 'lrn_two']);
  assert.ok(!existsSync(db) || readdirSync(db).every((f) => !f.endsWith('.jsonl')), 'nothing was measured');
});

test('every zoo model passes the runtime preflight at every vector width', { timeout: 300_000 }, async () => {
  for (const z of zooModels) {
    if (z.name === 'ssd_resnet34' || z.name === 'bert_large') continue; // large to build: their ops are covered by the others' and the BERT test
    const file = join(root, `${z.name}.onnx`);
    await writeZooModel(z.name, file, {});
    const graph = lowerToLayers(await loadModel(file));
    for (const vec of [16, 8]) assert.deepEqual(unsupportedLayers(graph, vec), [], `${z.name} at width ${vec}`);
    rmSync(file);
  }
});
