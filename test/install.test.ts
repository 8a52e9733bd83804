/**
 * What a production image does: pack veltair, install the tarball into an empty folder without
 * development dependencies, and use it there — `inspect`, `compile` (a tiny budget), `run` and
 * `serve --help` work; a command that benchmarks against ONNX Runtime says which package is
 * missing and how to install it, in one clear error; `bench --calibrate-proxy` goes on without it;
 * the benchmark harness is not shipped.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';
import { encodeModel } from '../src/onnx/encode.js';
import { encodeNpy } from '../src/runtime/io-npy.js';
import { assertOneClearError, tinyModelSpec } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-install-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('the packed tarball installs without development dependencies and its commands work', { timeout: 600_000 }, async () => {
  const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', root], { cwd: process.cwd() });
  const tarball = join(root, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
  const files = (JSON.parse(packed.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  assert.ok(files.includes('dist/src/cli/main.js') && files.includes('native-kernels/runtime/executor.c') && files.includes('bin/veltair'));
  assert.ok(!files.some((f) => f.startsWith('dist/test/') || f.startsWith('test/')), 'tests are not shipped');
  assert.ok(!files.some((f) => f.startsWith('dist/src/bench/') || f.startsWith('src/bench/')), 'the benchmark harness is not shipped');
  assert.ok(files.includes('dist/src/ort/serve-backend.js') && files.includes('dist/src/compare/model-command.js'));
  const app = join(root, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  await execa('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: app });
  assert.ok(!existsSync(join(app, 'node_modules', 'onnxruntime-node')), 'ONNX Runtime is an optional peer: not installed');
  assert.ok(!existsSync(join(app, 'node_modules', 'dependency-cruiser')));
  const v = (args: string[]) => execa(join(app, 'node_modules', '.bin', 'veltair'), args, { cwd: app, reject: false, stdin: 'ignore' });

  writeFileSync(join(app, 'tiny.onnx'), encodeModel(tinyModelSpec()));
  const inspect = await v(['inspect', 'tiny.onnx', '--json']);
  assert.equal(inspect.exitCode, 0, inspect.stderr);
  assert.equal((JSON.parse(inspect.stdout) as { totals: { tunableLayers: number } }).totals.tunableLayers, 2);
  const compile = await v([
    'compile',
    'tiny.onnx',
    '-o',
    'tiny.bundle',
    '--trials',
    '1',
    '--levels',
    '0',
    '--max-versions',
    '1',
    '--profile-threads',
    'none',
    '--db',
    'db',
    '--json',
  ]);
  assert.equal(compile.exitCode, 0, compile.stderr);
  writeFileSync(join(app, 'input.npy'), encodeNpy({ dtype: 'float32', shape: [1, 3, 8, 8], data: new Float32Array(192).fill(0.5) }));
  const run = await v(['run', 'tiny.bundle', '--input', 'input=input.npy', '--output-dir', 'out', '--json']);
  assert.equal(run.exitCode, 0, run.stderr);
  assert.ok(readFileSync(join(app, 'out', 'output.npy')).byteLength > 40);
  assert.equal((await v(['serve', '--help'])).exitCode, 0);
  const noOrt = await v(['bench', 'tiny.bundle']);
  assertOneClearError(noOrt, 'MISSING_DEPENDENCY', ['onnxruntime-node']);
  assert.match(noOrt.stderr, /hint: .*npm install onnxruntime-node/, 'the hint gives the install line');
  assertOneClearError(await v(['bench-layers', 'tiny.onnx']), 'MISSING_DEPENDENCY', ['onnxruntime-node']);
  // The proxy's calibration needs no ONNX Runtime: it goes on to judge the bundle (profiled at level 0 only, so refused for that).
  assertOneClearError(await v(['bench', 'tiny.bundle', '--calibrate-proxy']), 'BAD_BUNDLE', ['noisy level']);
});
