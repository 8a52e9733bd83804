/**
 * The real `veltair` binary in a child process (for tests of the CLI itself), compileModel in this
 * process (for tests that need a bundle), and a tiny model for compile tests.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { execa } from 'execa';
import { compileModel, type CompileResult } from '../src/compile/compile-model.js';
import type { CompileOptions } from '../src/compile/options.js';
import type { Tensor } from '../src/onnx/model.js';
import type { ModelSpec } from '../src/onnx/encode.js';

export const BIN = resolve('bin/veltair');

export async function veltair(args: readonly string[], env: NodeJS.ProcessEnv = {}, extendEnv = true) {
  return execa(process.execPath, [BIN, ...args], { reject: false, stdin: 'ignore', env, extendEnv });
}

/**
 * A bundle for a test that is not about the CLI: compileModel in this process. With `cache`, the
 * kernel cache is there for the compile's duration (what such a test gave `veltair compile` as
 * VELTAIR_CACHE_DIR); this process's own runtime keeps its cache.
 */
export async function compileFixture(model: string | Uint8Array, options: CompileOptions, cache?: string): Promise<CompileResult> {
  const before = process.env['VELTAIR_CACHE_DIR'];
  if (cache !== undefined) process.env['VELTAIR_CACHE_DIR'] = cache;
  try {
    return await compileModel(model, options);
  } finally {
    if (cache !== undefined) {
      if (before === undefined) delete process.env['VELTAIR_CACHE_DIR'];
      else process.env['VELTAIR_CACHE_DIR'] = before;
    }
  }
}

/** Exit 1, exactly an `error[CODE]: …` line and a `hint:` line on stderr, no stack, nothing on stdout. */
export function assertOneClearError(
  r: { exitCode?: number; stdout: string; stderr: string },
  code: string,
  mentions: readonly string[] = [],
) {
  assert.equal(r.exitCode, 1, `exit code (stderr: ${r.stderr})`);
  assert.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 2, `two lines expected, got:\n${r.stderr}`);
  assert.match(lines[0]!, new RegExp(`^error\\[${code}\\]: `));
  assert.match(lines[1]!, /^ {2}hint: \S/);
  for (const m of mentions) assert.ok(lines[0]!.includes(m), `message should name ${m}: ${lines[0]}`);
}

const wave = (dims: readonly number[], scale: number): Tensor => ({
  dtype: 'float32',
  dims,
  data: Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i * 0.37) * scale),
});

/** input [1,3,8,8] → Conv 3x3 (8 filters) + bias → Relu → Flatten → Gemm (10 outputs) → output. */
export function tinyModelSpec(): ModelSpec {
  return {
    inputs: [{ name: 'input', dtype: 'float32', shape: [1, 3, 8, 8] }],
    outputs: [{ name: 'output', dtype: 'float32' }],
    initializers: [
      ['w', wave([8, 3, 3, 3], 0.2)],
      ['b', wave([8], 0.1)],
      ['fw', wave([10, 512], 0.05)],
      ['fb', wave([10], 0.1)],
    ],
    nodes: [
      { op: 'Conv', name: 'conv1', inputs: ['input', 'w', 'b'], outputs: ['c'], attrs: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } },
      { op: 'Relu', name: 'relu1', inputs: ['c'], outputs: ['r'] },
      { op: 'Flatten', name: '../../etc/passwd', inputs: ['r'], outputs: ['f'], attrs: { axis: 1 } },
      { op: 'Gemm', name: 'fc', inputs: ['f', 'fw', 'fb'], outputs: ['output'], attrs: { transB: 1 } },
    ],
  };
}
