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
import type { OnnxModel, Tensor } from '../src/onnx/model.js';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { tensorFromProto } from '../src/onnx/tensor.js';
import { opDefinition } from '../src/onnx/ops/registry.js';
import { isVeltairError } from '../src/errors.js';
import { EXCLUDED, NODE_TESTS } from './onnx-node-data.js';

const { onnx } = onnxProto;

interface Case { readonly dir: string; readonly name: string }

function supportedCases(): { cases: Case[]; unsupported: number } {
  const cases: Case[] = [];
  let unsupported = 0;
  for (const name of fs.readdirSync(NODE_TESTS).sort()) {
    const dir = path.join(NODE_TESTS, name);
    const modelFile = path.join(dir, 'model.onnx');
    if (!fs.existsSync(modelFile) || !fs.existsSync(path.join(dir, 'test_data_set_0')) || EXCLUDED.has(name)) continue;
    const proto = onnx.ModelProto.decode(fs.readFileSync(modelFile));
    const ok = (proto.graph?.node ?? []).every((n) => opDefinition(n.domain === 'ai.onnx' ? '' : n.domain ?? '', n.opType ?? '') !== undefined);
    if (ok) cases.push({ dir, name }); else unsupported++;
  }
  return { cases, unsupported };
}

function readTensors(dir: string, prefix: string): Tensor[] & { names?: string[] } {
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith('.pb'))
    .sort((a, b) => Number(a.slice(prefix.length, -3)) - Number(b.slice(prefix.length, -3)));
  const names: string[] = [];
  const tensors = files.map((f) => {
    const p = onnx.TensorProto.decode(fs.readFileSync(path.join(dir, f)));
    names.push(p.name ?? '');
    return tensorFromProto(p);
  });
  return Object.assign(tensors, { names });
}

/** The same model with its inputs baked in as initializers, for tests whose shapes depend on input values. */
function withInputsBaked(model: OnnxModel, feeds: ReadonlyMap<string, Tensor>): OnnxModel {
  const initializers = new Map(model.graph.initializers);
  for (const [name, t] of feeds) initializers.set(name, t);
  return { ...model, graph: { ...model.graph, initializers, inputs: model.graph.inputs.filter((i) => !feeds.has(i.name)) } };
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

function checkCase(c: Case): string | undefined {
  const model = decodeModel(fs.readFileSync(path.join(c.dir, 'model.onnx')), path.join(c.dir, 'model.onnx'));
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
  for (const [label, result] of [['inferred', inferred], ['folded', baked]] as const) {
    if (result === undefined) continue;
    for (let i = 0; i < outs.length; i++) {
      const want = outs[i]!;
      const name = outs.names![i] || model.graph.outputs[i]!.name;
      const got = result.types.get(name);
      if (got === undefined) return `output ${name}: no type (${label})`;
      if (JSON.stringify(got.shape) !== JSON.stringify(want.dims)) return `output ${name}: ${label} shape [${got.shape}] but reference is [${want.dims}]`;
      const folded = result.constants.get(name);
      if (folded !== undefined && !closeEnough(folded, want)) return `output ${name}: folded values differ from the reference`;
    }
  }
  return undefined;
}

test('inferred output shapes match ONNX backend node tests for every supported operator', () => {
  assert.ok(fs.existsSync(NODE_TESTS),
    `${NODE_TESTS} is missing: install Debian's libonnx-testdata (.ci/run installs it: apt-get install libonnx-testdata)`);
  const { cases, unsupported } = supportedCases();
  const failures: string[] = [];
  for (const c of cases) {
    try {
      const why = checkCase(c);
      if (why !== undefined) failures.push(`${c.name}: ${why}`);
    } catch (e) {
      failures.push(`${c.name}: ${isVeltairError(e) ? `[${e.code}] ${e.message}` : String(e)}`);
    }
  }
  console.log(`ONNX node tests: ${cases.length} with supported operators checked, ${unsupported} skipped as unsupported, ${EXCLUDED.size} excluded, ${failures.length} failed`);
  assert.deepEqual(failures, []);
  assert.ok(cases.length >= 300, `only ${cases.length} node tests were checked; expected at least 300`);
});
