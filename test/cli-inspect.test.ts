/**
 * `veltair inspect` and `veltair zoo` as a user runs them: the real binary in a child process,
 * JSON contract on stdout, one clear error line and exit 1 on bad input, and the zoo models'
 * conv/dense counts and MACs as veltair's own front end + IR report them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';
import { encodeModel } from '../src/onnx/encode.js';
import { f32 } from './onnx-test-models.js';

const BIN = resolve('bin/veltair');
const dir = mkdtempSync(join(tmpdir(), 'veltair-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function veltair(...args: string[]) {
  return execa(process.execPath, [BIN, ...args], { reject: false, stdin: 'ignore' });
}

/** Exit 1, exactly an `error[CODE]: …` line and a `hint:` line on stderr, no stack, nothing on stdout. */
function assertOneClearError(r: { exitCode?: number; stdout: string; stderr: string }, code: string, mentions: readonly string[]) {
  assert.equal(r.exitCode, 1, `exit code (stderr: ${r.stderr})`);
  assert.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 2, `two lines expected, got:\n${r.stderr}`);
  assert.match(lines[0]!, new RegExp(`^error\\[${code}\\]: `));
  assert.match(lines[1]!, /^ {2}hint: \S/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace without --verbose');
  for (const m of mentions) assert.ok(lines[0]!.includes(m), `message should name ${m}: ${lines[0]}`);
}

test('inspect --json prints exactly the documented report on stdout', async () => {
  const model = join(dir, 'resnet50.onnx');
  const built = await veltair('zoo', 'build', 'resnet50', '-o', model);
  assert.equal(built.exitCode, 0, built.stderr);
  const r = await veltair('inspect', model, '--json');
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.stderr, '');
  const report = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(report), ['model', 'layers', 'totals']);
  assert.deepEqual(Object.keys(report.model), ['path', 'sha256', 'opset', 'inputs', 'outputs']);
  assert.match(report.model.sha256, /^[0-9a-f]{64}$/);
  assert.equal(report.model.opset, 13);
  assert.deepEqual(report.model.inputs, [{ name: 'input', dtype: 'float32', shape: [1, 3, 224, 224] }]);
  const convs = report.layers.filter((l: { op: string }) => l.op === 'conv2d');
  assert.equal(convs.length, 53);
  const first = convs[0];
  for (const k of ['index', 'name', 'op', 'inputShapes', 'outputShape', 'groups', 'macs', 'workload', 'tunable', 'epilogue']) {
    assert.ok(k in first, `layer field ${k}`);
  }
  assert.deepEqual(first.outputShape, [1, 64, 112, 112]);
  assert.equal(first.macs, 64 * 112 * 112 * 3 * 7 * 7);
  assert.deepEqual(first.epilogue, ['bias', 'relu']);
  assert.match(first.workload, /^conv2d-[0-9a-f]{16}$/);
  assert.equal(report.totals.tunableLayers, 54);
  assert.ok(report.totals.uniqueWorkloads < report.totals.tunableLayers, 'identical layers share workloads');

  const table = await veltair('inspect', model);
  assert.equal(table.exitCode, 0);
  assert.match(table.stdout, /conv2d-[0-9a-f]{16}/);
  assert.match(table.stdout, /57 layers, 54 tunable, 28 unique workloads, 4\.091 GMACs/);
});

test('inspect on a missing file: one clear line, exit 1', async () => {
  assertOneClearError(await veltair('inspect', join(dir, 'nope.onnx')), 'FILE_NOT_FOUND', ['nope.onnx']);
});

test('inspect on bytes that are not ONNX: one clear line, exit 1', async () => {
  const junk = join(dir, 'junk.onnx');
  writeFileSync(junk, 'this is not a protobuf at all \u0000\u00ff\u0001');
  assertOneClearError(await veltair('inspect', junk), 'NOT_ONNX', ['junk.onnx']);
});

test('inspect lists every unsupported operator with its node in one message', async () => {
  const path = join(dir, 'unsupported.onnx');
  writeFileSync(
    path,
    encodeModel({
      inputs: [{ name: 'x', dtype: 'float32', shape: [1, 4] }],
      outputs: [{ name: 'z', dtype: 'float32', shape: [1, 4] }],
      initializers: [],
      nodes: [
        { op: 'Unique', inputs: ['x'], outputs: ['y'], name: 'unique_node' },
        { op: 'NonZero', inputs: ['y'], outputs: ['z'], name: 'nz_node' },
      ],
    }),
  );
  assertOneClearError(await veltair('inspect', path), 'UNSUPPORTED_OPS', ['Unique', 'unique_node', 'NonZero', 'nz_node']);
});

test('a symbolic batch defaults to 1; other symbolic dims need --input-shape', async () => {
  const path = join(dir, 'dynamic.onnx');
  writeFileSync(
    path,
    encodeModel({
      inputs: [{ name: 'image', dtype: 'float32', shape: ['batch', 3, 'height', 'width'] }],
      outputs: [{ name: 'y', dtype: 'float32' }],
      initializers: [['w', f32([8, 3, 3, 3])]],
      nodes: [{ op: 'Conv', inputs: ['image', 'w'], outputs: ['y'], attrs: { pads: [1, 1, 1, 1] } }],
    }),
  );
  assertOneClearError(await veltair('inspect', path), 'SYMBOLIC_DIM', ['image', 'height']);
  const pinned = await veltair('inspect', path, '--input-shape', 'image=2x3x32x48', '--json');
  assert.equal(pinned.exitCode, 0, pinned.stderr);
  assert.deepEqual(JSON.parse(pinned.stdout).layers[0].outputShape, [2, 8, 32, 48]);
  const badFlag = await veltair('inspect', path, '--input-shape', 'image=2xfoo');
  assert.equal(badFlag.exitCode, 1);
  assert.match(badFlag.stderr, /^error\[BAD_ARGUMENT\]/);
});

test('zoo build refuses to overwrite without --force and rejects unknown models', async () => {
  const path = join(dir, 'exists.onnx');
  writeFileSync(path, 'x');
  assertOneClearError(await veltair('zoo', 'build', 'tiny_yolov2', '-o', path), 'OUTPUT_EXISTS', ['exists.onnx']);
  assertOneClearError(await veltair('zoo', 'build', 'alexnet', '-o', join(dir, 'a.onnx')), 'BAD_ARGUMENT', ['alexnet']);
  const list = await veltair('zoo', 'list', '--json');
  assert.deepEqual(
    JSON.parse(list.stdout).models.map((m: { name: string }) => m.name),
    ['resnet50', 'mobilenet_v2', 'googlenet', 'efficientnet_b0', 'tiny_yolov2', 'ssd_resnet34', 'ssd_mobilenet_v1', 'bert_large'],
  );
});

test('--help exits 0 and unknown options exit 1', async () => {
  const help = await veltair('inspect', '--help');
  assert.equal(help.exitCode, 0);
  assert.match(help.stdout, /--input-shape/);
  const bad = await veltair('inspect', '--no-such-flag');
  assert.equal(bad.exitCode, 1);
});
