/**
 * `veltair bench-layers` as a user runs it: the real binary on a tiny conv + maxpool + Gemm model,
 * the --json contract on stdout (and only there), the figures consistent with each other, and a
 * bad --layers choice as one clear error line. Speeds are never asserted: the machine is shared.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';
import { encodeModel } from '../src/onnx/encode.js';
import { seededFloats } from '../src/ort/layer.js';
import type { Tensor } from '../src/onnx/model.js';

const BIN = resolve('bin/veltair');
const dir = mkdtempSync(join(tmpdir(), 'veltair-bench-layers-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const tensor = (dims: number[], seed: number): Tensor => ({
  dtype: 'float32',
  dims,
  data: seededFloats(
    dims.reduce((a, b) => a * b, 1),
    seed,
  ),
});

/** x[1,16,8,8] → Conv 16→32 3x3 pad 1 → Relu → MaxPool 2x2 → Flatten → Gemm 512→16 (+bias). */
function tinyModel(): string {
  const path = join(dir, 'tiny.onnx');
  writeFileSync(
    path,
    encodeModel({
      opset: 13,
      inputs: [{ name: 'x', dtype: 'float32', shape: [1, 16, 8, 8] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [1, 16] }],
      initializers: [
        ['w', tensor([32, 16, 3, 3], 1)],
        ['b', tensor([32], 2)],
        ['fw', tensor([512, 16], 3)],
        ['fb', tensor([16], 4)],
      ],
      nodes: [
        { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
        { op: 'Relu', inputs: ['c'], outputs: ['r'] },
        { op: 'MaxPool', inputs: ['r'], outputs: ['p'], attrs: { kernel_shape: [2, 2], strides: [2, 2] } },
        { op: 'Flatten', inputs: ['p'], outputs: ['f'] },
        { op: 'Gemm', inputs: ['f', 'fw', 'fb'], outputs: ['y'] },
      ],
    }),
  );
  return path;
}

const model = tinyModel();

async function veltair(...args: string[]) {
  return execa(process.execPath, [BIN, ...args], {
    reject: false,
    stdin: 'ignore',
    env: { VELTAIR_CACHE_DIR: join(dir, 'cache') },
  });
}

async function inspectLayers(): Promise<{ index: number; op: string; tunable: boolean; workload: string | null; macs: number }[]> {
  const r = await veltair('inspect', model, '--json');
  assert.equal(r.exitCode, 0, r.stderr);
  return JSON.parse(r.stdout).layers;
}

test('bench-layers --json: exactly the documented report, figures consistent with each other', { timeout: 120_000 }, async () => {
  const layers = await inspectLayers();
  const tunable = layers.filter((l) => l.tunable);
  assert.deepEqual(
    tunable.map((l) => l.op),
    ['conv2d', 'dense'],
  );

  const r = await veltair('bench-layers', model, '--trials', '2', '--rounds', '2', '--json');
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.stderr, '', 'no progress or notes on stderr when it is not a TTY');
  const report = JSON.parse(r.stdout); // throws if anything but the JSON is on stdout
  for (const k of ['peakGflops', 'threads', 'layers', 'summary']) assert.ok(k in report, `report field ${k}`);
  assert.equal(report.threads, 1);
  assert.deepEqual(report.cores, [0]);
  assert.ok(report.peakGflops > 0);
  assert.equal(report.layers.length, 2, 'one row per unique tunable workload');

  for (const [i, l] of report.layers.entries()) {
    for (const k of ['index', 'workload', 'op', 'macs', 'veltairMs', 'ortMs', 'ratio', 'gflops', 'peakPercent', 'candidates', 'failed']) {
      assert.ok(k in l, `layer field ${k}`);
    }
    const inspected = tunable[i]!;
    assert.equal(l.index, inspected.index);
    assert.equal(l.workload, inspected.workload);
    assert.equal(l.op, inspected.op);
    assert.equal(l.macs, inspected.macs);
    assert.equal(l.candidates, 2);
    assert.equal(l.status, 'ok', JSON.stringify(l.failureReasons));
    assert.ok(l.failed >= 0 && l.failed < l.candidates);
    assert.ok(l.veltairMs > 0 && l.ortMs > 0);
    assert.ok(Math.abs(l.ratio - l.veltairMs / l.ortMs) < 1e-9 * l.ratio, 'ratio = veltairMs / ortMs');
    assert.ok(Math.abs(l.gflops - (2 * l.macs) / (l.veltairMs * 1e6)) < 1e-9 * l.gflops, 'gflops = 2·MACs / time');
    assert.ok(Math.abs(l.peakPercent - (100 * l.gflops) / report.peakGflops) < 1e-9 * l.peakPercent, 'peakPercent = gflops / peak');
    assert.equal(l.rounds.veltairMs.length, 2);
    assert.equal(l.rounds.ortMs.length, 2);
    assert.equal(l.pairedRatio.ratios.length, 2);
  }
  const ratios: number[] = report.layers.map((l: { ratio: number }) => l.ratio);
  const geomean = Math.exp(ratios.reduce((s, x) => s + Math.log(x), 0) / ratios.length);
  assert.ok(Math.abs(report.summary.geomeanRatio - geomean) < 1e-9 * geomean);
  assert.equal(report.summary.layersAtOrBelowOrt, ratios.filter((x) => x <= 1).length);
  assert.equal(report.summary.layersFailed, 0);
});

test('bench-layers --layers with a non-tunable index: one clear error naming it and the valid ones', async () => {
  const layers = await inspectLayers();
  const pool = layers.find((l) => l.op === 'maxpool')!;
  assert.ok(pool, 'the tiny model has a maxpool layer');
  const tunable = layers.filter((l) => l.tunable).map((l) => l.index);
  const r = await veltair('bench-layers', model, '--layers', `${tunable[0]},${pool.index}`, '--json');
  assert.equal(r.exitCode, 1, r.stderr);
  assert.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 2, r.stderr);
  assert.match(lines[0]!, new RegExp(`^error\\[BAD_ARGUMENT\\]: --layers: layer ${pool.index} is a maxpool layer`));
  assert.match(lines[1]!, new RegExp(`hint: tunable layer indices: ${tunable.join(',')} `));
});

test('bench-layers --layers out of range or malformed: exit 1, nothing on stdout', async () => {
  const out = await veltair('bench-layers', model, '--layers', '99');
  assert.equal(out.exitCode, 1);
  assert.equal(out.stdout, '');
  assert.match(out.stderr, /^error\[BAD_ARGUMENT\]: --layers: layer 99 is out of range/);
  const bad = await veltair('bench-layers', model, '--layers', 'two');
  assert.equal(bad.exitCode, 1);
  assert.match(bad.stderr, /^error\[BAD_ARGUMENT\]: --layers "two"/);
});
