/**
 * End to end through real generated kernels: Conv(+bias+ReLU) → MaxPool → GlobalAveragePool →
 * Flatten → Gemm → Softmax, planned by the bundle planner (blocked NCHW16c conv chain, reorders to
 * natural and to rows16 for the dense kernel), translated, run natively and compared with ONNX
 * Runtime on the same ONNX model. Each tunable layer gets two versions (locality-greedy and
 * parallel-heavy schedules) and switching between them must not change the result. Also: the
 * executor's load-time refusals (missing library, missing symbol, a kernel built for another
 * workload) and run-time input errors are VeltairErrors with clear messages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { VeltairError } from '../src/errors.js';
import { translatePlan } from '../src/runtime/translate.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { OP } from '../src/runtime/ops.js';
import { assertClose, seeded } from './runtime-harness.js';
import { prepare as prepareKernels } from './runtime-kernels-fixture.js';
import type { Tensor } from '../src/onnx/model.js';
import type { ModelSpec } from '../src/onnx/encode.js';

const t = (dims: number[], seed: number, scale = 0.3): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    -scale,
    scale,
  ),
});

const MODEL: ModelSpec = {
  inputs: [{ name: 'x', dtype: 'float32' as const, shape: [2, 3, 15, 13] }],
  outputs: [{ name: 'y', dtype: 'float32' as const, shape: [2, 10] }],
  initializers: [
    ['w', t([20, 3, 3, 3], 1)],
    ['b', t([20], 2)],
    ['fw', t([10, 20], 3, 1)],
    ['fb', t([10], 4)],
  ] as [string, Tensor][],
  nodes: [
    { op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
    { op: 'Relu', inputs: ['c'], outputs: ['r'] },
    { op: 'MaxPool', inputs: ['r'], outputs: ['p'], attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } },
    { op: 'GlobalAveragePool', inputs: ['p'], outputs: ['g'] },
    { op: 'Flatten', inputs: ['g'], outputs: ['f'] },
    { op: 'Gemm', inputs: ['f', 'fw', 'fb'], outputs: ['d'], attrs: { transB: 1 } },
    { op: 'Softmax', inputs: ['d'], outputs: ['y'], attrs: { axis: 1 } },
  ],
};

test(
  'a pool after a conv whose threads split rows takes bands of rows at 2 threads, and still matches ONNX Runtime',
  { timeout: 240_000 },
  async () => {
    const p = await prepare();
    try {
      const withSplit = (split: 'rows' | 'channels') =>
        p.layers.map((l) => (l.op === 'conv2d' ? { ...l, versions: l.versions.map((v) => ({ ...v, split })) } : l));
      const rowsOuter = (threads: number, split: 'rows' | 'channels') => {
        const { plan } = translatePlan(p.plan, withSplit(split), { threads });
        const pools = plan.steps.filter((s) => s.op === OP.POOL);
        assert.equal(pools.length, 1);
        return { plan, flag: pools[0]!.ints.at(-1) };
      };
      assert.equal(rowsOuter(2, 'channels').flag, 0);
      assert.equal(rowsOuter(1, 'rows').flag, 0, 'one thread: no split to follow');
      // The version the conv runs decides (a bundle's first version may be one tuned for another thread count).
      const mixed = p.layers.map((l) =>
        l.op === 'conv2d'
          ? { ...l, versions: l.versions.map((v, i) => ({ ...v, split: i === 0 ? ('rows' as const) : ('channels' as const) })) }
          : l,
      );
      const second = (layer: number) => p.layers[layer]!.versions[1]?.id;
      const poolFlag = (o: Parameters<typeof translatePlan>[2]) =>
        translatePlan(p.plan, mixed, o)
          .plan.steps.find((s) => s.op === OP.POOL)!
          .ints.at(-1);
      assert.equal(poolFlag({ threads: 2 }), 1);
      assert.equal(poolFlag({ threads: 2, runningVersion: second }), 0);
      const { plan, flag } = rowsOuter(2, 'rows');
      assert.equal(flag, 1);
      const x = seeded(2 * 3 * 15 * 13, 12, -1, 1);
      const session = await ort.InferenceSession.create(p.bytes, { intraOpNumThreads: 1 });
      const ref = (await session.run({ x: new ort.Tensor('float32', x, [2, 3, 15, 13]) }))['y']!.data as Float32Array;
      const exec = await createExecutor(plan, p.so);
      try {
        assertClose(exec.run([x])[0] as Float32Array, ref, 'rows-split pool, 2 threads', 1e-3, 1e-5);
      } finally {
        exec.close();
      }
    } finally {
      await rm(p.cache, { recursive: true, force: true });
    }
  },
);

/** The same network with torchvision MNASNet's head: a ReduceMean over H, W without keepdims (a global pool to [N, C]) into the Gemm. */
const MEAN_HEAD: ModelSpec = {
  ...MODEL,
  nodes: [
    ...MODEL.nodes.slice(0, 3),
    { op: 'ReduceMean', inputs: ['p'], outputs: ['f'], attrs: { axes: [2, 3], keepdims: 0 } },
    ...MODEL.nodes.slice(5),
  ],
};

/** Two versions per layer (runtime-kernels-fixture.ts); this model's tunable layers are a conv and a dense. */
async function prepare(model: ModelSpec = MODEL) {
  const p = await prepareKernels(model);
  assert.deepEqual(
    p.graph.layers.filter((l) => l.tunable).map((l) => l.op),
    ['conv2d', 'dense'],
  );
  return p;
}

test(
  'a conv → pool → dense → softmax plan with generated kernels matches ONNX Runtime, in every version',
  { timeout: 240_000 },
  async () => {
    const p = await prepare();
    try {
      const steps = p.plan.steps.map((s) =>
        s.op === 'reorder' ? `reorder ${s.from}→${s.to}` : `${p.graph.layers[s.layer]!.op}@${s.layout}`,
      );
      assert.ok(
        steps.some((s) => s.startsWith('maxpool@nchw') && s !== 'maxpool@nchw'),
        `maxpool runs blocked: ${steps.join(', ')}`,
      );
      const { plan, stepOfPlan } = translatePlan(p.plan, p.layers, { threads: 2 });
      const exec = await createExecutor(plan, p.so);
      const x = seeded(2 * 3 * 15 * 13, 11, -1, 1);
      const session = await ort.InferenceSession.create(p.bytes, { intraOpNumThreads: 1 });
      const ref = (await session.run({ x: new ort.Tensor('float32', x, [2, 3, 15, 13]) }))['y']!.data as Float32Array;
      const kernelSteps = plan.steps.map((s, i) => (s.op === OP.KERNEL ? i : -1)).filter((i) => i >= 0);
      assert.equal(kernelSteps.length, 2);
      for (const combo of [
        [0, 0],
        [1, 1],
        [0, 1],
        [1, 0],
      ]) {
        kernelSteps.forEach((s, i) => exec.setVersion(s, combo[i]!));
        const y = exec.run([x])[0] as Float32Array;
        assertClose(y, ref, `versions ${combo}`, 1e-3, 1e-5);
        // conv → pool → dense share one team (executor.c run_team); one region per step gives the same bits
        exec.setTeams(false);
        assert.deepEqual(Array.from(exec.run([x])[0] as Float32Array), Array.from(y), `versions ${combo}: teams off`);
        exec.setTeams(true);
      }
      exec.setAllThreads(1);
      assertClose(exec.run([x])[0]!, ref, 'one thread', 1e-3, 1e-5);
      assert.ok(stepOfPlan.filter((s) => s >= 0).length === plan.steps.length);
      assert.throws(
        () => exec.setVersion(kernelSteps[0]!, 2),
        (e: unknown) => e instanceof VeltairError && /version 2 does not exist/.test(e.message),
      );
      assert.throws(
        () => exec.run([new Float32Array(5)]),
        (e: unknown) => e instanceof VeltairError && e.code === 'BAD_INPUT' && /expected float32 \[2, 3, 15, 13\]/.test(e.message),
      );
      exec.setProfiling(true);
      exec.run([x]);
      const ns = exec.stepTimesNs();
      assert.equal(ns.length, plan.steps.length);
      assert.ok(ns.every((v) => v > 0));
      exec.close();
      assert.throws(() => exec.run([x]), /closed/);

      // Load-time refusals.
      await assert.rejects(
        createExecutor(plan, join(p.cache, 'missing.so')),
        (e: unknown) => e instanceof VeltairError && e.code === 'BAD_BUNDLE' && /cannot load kernels library/.test(e.message),
      );
      const bogus = { ...plan, symbols: plan.symbols.map((s, i) => (i === 0 ? 'vt_k0000000000000000' : s)) };
      await assert.rejects(
        createExecutor(bogus, p.so),
        (e: unknown) => e instanceof VeltairError && e.code === 'BAD_BUNDLE' && /no vt_k0000000000000000_run/.test(e.message),
      );
      const swapped = {
        ...plan,
        steps: plan.steps.map((s) => (s.versions ? { ...s, versions: s.versions.map((v) => ({ ...v, symbol: (v.symbol + 2) % 4 })) } : s)),
      };
      await assert.rejects(
        createExecutor(swapped, p.so),
        (e: unknown) => e instanceof VeltairError && e.code === 'BAD_BUNDLE' && /does not match the plan/.test(e.message),
      );

      // Every size a kernel reads is compared with its descriptor: a plan that gives less is refused at load.
      const conv = plan.steps[kernelSteps[0]!]!;
      assert.ok(conv.inputBytes![5]! > 0, 'the 3-channel stem gathers its input into the planned workspace');
      const withConv = (edit: (s: typeof conv) => typeof conv) => ({ ...plan, steps: plan.steps.map((s) => (s === conv ? edit(s) : s)) });
      const sized = (i: number, bytes: number) =>
        withConv((s) => ({ ...s, inputBytes: s.inputBytes!.map((b, j) => (j === i ? bytes : b)) }));
      const refusals: [string, typeof plan][] = [
        ['bias size', sized(1, 4)],
        ['workspace size', sized(5, conv.inputBytes![5]! - 64)],
        ['input size', sized(0, conv.inputBytes![0]! - 4)],
        ['weight size', withConv((s) => ({ ...s, versions: s.versions!.map((v) => ({ ...v, weightBytes: v.weightBytes! - 4 })) }))],
      ];
      for (const [why, bad] of refusals) {
        await assert.rejects(
          createExecutor(bad, p.so),
          (e: unknown) => e instanceof VeltairError && e.code === 'BAD_BUNDLE' && e.message.includes(`does not match the plan (${why})`),
          why,
        );
      }
    } finally {
      await rm(p.cache, { recursive: true, force: true });
    }
  },
);

test(
  'pooled features off the vector grid (20 channels) reach the Gemm with no reorder, as a Flatten view or a ReduceMean head, ' +
    'and match ONNX Runtime',
  { timeout: 240_000 },
  async () => {
    for (const model of [MODEL, MEAN_HEAD]) {
      const p = await prepare(model);
      try {
        const steps = p.plan.steps.map((s) =>
          s.op === 'reorder' ? `reorder ${s.from}→${s.to}` : `${p.graph.layers[s.layer]!.op}@${s.layout}`,
        );
        // The RGB stem reads the graph input as it is (_run_nchw): the only reorder is the Gemm's output to natural.
        assert.deepEqual(
          steps.filter((s) => s.startsWith('reorder')),
          [`reorder rows${p.vec}→nchw`],
          steps.join(', '),
        );
        const { plan } = translatePlan(p.plan, p.layers, { threads: 2 });
        const exec = await createExecutor(plan, p.so);
        const x = seeded(2 * 3 * 15 * 13, 12, -1, 1);
        const session = await ort.InferenceSession.create(p.bytes, { intraOpNumThreads: 1 });
        const ref = (await session.run({ x: new ort.Tensor('float32', x, [2, 3, 15, 13]) }))['y']!.data as Float32Array;
        assertClose(exec.run([x])[0] as Float32Array, ref, steps.join(', '), 1e-3, 1e-5);
        exec.close();
      } finally {
        await rm(p.cache, { recursive: true, force: true });
      }
    }
  },
);
