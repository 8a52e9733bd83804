/**
 * ONNX's own backend node tests (Debian's libonnx-testdata): for every test whose operators veltair
 * supports, the inferred output shapes must equal the reference outputs' shapes, and where veltair
 * folds an output to a constant, its values must match the reference too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import onnxProto from 'onnx-proto';
import type { Tensor } from '../src/onnx/model.js';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { tensorFromProto } from '../src/onnx/tensor.js';
import { isVeltairError } from '../src/errors.js';
import { dataFiles, EXCLUDED, NODE_TESTS, nodeTestCases, withInputsBaked, type NodeTestCase } from './onnx-node-data.js';

const { onnx } = onnxProto;

function readTensors(dir: string, prefix: 'input_' | 'output_'): Tensor[] & { names?: string[] } {
  const names: string[] = [];
  const tensors = dataFiles(dir, prefix).map((f) => {
    const p = onnx.TensorProto.decode(fs.readFileSync(f));
    names.push(p.name ?? '');
    return tensorFromProto(p);
  });
  return Object.assign(tensors, { names });
}

function closeEnough(got: Tensor, want: Tensor): boolean {
  if (Array.isArray(got.data) || Array.isArray(want.data)) return JSON.stringify(got.data) === JSON.stringify(want.data);
  const g = got.data as ArrayLike<number>;
  const w = want.data as ArrayLike<number>;
  if (g.length !== w.length) return false;
  for (let i = 0; i < g.length; i++) {
    const a = g[i]!;
    const b = w[i]!;
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    if (a === b) continue;
    if (!(Math.abs(a - b) <= 1e-4 + 1e-3 * Math.abs(b))) return false;
  }
  return true;
}

function checkCase(c: NodeTestCase): string | undefined {
  const model = decodeModel(c.bytes, path.join(c.dir, 'model.onnx'));
  const dataDir = path.join(c.dir, 'test_data_set_0');
  const ins = readTensors(dataDir, 'input_');
  const outs = readTensors(dataDir, 'output_');
  const feedNames = model.graph.inputs.map((i) => i.name);
  const feeds = new Map(ins.map((t, i) => [ins.names![i] || feedNames[i]!, t]));
  const pins = new Map([...feeds].map(([n, t]) => [n, t.dims]));
  let inferred;
  try {
    inferred = inferModel(model, { inputShapes: pins });
  } catch (e) {
    if (!isVeltairError(e) || e.code !== 'DYNAMIC_SHAPE') throw e;
    inferred = undefined;
  }
  // With the inputs baked in as constants everything the evaluator supports folds: checks its values.
  const baked = inferModel(withInputsBaked(model, feeds));
  for (const [label, result] of [
    ['inferred', inferred],
    ['folded', baked],
  ] as const) {
    if (result === undefined) continue;
    for (let i = 0; i < outs.length; i++) {
      const want = outs[i]!;
      const name = outs.names![i] || model.graph.outputs[i]!.name;
      const got = result.types.get(name);
      if (got === undefined) return `output ${name}: no type (${label})`;
      if (JSON.stringify(got.shape) !== JSON.stringify(want.dims))
        return `output ${name}: ${label} shape [${got.shape}] but reference is [${want.dims}]`;
      const folded = result.constants.get(name);
      if (folded !== undefined && !closeEnough(folded, want)) return `output ${name}: folded values differ from the reference`;
    }
  }
  return undefined;
}

test('inferred output shapes match ONNX backend node tests for every supported operator', () => {
  assert.ok(
    fs.existsSync(NODE_TESTS),
    `${NODE_TESTS} is missing: install Debian's libonnx-testdata (.ci/run installs it: apt-get install libonnx-testdata)`,
  );
  const { cases, unknownOp: unsupported } = nodeTestCases();
  const failures: string[] = [];
  for (const c of cases) {
    try {
      const why = checkCase(c);
      if (why !== undefined) failures.push(`${c.name}: ${why}`);
    } catch (e) {
      failures.push(`${c.name}: ${isVeltairError(e) ? `[${e.code}] ${e.message}` : String(e)}`);
    }
  }
  console.log(
    `ONNX node tests: ${cases.length} with supported operators checked, ${unsupported} skipped as unsupported, ` +
      `${EXCLUDED.size} excluded, ${failures.length} failed`,
  );
  assert.deepEqual(failures, []);
  assert.ok(cases.length >= 300, `only ${cases.length} node tests were checked; expected at least 300`);
});
