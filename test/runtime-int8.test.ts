/**
 * The native executor runs a quantized model: QuantizeLinear into channels-last u8, INT8 kernel steps
 * (every version of each layer), quantized MaxPool / Add / GlobalAveragePool, DequantizeLinear out,
 * and its output equals the integer reference (src/quantize/run-graph.ts) bit for bit, at one and two
 * threads, with teams on and off. The kernels' own exactness per path is test/codegen-int8.test.ts's.
 * Also: a kernel built for another layer is refused at load, and the conversions handle a blocked
 * float layout, rounding ties, saturation and NaN as ONNX does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { runReferenceGraph } from '../src/quantize/run-graph.js';
import { KIND, OP } from '../src/runtime/ops.js';
import { dequantizeValue, quantizeValue, requantize, roundHalfEven } from '../src/onnx/quant-math.js';
import type { Tensor } from '../src/onnx/model.js';
import { denseBlockCnn, fireSiluCnn, smallCnn } from './quantize-fixture.js';
import { fixturePaths, nativeInt8Plan, quantizedGraph } from './int8-runtime-fixture.js';

test('a quantized small CNN runs natively and equals the integer reference exactly, on every version', { timeout: 300_000 }, async () => {
  const { graph, samples } = await quantizedGraph(smallCnn(), 8, 3);
  const dir = await mkdtemp(join(tmpdir(), 'veltair-rt-int8-'));
  try {
    const { plan, kernels } = await nativeInt8Plan(graph, dir, 2);
    const ops = plan.plan.steps.map((s) => s.op);
    for (const op of [OP.QUANTIZE, OP.QKERNEL, OP.QMAXPOOL, OP.QADD, OP.QGLOBAL_AVGPOOL, OP.DEQUANTIZE])
      assert.ok(ops.includes(op), `no step ${op}`);
    assert.ok(!ops.includes(OP.REORDER), 'integer values flow channels-last without reorders');
    const exe = await createExecutor(plan.plan, kernels);
    try {
      const qsteps = ops.flatMap((op, i) => (op === OP.QKERNEL ? [i] : []));
      const input = graph.inputs[0]!.name;
      const output = graph.outputs[0]!.name;
      for (const [si, sample] of samples.entries()) {
        const x = sample[input]!;
        const want = runReferenceGraph(
          graph,
          new Map<string, Tensor>([[input, { dtype: 'float32', dims: x.shape, data: x.data as Float32Array }]]),
        );
        const expected = Array.from(want.get(output)!.data as Float32Array);
        fixturePaths().forEach((path, v) => {
          for (const s of qsteps) exe.setVersion(s, v);
          runsEqualEverywhere(exe, x.data as Float32Array, expected, `sample ${si}, ${path} versions`);
        });
      }
    } finally {
      exe.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

/** The executor's output equals `expected` at 1 and 2 threads, with OpenMP teams on and off. */
function runsEqualEverywhere(exe: Awaited<ReturnType<typeof createExecutor>>, x: Float32Array, expected: number[], label: string): void {
  for (const [threads, teams] of [
    [1, true],
    [2, true],
    [2, false],
  ] as const) {
    exe.setAllThreads(threads);
    exe.setTeams(teams);
    const got = Array.from(exe.run([x])[0] as Float32Array);
    assert.deepEqual(got, expected, `${label}, ${threads} threads, teams ${teams}`);
  }
}

for (const [what, model, wanted] of [
  ['a quantized Concat, a folded SiLU and a channel gate', fireSiluCnn, [OP.QCONCAT, OP.QLUT, OP.QGATE]],
  ['a quantized average pool and a Concat with a folded batch norm and Relu', denseBlockCnn, [OP.QAVGPOOL, OP.QCONCAT]],
] as const)
  test(`${what} run natively and equal the integer reference exactly`, { timeout: 300_000 }, async () => {
    const { graph, samples } = await quantizedGraph(model(), 8, 3);
    const dir = await mkdtemp(join(tmpdir(), 'veltair-rt-int8-fire-'));
    try {
      const { plan, kernels } = await nativeInt8Plan(graph, dir, 2);
      const ops = plan.plan.steps.map((s) => s.op);
      for (const op of wanted) assert.ok(ops.includes(op), `no step ${op}`);
      assert.equal(ops.filter((op) => op === OP.DEQUANTIZE).length, 1, 'only the model output leaves integers');
      const exe = await createExecutor(plan.plan, kernels);
      try {
        const [input, output] = [graph.inputs[0]!.name, graph.outputs[0]!.name];
        for (const [si, sample] of samples.entries()) {
          const x = sample[input]!;
          const feed = new Map<string, Tensor>([[input, { dtype: 'float32', dims: x.shape, data: x.data as Float32Array }]]);
          const expected = Array.from(runReferenceGraph(graph, feed).get(output)!.data as Float32Array);
          runsEqualEverywhere(exe, x.data as Float32Array, expected, `sample ${si}`);
        }
      } finally {
        exe.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

test('an INT8 kernel built for another layer is refused when the plan is loaded', { timeout: 300_000 }, async () => {
  const { graph } = await quantizedGraph(smallCnn(), 8, 0);
  const dir = await mkdtemp(join(tmpdir(), 'veltair-rt-int8-bad-'));
  try {
    const { plan, kernels } = await nativeInt8Plan(graph, dir, 1);
    const [a, b] = plan.plan.steps.flatMap((s, i) => (s.op === OP.QKERNEL ? [i] : []));
    const steps = [...plan.plan.steps];
    // the second conv's versions (and their constant offsets) on the first conv's step
    steps[a!] = { ...steps[a!]!, versions: steps[b!]!.versions!, ints: steps[b!]!.ints };
    await assert.rejects(
      createExecutor({ ...plan.plan, steps }, kernels),
      /INT8 kernel vt_q[0-9a-f]{16} \(version 0\): its input size differs/,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// 3 images of 100 pixels: two threads split them mid-image; V = 1 is plain NCHW (a model's input).
for (const [kind, v] of [
  ['uint8', 16],
  ['int8', 16],
  ['uint8', 1],
  ['int8', 1],
] as const)
  test(`QUANTIZE and DEQUANTIZE convert float ${v === 1 ? 'NCHW' : `NCHW${v}c`} ⇄ channels-last ${kind} like QuantizeLinear / DequantizeLinear`, async () => {
    const [n, c, hw] = [3, 20, 100];
    const cb = Math.ceil(c / v);
    const floats = n * cb * v * hw;
    const ints = n * c * hw;
    const [scale, zero] = [0.5, 3];
    const at = (b: number, ch: number, p: number) => ((b * cb + Math.floor(ch / v)) * hw + p) * v + (ch % v);
    // ties (k + 0.25 → x / scale = 2k + 0.5), values past both ends of the range, and a NaN
    const x = Float32Array.from({ length: floats }, (_, i) => (i % 7 === 0 ? (i % 2 ? 1e9 : -1e9) : (i % 41) - 20 + 0.25));
    x[at(1, 5, 2)] = NaN;
    const qOff = floats * 4,
      yOff = qOff + Math.ceil(ints / 64) * 64;
    const conv = [n, c, hw, v, 1, KIND[kind]!];
    const exe = await createExecutor(
      {
        arenaBytes: yOff + floats * 4,
        inputs: [{ name: 'x', dtype: 'float32', shape: [floats], offset: 0, bytes: floats * 4 }],
        outputs: [
          { name: 'q', dtype: kind, shape: [ints], offset: qOff, bytes: ints },
          { name: 'y', dtype: 'float32', shape: [floats], offset: yOff, bytes: floats * 4 },
        ],
        steps: [
          {
            op: OP.QUANTIZE,
            threads: 2,
            inputs: [0],
            outputs: [qOff],
            inputBytes: [floats * 4],
            outputBytes: [ints],
            ints: conv,
            floats: [scale, zero],
            label: 'q',
          },
          {
            op: OP.DEQUANTIZE,
            threads: 2,
            inputs: [qOff],
            outputs: [yOff],
            inputBytes: [ints],
            outputBytes: [floats * 4],
            ints: conv,
            floats: [scale, zero],
            label: 'dq',
          },
        ],
        symbols: [],
        params: [],
      },
      null,
    );
    try {
      const [q, y] = exe.run([x]) as [Uint8Array | Int8Array, Float32Array];
      for (let b = 0; b < n; b++)
        for (let ch = 0; ch < cb * v; ch++)
          for (let p = 0; p < hw; p++) {
            const i = at(b, ch, p);
            if (ch >= c) {
              assert.equal(y[i], 0, 'padded lanes are zero');
              continue;
            }
            const want = quantizeValue(x[i]!, scale, zero, kind);
            assert.equal(q[(b * hw + p) * c + ch], want, `x = ${x[i]}`);
            assert.equal(y[i], dequantizeValue(want, scale, zero));
          }
    } finally {
      exe.close();
    }
  });

/** One native step over byte operands: inputs, then the output, each 64-byte aligned in the arena. */
async function runStep(op: number, ints: number[], floats: number[], inputs: Uint8Array[], outBytes: number): Promise<Uint8Array> {
  const align = (b: number) => Math.ceil(b / 64) * 64;
  const offsets = inputs.reduce<number[]>((o, x, i) => [...o, i === 0 ? 0 : o[i - 1]! + align(inputs[i - 1]!.length)], []);
  const yOff = offsets[offsets.length - 1]! + align(inputs[inputs.length - 1]!.length);
  const exe = await createExecutor(
    {
      arenaBytes: yOff + align(outBytes),
      inputs: inputs.map((x, i) => ({ name: `x${i}`, dtype: 'uint8', shape: [x.length], offset: offsets[i]!, bytes: x.length })),
      outputs: [{ name: 'y', dtype: 'uint8', shape: [outBytes], offset: yOff, bytes: outBytes }],
      steps: [
        {
          op: op as (typeof OP)[keyof typeof OP],
          threads: 2,
          inputs: offsets,
          outputs: [yOff],
          inputBytes: inputs.map((x) => x.length),
          outputBytes: [outBytes],
          ints,
          floats,
          label: 'step',
        },
      ],
      symbols: [],
      params: [],
    },
    null,
  );
  try {
    return Uint8Array.from(exe.run(inputs)[0] as Uint8Array);
  } finally {
    exe.close();
  }
}

const seededBytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 131 + seed * 71 + ((i * i) % 97)) & 255);

for (const kind of ['uint8', 'int8'] as const)
  test(`QGLOBAL_AVGPOOL sums ${kind} channels-last over bands of channels and images like the reference`, async () => {
    // 300 channels: three bands, the last partial; two images split across two threads.
    const [n, c, hw] = [2, 300, 50];
    const x = seededBytes(n * hw * c, 3);
    const [mult, xz, yz] = [Math.fround(0.37 / Math.fround(0.9 * hw)), kind === 'int8' ? -5 : 7, 11];
    const y = await runStep(OP.QGLOBAL_AVGPOOL, [n, c, hw, KIND[kind]!, KIND.uint8!], [mult, xz, yz], [x], n * c);
    const value = (b: number) => (kind === 'int8' ? (b << 24) >> 24 : b);
    for (let b = 0; b < n; b++)
      for (let ch = 0; ch < c; ch++) {
        let acc = 0;
        for (let p = 0; p < hw; p++) acc += value(x[(b * hw + p) * c + ch]!) - xz;
        assert.equal(y[b * c + ch], requantize(acc, mult, yz, 'uint8'), `image ${b} channel ${ch}`);
      }
  });

// every (a, b) byte pair, plus a partial tail; the first set's sums land exactly on ties, the third clamps like a folded Relu
for (const [as, az, bs, bz, ys, yz, lo] of [
  [0.5, 0, 0.5, 0, 1, 0, 0],
  // (246, 57) sums to 10.500001 output steps: a multiply by 1 / y_scale instead of the division reads the tie 10.5
  [0.004438204225152731, 255, 0.033758003264665604, 19, 0.11836764216423035, 128, 0],
  [0.02, 128, 0.02, 128, 0.03, 100, 100],
] as const)
  test(`QADD of u8 pairs at scales ${as}, ${bs} → ${ys} equals the reference's float sum and rounding, ties and tail included`, async () => {
    const n = 256 * 256 + 7;
    const a = Uint8Array.from({ length: n }, (_, i) => i & 255);
    const b = Uint8Array.from({ length: n }, (_, i) => (i >> 8) & 255);
    const y = await runStep(OP.QADD, [n, KIND.uint8!, KIND.uint8!, KIND.uint8!, lo, 255], [as, az, bs, bz, ys, yz], [a, b], n);
    for (let i = 0; i < n; i++) {
      const sum = Math.fround(dequantizeValue(a[i]!, Math.fround(as), az) + dequantizeValue(b[i]!, Math.fround(bs), bz));
      const want = Math.max(lo, quantizeValue(sum, Math.fround(ys), yz, 'uint8'));
      if (y[i] !== want) assert.fail(`element ${i} (a ${a[i]}, b ${b[i]}): ${y[i]}, the reference ${want}`);
    }
  });

test('QLUT maps every byte through its table, across vector steps and a partial tail', async () => {
  const table = Array.from({ length: 256 }, (_, v) => (v * 37 + 11) & 255);
  const x = seededBytes(1000, 5);
  const y = await runStep(OP.QLUT, [x.length, KIND.uint8!, KIND.uint8!, ...table], [], [x], x.length);
  assert.deepEqual(
    Array.from(y),
    Array.from(x, (v) => table[v]),
  );
});

test('QCONCAT joins rows of u8 and s8 inputs, requantizing each to the output scale, copying one that has it', async () => {
  const rows = 37;
  const parts = [
    { inner: 70, kind: 'uint8', scale: 0.02, zero: 9 },
    { inner: 5, kind: 'int8', scale: 0.05, zero: -3 },
    { inner: 130, kind: 'uint8', scale: 0.03, zero: 4 },
  ] as const;
  const [ys, yz] = [0.03, 4];
  const xs = parts.map((p, i) => seededBytes(rows * p.inner, 7 + i));
  const width = parts.reduce((a, p) => a + p.inner, 0);
  const y = await runStep(
    OP.QCONCAT,
    [rows, KIND.uint8!, parts.length, ...parts.map((p) => p.inner), ...parts.map((p) => KIND[p.kind]!), 0, 0, 255],
    [...parts.flatMap((p) => [p.scale, p.zero]), ys, yz],
    xs,
    rows * width,
  );
  for (let r = 0; r < rows; r++) {
    let at = r * width;
    parts.forEach((p, i) => {
      for (let e = 0; e < p.inner; e++) {
        const raw = xs[i]![r * p.inner + e]!;
        const v = p.kind === 'int8' ? (raw << 24) >> 24 : raw;
        const want = quantizeValue(dequantizeValue(v, Math.fround(p.scale), p.zero), Math.fround(ys), yz, 'uint8');
        assert.equal(y[at++], want, `row ${r}, input ${i}, element ${e}`);
      }
    });
  }
});

test('QCONCAT with a folded batch norm: (x − zero)·A + B per output channel in float32, then the clamp of a folded Relu', async () => {
  // 9 pixels of 5 + 20 channels; A[c], B[c] per output channel; lo = y_zero (Relu)
  const [rows, c1, c2] = [9, 5, 20];
  const width = c1 + c2;
  const a = Array.from({ length: width }, (_, c) => Math.fround(0.5 + 0.07 * c));
  const sh = Array.from({ length: width }, (_, c) => Math.fround(30.3 - 5.05 * c));
  const [s1, z1, s2, z2, ys, yz] = [0.02, 9, 0.05, 3, 0.04, 12];
  const xs = [seededBytes(rows * c1, 1), seededBytes(rows * c2, 2)];
  const y = await runStep(
    OP.QCONCAT,
    [rows, KIND.uint8!, 2, c1, c2, KIND.uint8!, KIND.uint8!, 1, yz, 255],
    [s1, z1, s2, z2, ys, yz, ...a, ...sh],
    xs,
    rows * width,
  );
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < width; c++) {
      const [x, z] = c < c1 ? [xs[0]![r * c1 + c]!, z1] : [xs[1]![r * c2 + c - c1]!, z2];
      const f = Math.fround(Math.fround((x - z) * a[c]!) + sh[c]!);
      assert.equal(y[r * width + c], Math.max(yz, Math.min(255, roundHalfEven(f) + yz)), `row ${r}, channel ${c}`);
    }
});

test('QAVGPOOL averages NHWC windows with and without the padding in the count', async () => {
  const [n, c, h, w, kh, kw, sh, sw, pt, pl] = [2, 70, 5, 6, 3, 3, 2, 2, 1, 1];
  const [oh, ow] = [3, 3];
  const [xs, xz, ys, yz] = [0.02, 5, 0.03, 7];
  const x = seededBytes(n * h * w * c, 4);
  for (const include of [0, 1]) {
    const y = await runStep(
      OP.QAVGPOOL,
      [n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl, include, KIND.uint8!, KIND.uint8!],
      [xs, xz, ys, yz],
      [x],
      n * oh * ow * c,
    );
    for (let b = 0; b < n; b++)
      for (let oy = 0; oy < oh; oy++)
        for (let ox = 0; ox < ow; ox++)
          for (let ch = 0; ch < c; ch++) {
            let [acc, inside] = [0, 0];
            for (let ty = 0; ty < kh; ty++)
              for (let tx = 0; tx < kw; tx++) {
                const [iy, ix] = [oy * sh - pt + ty, ox * sw - pl + tx];
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                acc += x[((b * h + iy) * w + ix) * c + ch]! - xz;
                inside++;
              }
            const mult = Math.fround(Math.fround(xs) / Math.fround(Math.fround(ys) * (include ? kh * kw : inside)));
            assert.equal(
              y[((b * oh + oy) * ow + ox) * c + ch],
              requantize(acc, mult, yz, 'uint8'),
              `include ${include}, ${b} ${oy} ${ox} ${ch}`,
            );
          }
  }
});

test('QMAXPOOL takes the byte max over padded NHWC windows and requantizes it like the reference', async () => {
  const [n, c, h, w, kh, kw, sh, sw, pt, pl] = [1, 300, 7, 6, 3, 3, 2, 2, 1, 1];
  const [oh, ow] = [4, 3];
  const [mult, xz, yz] = [Math.fround(0.02 / 0.03), 5, 7];
  const x = seededBytes(n * h * w * c, 6);
  const ints = [n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl, 1, 1, KIND.uint8!, KIND.uint8!];
  const y = await runStep(OP.QMAXPOOL, ints, [mult, xz, yz], [x], n * oh * ow * c);
  for (let oy = 0; oy < oh; oy++)
    for (let ox = 0; ox < ow; ox++)
      for (let ch = 0; ch < c; ch++) {
        let best = -1;
        for (let ty = 0; ty < kh; ty++)
          for (let tx = 0; tx < kw; tx++) {
            const [iy, ix] = [oy * sh - pt + ty, ox * sw - pl + tx];
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) best = Math.max(best, x[(iy * w + ix) * c + ch]!);
          }
        assert.equal(y[(oy * ow + ox) * c + ch], requantize(best - xz, mult, yz, 'uint8'), `${oy} ${ox} ${ch}`);
      }
});
