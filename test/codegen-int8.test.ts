/**
 * Generated INT8 kernels equal the integer reference (quantize/reference.ts) exactly, on every
 * path the toolchain describes: AVX-512 VNNI, AVX-VNNI, AVX2 (vpmaddubsw with the activation split) and
 * plain C. Every path is compiled on any host; a path this CPU cannot run (toolchain/isa.ts) is
 * skipped with the flags it lacks, and the plain-C path always runs. Cases: 3×3 / 1×1 / strided /
 * dilated / padded convs, grouped, depthwise (its own kernel) and channel-multiplier convs, dense and batched matmul, per-channel scales,
 * ReLU clamps, u8/s8/s32 outputs, channel counts that are not multiples of any vector width,
 * rounding ties, and the vpmaddubsw worst cases (all 255 × all −128, all 255 × all 127).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Layer } from '../src/ir/layer.js';
import { runQuantizedLayer } from '../src/quantize/reference.js';
import { generateInt8Kernel } from '../src/codegen/int8-kernel.js';
import { packInt8 } from '../src/codegen/int8-pack.js';
import { int8ProblemOf } from '../src/space/int8-problem.js';
import { int8BalancedSchedule, int8Space, repairInt8, type Int8Schedule } from '../src/space/int8-knobs.js';
import { INT8_PATHS, int8PathsAt, missingForInt8Path, type Int8Path } from '../src/toolchain/isa.js';
import { isVeltairError } from '../src/errors.js';
import { runCompiler } from '../src/toolchain/compiler.js';
import { nums } from '../src/onnx/eval.js';
import { seededRng } from '../src/random.js';
import { buildDriver, fromNhwc, quantLayer, runDriver, toNhwc, type DriverCase, type QLayerSpec } from './int8-fixture.js';

const CASES: QLayerSpec[] = [
  { input: [1, 20, 9, 11], cout: 37, k: [3, 3], pads: [1, 1, 1, 1], relu: true },
  { input: [2, 16, 15, 15], cout: 32, k: [3, 3], s: [2, 2], pads: [1, 1, 1, 1], out: 'int8' },
  { input: [1, 24, 7, 5], cout: 40, k: [1, 1], perChannel: false },
  { input: [1, 17, 9, 9], cout: 33, k: [1, 1], s: [2, 2], relu: true },
  { input: [1, 8, 13, 12], cout: 19, k: [5, 5], pads: [4, 4, 4, 4], d: [2, 2], bias: false },
  { input: [1, 5, 10, 9], cout: 7, k: [3, 1], s: [2, 1], pads: [1, 0, 0, 2] },
  { input: [1, 3, 19, 19], cout: 16, k: [7, 7], s: [2, 2], pads: [3, 3, 3, 3], relu: true },
  { input: [1, 32, 8, 7], cout: 64, k: [3, 3], pads: [1, 1, 1, 1], groups: 2 },
  { input: [1, 12, 6, 6], cout: 9, k: [3, 3], pads: [1, 1, 1, 1], groups: 3, out: 'int8', relu: true },
  { input: [1, 40, 10, 9], cout: 40, k: [3, 3], pads: [1, 1, 1, 1], groups: 40, relu: true },
  { input: [1, 16, 11, 11], cout: 16, k: [3, 3], s: [2, 2], pads: [0, 1, 1, 0], groups: 16 },
  // depthwise read in place (no padding): a partial last vector must not read past the input
  { input: [2, 21, 7, 6], cout: 21, k: [3, 3], groups: 21, out: 'int8' },
  { input: [1, 35, 9, 9], cout: 35, k: [3, 3], pads: [2, 2, 2, 2], d: [2, 2], groups: 35, relu: true },
  { input: [1, 8, 6, 6], cout: 16, k: [3, 3], pads: [1, 1, 1, 1], groups: 8 },
  // depthwise over several 64-channel blocks (the last partial), 25 taps (a partial group of four), int32 out
  { input: [1, 150, 7, 8], cout: 150, k: [5, 5], pads: [2, 2, 2, 2], groups: 150, relu: true },
  { input: [1, 70, 6, 6], cout: 70, k: [3, 3], pads: [1, 1, 1, 1], groups: 70, out: 'int32' },
  { input: [1, 24, 5, 6], cout: 29, k: [3, 3], pads: [1, 1, 1, 1], out: 'int32' },
  { input: [7, 100], cout: 10, matmul: true },
  { input: [2, 3, 33], cout: 45, matmul: true, relu: true, out: 'int8' },
  { input: [1, 64], cout: 1000, matmul: true, bias: false },
  // M = fl32(0.5 · 0.25 / 0.25) = 0.5 exactly: every odd accumulator is a rounding tie
  {
    input: [1, 6, 5, 5],
    cout: 11,
    k: [3, 3],
    pads: [1, 1, 1, 1],
    scales: [0.5, 0.25, 0.25],
    xFill: 'small',
    wFill: 'small',
    yZero: 128,
    bias: false,
  },
  { input: [9, 13], cout: 21, matmul: true, scales: [0.5, 0.25, 0.25], xFill: 'small', wFill: 'small', yZero: 0, out: 'int8', bias: false },
];

/** vpmaddubsw's worst cases: every pair of products 255·(−128) or 255·127, as raw int32 sums and requantized. */
const WORST: QLayerSpec[] = [
  { input: [1, 64, 6, 6], cout: 19, k: [3, 3], pads: [1, 1, 1, 1], xZero: 0, xFill: 255, wFill: -128, out: 'int32' },
  { input: [1, 64, 6, 6], cout: 19, k: [3, 3], pads: [1, 1, 1, 1], xZero: 0, xFill: 255, wFill: 127, out: 'int32' },
  { input: [1, 64, 6, 6], cout: 19, k: [3, 3], pads: [1, 1, 1, 1], xZero: 255, xFill: 255, wFill: -128, out: 'int32' },
  { input: [1, 19, 5, 5], cout: 19, k: [5, 5], pads: [2, 2, 2, 2], groups: 19, xZero: 0, xFill: 255, wFill: -128, out: 'int32' },
  { input: [5, 300], cout: 17, matmul: true, xZero: 3, xFill: 255, wFill: -128, out: 'int32' },
  { input: [5, 300], cout: 17, matmul: true, xZero: 250, xFill: 255, wFill: 127, bias: false },
];

function schedulesFor(specIndex: number, l: Layer, path: Int8Path): Int8Schedule[] {
  const p = int8ProblemOf(l);
  const space = int8Space(p, path);
  const rng = seededRng(1000 + specIndex);
  const big = repairInt8(p, { path, regOc: 4, regCols: 14, tileOc: 1 << 20, tileCols: 1 << 20 });
  // the tuner's first pick, and oc tiles outermost over several oc groups
  const ocOuter = repairInt8(p, { path, regOc: 1, regCols: 3, tileOc: 1, tileCols: 2, ocOuter: true });
  return [space[0]!, big, rng.pick(space), int8BalancedSchedule(p, path), ocOuter];
}

async function checkPath(path: Int8Path, specs: readonly QLayerSpec[], seed: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), `veltair-int8-${path}-`));
  try {
    const cases: (DriverCase & { layer: Layer; expected: number[]; label: string; threads: number })[] = [];
    specs.forEach((spec, si) => {
      const { layer, x } = quantLayer(spec, seed + si);
      const expected = Array.from(nums(runQuantizedLayer(layer, [x])));
      const problem = int8ProblemOf(layer);
      schedulesFor(si, layer, path).forEach((s, k) =>
        cases.push({
          layer,
          problem,
          kernel: generateInt8Kernel(problem, s),
          packed: packInt8(layer, problem, s),
          input: toNhwc(layer, x),
          outputs: expected.length,
          expected,
          label: `case ${si} ${JSON.stringify(spec)} schedule ${JSON.stringify(s)}`,
          threads: 1 + (k % 2),
        }),
      );
    });
    const exe = await buildDriver(dir, cases);
    const missing = missingForInt8Path(path);
    if (!int8PathsAt('native').includes(path)) {
      assert.ok(missing.length > 0);
      return;
    }
    for (const [i, c] of cases.entries()) {
      const got = await runDriver(exe, dir, i, c, c.threads);
      const ordered = fromNhwc(c.layer, got);
      const bad = ordered.findIndex((v, j) => v !== c.expected[j]);
      assert.equal(bad, -1, `${path} ${c.label}: output ${bad} is ${ordered[bad]}, the reference ${c.expected[bad]}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

for (const path of INT8_PATHS) {
  const missing = missingForInt8Path(path);
  const skip = missing.length > 0 ? `this CPU lacks ${missing.join(', ')} (compiled, not run)` : false;
  test(
    `${path} INT8 kernels equal the integer reference exactly on convs, grouped/depthwise convs and matmuls`,
    { timeout: 600_000 },
    async (t) => {
      if (skip) t.skip(skip);
      await checkPath(path, CASES, 17);
    },
  );
  test(`${path}: the u8 × s8 worst cases (255 × −128, 255 × 127) are exact`, { timeout: 300_000 }, async (t) => {
    if (skip) t.skip(skip);
    await checkPath(path, WORST, 99);
  });
}

test('the plain-C path runs on every host', () => {
  assert.ok(int8PathsAt('native').includes('scalar'));
  assert.ok(int8PathsAt('x86-64-v3', new Set()).includes('avx2'), 'a v3 build may use the AVX2 path');
  assert.ok(!int8PathsAt('x86-64-v4', new Set()).includes('avx512vnni'), 'x86-64-v4 does not guarantee VNNI');
});

test('weights the INT8 kernels cannot take are refused by layer name', () => {
  const refused = (spec: QLayerSpec, what: RegExp) =>
    assert.throws(
      () => int8ProblemOf(quantLayer(spec, 1).layer),
      (e) =>
        isVeltairError(e) && e.code === 'UNSUPPORTED_QUANTIZATION' && /layer "q" \(qconv2d 0\)/.test(e.message) && what.test(e.message),
    );
  refused({ input: [1, 4, 5, 5], cout: 4, k: [3, 3], weightDType: 'uint8' }, /weight is uint8/);
  refused({ input: [1, 4, 5, 5], cout: 4, k: [3, 3], weightZero: 3 }, /weight zero point is 3 at output channel 0/);
  assert.throws(
    () => int8ProblemOf(quantLayer({ input: [1, 66000], cout: 2, matmul: true }, 1).layer),
    (e) => isVeltairError(e) && e.code === 'UNSUPPORTED_QUANTIZATION' && /66000-term sums can overflow/.test(e.message),
  );
});

test('a depthwise conv gets the depthwise problem, a channel-multiplier conv the grouped one', () => {
  assert.equal(int8ProblemOf(quantLayer({ input: [1, 21, 7, 6], cout: 21, k: [3, 3], groups: 21 }, 1).layer).depthwise, true);
  assert.equal(int8ProblemOf(quantLayer({ input: [1, 8, 6, 6], cout: 16, k: [3, 3], groups: 8 }, 1).layer).depthwise, false);
});

test('each path emits its instruction: vpdpbusd on zmm / ymm, vpmaddubsw + vpmaddwd on AVX2, no vectors in plain C', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'veltair-int8-asm-'));
  try {
    const asm = async (path: Int8Path, spec: QLayerSpec): Promise<string> => {
      const p = int8ProblemOf(quantLayer(spec, 3).layer);
      const k = generateInt8Kernel(p, repairInt8(p, { path, regOc: 2, regCols: 4, tileOc: 1, tileCols: 1 }));
      await writeFile(join(dir, `${path}.c`), k.source);
      await runCompiler(['-O2', '-march=x86-64', '-fopenmp', '-std=gnu11', '-S', '-o', join(dir, `${path}.s`), join(dir, `${path}.c`)]);
      return readFile(join(dir, `${path}.s`), 'utf8');
    };
    const conv: QLayerSpec = { input: [1, 32, 8, 8], cout: 40, k: [3, 3], pads: [1, 1, 1, 1] };
    assert.match(await asm('avx512vnni', conv), /vpdpbusd\s+%zmm/);
    assert.match(await asm('avxvnni', conv), /vpdpbusd\s+%ymm/);
    const avx2 = await asm('avx2', conv);
    assert.match(avx2, /vpmaddubsw/);
    assert.match(avx2, /vpmaddwd/);
    assert.doesNotMatch(avx2, /vpdpbusd/);
    assert.doesNotMatch(await asm('scalar', conv), /%[yz]mm/);
    assert.match(await asm('avx2', { input: [1, 24, 8, 8], cout: 24, k: [3, 3], groups: 24 }), /vpmulld/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
