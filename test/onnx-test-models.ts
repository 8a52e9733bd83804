/** Small ONNX files for the front-end tests, written with src/onnx/encode.ts into a temp folder. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import assert from 'node:assert/strict';
import type { Tensor } from '../src/onnx/model.js';
import { encodeModel, type ModelSpec, type NodeSpec } from '../src/onnx/encode.js';
import { isVeltairError, type ErrorCode } from '../src/errors.js';

export function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'veltair-onnx-'));
}

export function writeModel(spec: ModelSpec, dir = tempDir(), file = 'model.onnx'): string {
  const p = path.join(dir, file);
  fs.writeFileSync(p, encodeModel(spec));
  return p;
}

export function f32(dims: readonly number[], fill = 0.5): Tensor {
  return { dtype: 'float32', dims, data: new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(fill) };
}

export function i64(values: readonly number[], dims: readonly number[] = [values.length]): Tensor {
  return { dtype: 'int64', dims, data: Float64Array.from(values) };
}

/** input [1,3,8,8] → Conv(8 filters 3x3, pad 1) → Relu → output. */
export function convReluSpec(overrides: Partial<ModelSpec> = {}): ModelSpec {
  const nodes: NodeSpec[] = [
    { op: 'Conv', name: 'conv1', inputs: ['input', 'w', 'b'], outputs: ['c'], attrs: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } },
    { op: 'Relu', name: 'relu1', inputs: ['c'], outputs: ['output'] },
  ];
  return {
    inputs: [{ name: 'input', dtype: 'float32', shape: [1, 3, 8, 8] }],
    outputs: [{ name: 'output', dtype: 'float32' }],
    initializers: [
      ['w', f32([8, 3, 3, 3])],
      ['b', f32([8])],
    ],
    nodes,
    ...overrides,
  };
}

/** Run `f`, expect a VeltairError with `code`, and return it for further checks on its text. */
export async function expectUserError(f: () => unknown, code: ErrorCode): Promise<{ message: string; hint: string }> {
  try {
    await f();
  } catch (e) {
    assert.ok(isVeltairError(e), `expected a VeltairError, got ${String(e)}`);
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    assert.equal(e.exitCode, 1);
    assert.ok(e.hint.length > 10, 'a hint is present');
    assert.ok(!e.message.includes('\n'), 'one line');
    return { message: e.message, hint: e.hint };
  }
  assert.fail(`expected error ${code}, but nothing was thrown`);
}
