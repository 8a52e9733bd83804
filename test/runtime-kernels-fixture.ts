/**
 * Whole small models through real generated kernels and the native executor, against ONNX Runtime:
 * two versions per tunable layer (locality-greedy and parallel-heavy) built into one shared object,
 * weights packed by the kernels' own packers, planned, translated, and run at 1 and 2 threads in
 * every version combination.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { buildGraphPlan, type LayerChoice } from '../src/bundle/plan.js';
import { packWeights } from '../src/bundle/packer.js';
import { generateKernel, kernelWorkspaceBytes } from '../src/codegen/kernel.js';
import { buildKernels } from '../src/measure/build.js';
import { makeCandidate } from '../src/space/candidate.js';
import { localityGreedy, parallelHeavy } from '../src/space/presets.js';
import { threadSplit, type Schedule } from '../src/space/knobs.js';
import { problemOf } from '../src/space/problem.js';
import { detectTarget, type Target } from '../src/toolchain/target.js';
import type { Workload } from '../src/ir/workload.js';
import { fromIrLayer, type RuntimeVersion } from '../src/runtime/runtime-layer.js';
import { translatePlan } from '../src/runtime/translate.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { OP } from '../src/runtime/ops.js';
import { assertClose, graphOf, seeded } from './runtime-harness.js';
import type { Tensor } from '../src/onnx/model.js';
import type { ModelSpec, NodeSpec } from '../src/onnx/encode.js';

export const t = (dims: number[], seed: number, scale = 0.3): Tensor => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    -scale,
    scale,
  ),
});

export const model = (input: number[], output: number[], inits: [string, Tensor][], nodes: NodeSpec[]): ModelSpec => ({
  inputs: [{ name: 'x', dtype: 'float32', shape: input }],
  outputs: [{ name: 'y', dtype: 'float32', shape: output }],
  initializers: inits,
  nodes,
});

const defaultVersions = (w: Workload, target: Target): Schedule[] => [localityGreedy(w, target, 1), parallelHeavy(w, target, 2)];

/** Two versions per tunable layer (locality-greedy and parallel-heavy), built into one shared object, planned and translated. */
export async function prepare(spec: ModelSpec, versionsOf: (w: Workload, target: Target) => Schedule[] = defaultVersions) {
  const target = await detectTarget();
  const { bytes, graph } = graphOf(spec);
  const cache = await mkdtemp(join(tmpdir(), 'veltair-kernels-'));
  const tunable = graph.layers.filter((l) => l.tunable);
  const schedules = tunable.map((l) => versionsOf(l.workload!, target));
  const units = tunable.map((l, i) => schedules[i]!.map((s) => generateKernel(makeCandidate(l.workload!, s, target))));
  const built = await buildKernels(units.flat(), { cacheDir: cache, batchSize: 16 });
  assert.ok(
    built.every((b) => b.status === 'ok'),
    JSON.stringify(built),
  );
  const so = (built[0] as { soPath: string }).soPath;
  assert.ok(
    built.every((b) => (b as { soPath: string }).soPath === so),
    'all kernels in one shared object',
  );
  const jobs = tunable.flatMap((l, i) => units[i]!.map((u) => ({ symbol: u.symbol, weight: l.params['weight']!.data as Float32Array })));
  const packed: Uint8Array[] = [];
  await packWeights(
    so,
    jobs,
    cache,
    (i, b) => {
      packed[i] = b;
    },
    cache,
  );
  const vec = schedules[0]![0]!.vec;
  assert.ok(
    schedules.flat().every((s) => s.vec === vec),
    'one vector width for the whole plan',
  );
  const choices = new Map<number, LayerChoice>();
  const versions = new Map<number, RuntimeVersion[]>();
  let k = 0;
  tunable.forEach((l, i) => {
    const vs = units[i]!.map((u, j) => ({
      id: u.symbol,
      symbol: u.symbol,
      packedWeight: packed[k++]!,
      workspaceBytes: kernelWorkspaceBytes(l.workload!, schedules[i]![j]!),
      split: threadSplit(problemOf(l.workload!, schedules[i]![j]!.vec), schedules[i]![j]!),
      ...(l.workload!.op === 'conv2d'
        ? { tiling: { problem: problemOf(l.workload!, schedules[i]![j]!.vec), schedule: schedules[i]![j]! } }
        : {}),
    }));
    versions.set(l.index, vs);
    choices.set(l.index, { vec, versions: vs.map((v) => v.id) });
  });
  const plan = buildGraphPlan(graph, choices, vec);
  const layers = graph.layers.map((l) => fromIrLayer(l, versions.get(l.index) ?? []));
  return { bytes, graph, plan, layers, so, cache, units, vec, translated: translatePlan(plan, layers, { threads: 2 }) };
}

/** Every version combination at 1 and 2 threads against ONNX Runtime. */
export async function matchesOrt(p: Awaited<ReturnType<typeof prepare>>, spec: ModelSpec, seed: number): Promise<void> {
  const dims = spec.inputs[0]!.shape as number[];
  const x = seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    -1,
    1,
  );
  const session = await ort.InferenceSession.create(p.bytes, { intraOpNumThreads: 1 });
  const ref = (await session.run({ x: new ort.Tensor('float32', x, dims) }))['y']!.data as Float32Array;
  const exec = await createExecutor(p.translated.plan, p.so);
  try {
    const kernels = p.translated.plan.steps.map((s, i) => (s.op === OP.KERNEL ? i : -1)).filter((i) => i >= 0);
    for (const threads of [1, 2]) {
      exec.setAllThreads(threads);
      for (const version of [0, 1]) {
        kernels.forEach((s, i) => exec.setVersion(s, (version + i) % 2));
        assertClose(exec.run([x])[0] as Float32Array, ref, `${threads} thread(s), versions from ${version}`, 1e-3, 1e-5);
      }
    }
  } finally {
    exec.close();
  }
}
