/**
 * `veltair run` through the real binary on a tiny compiled model (conv+relu → flatten → gemm):
 * .npy and TensorProto .pb inputs give ONNX Runtime's outputs, written as .npy; --json has the
 * contract's shape; levels; and every bad input is one clear line with exit 1 —
 * missing bundle, truncated and tampered bundle files, a newer format major, wrong input name,
 * shape or dtype, .npy with an unsupported dtype or Fortran order.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { execa } from 'execa';
import onnxProto from 'onnx-proto';
import { encodeModel } from '../src/onnx/encode.js';
import { decodeNpy, encodeNpy } from '../src/runtime/io-npy.js';
import { assertOneClearError, BIN, compileFixture, tinyModelSpec, veltair } from './compile-fixture.js';
import { compareTensors, describeComparison, ortOutputs, seededFloats } from './runtime-session-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-run-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));
const env = { VELTAIR_CACHE_DIR: join(root, 'cache') };
const model = join(root, 'tiny.onnx');
const bundle = join(root, 'tiny.bundle');
const shape = [1, 3, 8, 8];
const x = seededFloats(3 * 64, 3);
const npyIn = join(root, 'x.npy');
const pbIn = join(root, 'x.pb');

before(async () => {
  writeFileSync(model, encodeModel(tinyModelSpec()));
  await compileFixture(
    model,
    { output: bundle, db: join(root, 'db'), trials: 1, levels: [0], maxVersions: 1, profileThreads: [] },
    env.VELTAIR_CACHE_DIR,
  );
  writeFileSync(npyIn, encodeNpy({ dtype: 'float32', shape, data: x }));
  writeFileSync(
    pbIn,
    onnxProto.onnx.TensorProto.encode({ name: 'input', dataType: 1, dims: shape, rawData: new Uint8Array(x.buffer) }).finish(),
  );
});

const run = (args: readonly string[]) => veltair(['run', ...args], env);

async function reference(): Promise<Float32Array> {
  return (await ortOutputs(model, { input: { dtype: 'float32', shape, data: x } }))['output']!.data as Float32Array;
}

test('a .npy input runs and matches ONNX Runtime; the summary lists each output with shape and statistics', async () => {
  const out = join(root, 'out-npy');
  const r = await run([bundle, '--input', `input=${npyIn}`, '--output-dir', out]);
  assert.equal(r.exitCode, 0, r.stderr);
  assert.match(r.stdout, /^output\s+dtype\s+shape\s+min\s+max\s+mean\s+file$/m);
  assert.match(r.stdout, /^output\s+float32\s+\[1, 10\]\s+\S+\s+\S+\s+\S+\s+\S+output\.npy$/m);
  assert.match(r.stdout, /^level 0 \(fixed by --level\); one run took \d+\.\d+ ms$/m);
  const y = decodeNpy(readFileSync(join(out, 'output.npy')), 'output.npy');
  assert.deepEqual([y.dtype, y.shape], ['float32', [1, 10]]);
  const c = compareTensors('output', y.data, await reference());
  assert.equal(c.bad, 0, describeComparison(c));
});

test('--json with a TensorProto .pb input: { outputs: [{name, shape, dtype, path}], level, latencyMs }, nothing else on stdout', async () => {
  const out = join(root, 'out-pb');
  const r = await run([bundle, '--input', `input=${pbIn}`, '--output-dir', out, '--level', '0', '--json']);
  assert.equal(r.exitCode, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(j), ['outputs', 'level', 'latencyMs']);
  assert.deepEqual(j.outputs, [{ name: 'output', shape: [1, 10], dtype: 'float32', path: join(out, 'output.npy') }]);
  assert.equal(j.level, 0);
  assert.ok(typeof j.latencyMs === 'number' && j.latencyMs > 0);
  const y = decodeNpy(readFileSync(j.outputs[0].path), 'output.npy');
  const c = compareTensors('output', y.data, await reference());
  assert.equal(c.bad, 0, describeComparison(c));
});

test('defaults: ./outputs is created; a bare FILE feeds a one-input model; float64 .npy is narrowed with a note', async () => {
  const cwd = join(root, 'cwd');
  mkdirSync(cwd);
  const f64 = join(root, 'x64.npy');
  writeFileSync(f64, encodeNpy({ dtype: 'float64', shape, data: Float64Array.from(x) }));
  const r = await execa(process.execPath, [BIN, 'run', bundle, '--input', f64], { cwd, env, reject: false });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.match(r.stderr, /note: .*x64\.npy is float64; converted to float32 for input "input"/);
  const y = decodeNpy(readFileSync(join(cwd, 'outputs', 'output.npy')), 'output.npy');
  assert.equal(compareTensors('output', y.data, await reference()).bad, 0);
});

test('levels: a level the bundle was not profiled at falls back with a note; auto without calibration runs at 0 and says so', async () => {
  const three = await run([bundle, '--input', npyIn, '--output-dir', join(root, 'l3'), '--level', '3']);
  assert.equal(three.exitCode, 0, three.stderr);
  assert.match(three.stderr, /profiled at level 0 only; level 3 picks by the level-0 profiles/);
  assert.match(three.stdout, /^level 3 /m);
  const auto = await run([bundle, '--input', npyIn, '--output-dir', join(root, 'la'), '--level', 'auto', '--json']);
  assert.equal(auto.exitCode, 0, auto.stderr);
  assert.equal(JSON.parse(auto.stdout).level, 0);
  assertOneClearError(await run([bundle, '--input', npyIn, '--level', '9']), 'BAD_ARGUMENT', ['--level "9"']);
});

function copyBundle(name: string, edit: (dir: string) => void): string {
  const dir = join(root, name);
  cpSync(bundle, dir, { recursive: true });
  edit(dir);
  return dir;
}

test('bad bundles: missing, truncated, tampered, newer format major — one clear line, exit 1', async () => {
  assertOneClearError(await run([join(root, 'no-such.bundle'), '--input', npyIn]), 'FILE_NOT_FOUND', ['no-such.bundle does not exist']);
  const truncated = copyBundle('truncated.bundle', (d) => truncateSync(join(d, 'kernels', 'kernels.so'), 100));
  assertOneClearError(await run([truncated, '--input', npyIn]), 'BAD_BUNDLE', ['kernels/kernels.so is 100 bytes, the manifest says']);
  const tampered = copyBundle('tampered.bundle', (d) => {
    const p = join(d, 'weights', 'packed.bin');
    const b = readFileSync(p);
    b[b.length >> 1] ^= 0x40;
    writeFileSync(p, b);
  });
  assertOneClearError(await run([tampered, '--input', npyIn]), 'BAD_BUNDLE', ['weights/packed.bin does not match its sha256']);
  const newer = copyBundle('newer.bundle', (d) => {
    const p = join(d, 'manifest.json');
    writeFileSync(p, readFileSync(p, 'utf8').replace(/"formatVersion": "2\.\d+\.\d+"/, '"formatVersion": "3.0.0"'));
  });
  assertOneClearError(await run([newer, '--input', npyIn]), 'BAD_BUNDLE', ['bundle format 3.0.0 is newer than this veltair (2.x)']);
  const noManifest = copyBundle('no-manifest.bundle', (d) => rmSync(join(d, 'manifest.json')));
  assertOneClearError(await run([noManifest, '--input', npyIn]), 'BAD_BUNDLE', ['has no manifest.json']);
});

test('bad inputs: wrong name, shape, dtype; unsupported .npy dtype and Fortran order; missing or odd files — one clear line, exit 1', async () => {
  const file = (name: string, bytes: Uint8Array) => {
    const p = join(root, name);
    writeFileSync(p, bytes);
    return p;
  };
  assertOneClearError(await run([bundle, '--input', `image=${npyIn}`]), 'BAD_INPUT', [
    'no input "image"',
    'its inputs are "input" (float32 [1, 3, 8, 8])',
  ]);
  const wrongShape = file('shape.npy', encodeNpy({ dtype: 'float32', shape: [1, 3, 8, 9], data: new Float32Array(216) }));
  assertOneClearError(await run([bundle, '--input', `input=${wrongShape}`]), 'BAD_INPUT', [
    'input "input" has shape [1, 3, 8, 9]; expected float32 [1, 3, 8, 8]',
    'shape.npy',
  ]);
  const wrongDtype = file('ints.npy', encodeNpy({ dtype: 'int32', shape, data: new Int32Array(192) }));
  assertOneClearError(await run([bundle, '--input', `input=${wrongDtype}`]), 'BAD_INPUT', [
    'input "input" is int32; expected float32 [1, 3, 8, 8]',
    'ints.npy',
  ]);
  const good = encodeNpy({ dtype: 'float32', shape, data: x });
  const patch = (from: string, to: string) => {
    const text = Buffer.from(good).toString('latin1');
    assert.ok(text.includes(from));
    return Buffer.from(text.replace(from, to.padEnd(from.length)), 'latin1');
  };
  const complex = file('complex.npy', patch("'<f4'", "'<c8'"));
  assertOneClearError(await run([bundle, '--input', `input=${complex}`]), 'BAD_INPUT', ['complex.npy: dtype "<c8" is not supported']);
  const fortran = file('fortran.npy', patch("'fortran_order': False", "'fortran_order': True"));
  assertOneClearError(await run([bundle, '--input', `input=${fortran}`]), 'BAD_INPUT', [
    'fortran.npy: the array is in Fortran (column-major) order',
  ]);
  const bigEndian = file('be.npy', patch("'<f4'", "'>f4'"));
  assertOneClearError(await run([bundle, '--input', `input=${bigEndian}`]), 'BAD_INPUT', ['be.npy: big-endian data']);
  assertOneClearError(await run([bundle, '--input', `input=${join(root, 'absent.npy')}`]), 'FILE_NOT_FOUND', ['absent.npy']);
  assertOneClearError(await run([bundle, '--input', `input=${model}`]), 'BAD_INPUT', [
    'tiny.onnx: inputs must be .npy or ONNX TensorProto .pb',
  ]);
  assertOneClearError(await run([bundle]), 'BAD_ARGUMENT', ['needs --input NAME=FILE']);
  assertOneClearError(await run([bundle, '--input', `input=${npyIn}`, '--input', `input=${pbIn}`]), 'BAD_ARGUMENT', [
    '"input" is given twice',
  ]);
  const cwd = join(root, 'refused');
  mkdirSync(cwd);
  const r = await execa(process.execPath, [BIN, 'run', bundle, '--input', wrongDtype], { cwd, env, reject: false });
  assertOneClearError(r, 'BAD_INPUT', ['is int32']);
  assert.ok(!existsSync(join(cwd, 'outputs')), 'no output directory when the inputs are refused');
});
