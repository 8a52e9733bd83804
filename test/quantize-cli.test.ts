/**
 * `veltair quantize` as a command: calibration inputs from a directory of .npy files, --json on
 * stdout only, and one clear typed error (exit 1, nothing written) for each bad request.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeNpy } from '../src/runtime/io-npy.js';
import { seededFloats } from '../src/random.js';
import { ortInstalled } from '../src/ort/available.js';
import { decodeModel } from '../src/onnx/decode.js';
import { assertOneClearError, veltair } from './compile-fixture.js';
import { smallCnn } from './quantize-fixture.js';
import { activationQuant, biasLimit, rangeCollector, weightQuant, weightScaleFloors } from '../src/quantize/ranges.js';

const dir = mkdtempSync(join(tmpdir(), 'veltair-quantize-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const model = join(dir, 'small.onnx');
writeFileSync(model, smallCnn());
const skip = ortInstalled() ? false : 'onnxruntime-node is not installed';

test('--calibrate DIR: every .npy is one sample; the QDQ model is written, --json says what was quantized', { skip }, async () => {
  const cal = join(dir, 'cal');
  mkdirSync(cal);
  for (let i = 0; i < 3; i++)
    writeFileSync(join(cal, `x${i}.npy`), encodeNpy({ dtype: 'float32', shape: [1, 3, 16, 16], data: seededFloats(768, 40 + i, -1, 1) }));
  const out = join(dir, 'small.int8.onnx');
  const r = await veltair(['quantize', model, '-o', out, '--calibrate', cal, '--method', 'percentile', '--json']);
  assert.equal(r.exitCode, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.deepEqual([summary.samples, summary.weights, summary.biases, summary.method], [3, 3, 3, 'percentile']);
  const ops = decodeModel(new Uint8Array(await import('node:fs').then((fs) => fs.readFileSync(out))), out).graph.nodes.map((n) => n.opType);
  assert.ok(ops.includes('QuantizeLinear') && ops.includes('DequantizeLinear'));
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.startsWith('small.int8')),
    ['small.int8.onnx'],
    'no temporary file left beside the output',
  );
});

test('bad requests: one typed error each, nothing written', async () => {
  const out = join(dir, 'never.onnx');
  assertOneClearError(await veltair(['quantize', model, '-o', out]), 'BAD_ARGUMENT', ['--calibrate']);
  assertOneClearError(await veltair(['quantize', model, '-o', out, '--generated', '0']), 'BAD_ARGUMENT', ['--generated']);
  assertOneClearError(await veltair(['quantize', model, '-o', out, '--generated', '2', '--method', 'kl']), 'BAD_ARGUMENT', ['--method']);
  assertOneClearError(await veltair(['quantize', model, '-o', out, '--calibrate', join(dir, 'nope')]), 'FILE_NOT_FOUND', ['nope']);
  assertOneClearError(await veltair(['quantize', model, '-o', model, '--generated', '2']), 'OUTPUT_EXISTS');
  assert.equal(existsSync(out), false);
});

test('an already quantized model is refused by the node that shows it', { skip }, async () => {
  const q = join(dir, 'q.onnx');
  assert.equal((await veltair(['quantize', model, '-o', q, '--generated', '2'])).exitCode, 0);
  assertOneClearError(await veltair(['quantize', q, '-o', join(dir, 'qq.onnx'), '--generated', '2']), 'BAD_INPUT', ['already quantized']);
});

test('ranges: min-max keeps every value, percentile drops outliers; u8 params include zero; weights symmetric per channel', () => {
  const values = Float32Array.from({ length: 10001 }, (_, i) => (i === 0 ? 1000 : (i % 100) / 100));
  const mm = rangeCollector('minmax');
  const pc = rangeCollector('percentile', 99.9);
  mm.add('t', values);
  pc.add('t', values);
  assert.deepEqual(mm.range('t'), [0, 1000]);
  assert.ok(pc.range('t')[1] < 1, 'the one outlier is clipped');
  assert.deepEqual(activationQuant(0.5, 2.55), { scale: Math.fround(0.01), zero: 0 });
  assert.equal(activationQuant(-1.02, 1.53).zero, 102);
  const { values: q, scales } = weightQuant(Float32Array.of(1, -0.25, 0.01, 0.04), [2, 2], 0);
  assert.deepEqual(Array.from(q), [127, -32, 32, 127]);
  assert.deepEqual(Array.from(scales), [Math.fround(1 / 127), Math.fround(0.04 / 127)]);
});

test('a bias that would pass int32 next to a near-constant activation widens its channel weight scale instead', () => {
  // x_scale 1e-14 (a feature that barely varies), bias 0.5: at the weights' own scale the bias would be ~1e15.
  const k = 2;
  const [xScale, bias] = [1e-14, Float32Array.of(0.5, 0)];
  const floors = weightScaleFloors(bias, xScale, k);
  assert.equal(floors[1], 0, 'a zero bias needs no floor');
  const { values, scales } = weightQuant(Float32Array.of(1, -0.25, 0.01, 0.04), [2, k], 0, floors);
  assert.ok(scales[0]! > 1 / 127, 'channel 0 widened');
  assert.equal(scales[1], Math.fround(0.04 / 127), 'channel 1 untouched');
  assert.deepEqual(Array.from(values.slice(2)), [32, 127]);
  const q = Math.round(bias[0]! / Math.fround(xScale * scales[0]!));
  assert.ok(q <= biasLimit(k) && q > biasLimit(k) * 0.99, `bias ${q} fits just inside ${biasLimit(k)}`);
});
