/**
 * Test harness for the native runtime: one ONNX model through veltair's front end, IR, graph plan,
 * plan translation and native executor, and the same model through ONNX Runtime; plus a variant
 * that runs a single layer on NCHW[V]c (reorder in, layer blocked, reorder out) to pin the blocked
 * paths the bundle planner uses after convolutions.
 */
import assert from 'node:assert/strict';
import * as ort from 'onnxruntime-node';
import { encodeModel, type ModelSpec, type NodeSpec } from '../src/onnx/encode.js';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import { lowerToLayers } from '../src/ir/lower.js';
import type { LayerGraph } from '../src/ir/layer.js';
import { buildGraphPlan, type GraphPlan, type PlanStep, type PlanValue } from '../src/bundle/plan.js';
import { blockedLayout, dtypeBytes, layoutElements, NATURAL } from '../src/bundle/layout.js';
import { translatePlan } from '../src/runtime/translate.js';
import { fromIrLayer, type RuntimeLayer } from '../src/runtime/runtime-layer.js';
import { createExecutor, type TensorData } from '../src/runtime/native-bridge.js';
import type { DType, Tensor } from '../src/onnx/model.js';
import { seededFloats } from '../src/random.js';

export type Feed = { dtype: DType; dims: readonly number[]; data: TensorData };

/** Deterministic floats in [lo, hi) (veltair's one seeded PRNG). */
export const seeded = (count: number, seed: number, lo = -2, hi = 2): Float32Array => seededFloats(count, seed, lo, hi);

export function graphOf(spec: ModelSpec): { bytes: Uint8Array; graph: LayerGraph } {
  const bytes = encodeModel(spec);
  return { bytes, graph: lowerToLayers(inferModel(decodeModel(bytes, 'runtime-test.onnx'))) };
}

/** Ops whose blocked form writes the natural layout (src/bundle/plan-layouts.ts). */
const NATURAL_OUT = new Set(['transpose', 'globalaveragepool', 'globalmaxpool']);

/** A plan placing every value at its own offset (no reuse), the given layer run blocked with width `vec`. */
export function blockedPlan(graph: LayerGraph, vec: number): GraphPlan {
  const values: PlanValue[] = [];
  const steps: PlanStep[] = [];
  let offset = 0;
  const add = (name: string, layout: string, dtype: DType): number => {
    const shape = graph.shapes.get(name)!;
    const bytes = layoutElements(shape, layout) * dtypeBytes(dtype);
    values.push({ id: values.length, name, shape, dtype, layout, bytes, offset });
    offset += Math.ceil(bytes / 64) * 64;
    return values.length - 1;
  };
  const natural = new Map<string, number>();
  const inputs = graph.inputs.map((i) => {
    const id = add(i.name, NATURAL, i.dtype);
    natural.set(i.name, id);
    return { name: i.name, value: id };
  });
  const blocked = blockedLayout(vec);
  const outputs: { name: string; value: number }[] = [];
  for (const l of graph.layers) {
    const ins = l.inputs.map((v) => {
      const id = add(v, blocked, 'float32');
      steps.push({ index: steps.length, op: 'reorder', from: NATURAL, to: blocked, inputs: [natural.get(v)!], outputs: [id] });
      return id;
    });
    if (NATURAL_OUT.has(l.op)) {
      const outs = l.outputs.map((v) => add(v, NATURAL, 'float32'));
      steps.push({ index: steps.length, op: 'layer', layer: l.index, layout: blocked, inputs: ins, outputs: outs });
      l.outputs.forEach((v, i) => natural.set(v, outs[i]!));
      continue;
    }
    const outs = l.outputs.map((v) => add(v, blocked, 'float32'));
    steps.push({ index: steps.length, op: 'layer', layer: l.index, layout: blocked, inputs: ins, outputs: outs });
    l.outputs.forEach((v, i) => {
      const id = add(v, NATURAL, 'float32');
      steps.push({ index: steps.length, op: 'reorder', from: blocked, to: NATURAL, inputs: [outs[i]!], outputs: [id] });
      natural.set(v, id);
    });
  }
  for (const o of graph.outputs) outputs.push({ name: o.name, value: natural.get(o.name)! });
  return { vectorWidth: vec, inputs, outputs, values, steps, arenaBytes: offset };
}

export interface Compared {
  readonly ours: ArrayBufferView[];
  readonly reference: ArrayBufferView[];
}

/** Run `spec` natively (natural plan, or blocked with `vec`) and with ONNX Runtime. */
export async function runAgainstOrt(
  spec: ModelSpec,
  feeds: readonly Feed[],
  options: { vec?: number; threads?: number; layers?: RuntimeLayer[] } = {},
): Promise<Compared> {
  const { bytes, graph } = graphOf(spec);
  const plan = options.vec ? blockedPlan(graph, options.vec) : buildGraphPlan(graph, new Map(), 16);
  const layers = options.layers ?? graph.layers.map((l) => fromIrLayer(l));
  const translated = translatePlan(plan, layers, { threads: options.threads ?? 2 });
  const exec = await createExecutor(translated.plan, null);
  let ours: ArrayBufferView[];
  try {
    ours = exec.run(feeds.map((f) => f.data));
  } finally {
    exec.close();
  }
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const ortFeeds: Record<string, ort.Tensor> = {};
  spec.inputs.forEach((i, k) => {
    ortFeeds[i.name] = new ort.Tensor(feeds[k]!.dtype as 'float32', feeds[k]!.data as Float32Array, [...feeds[k]!.dims]);
  });
  const result = await session.run(ortFeeds);
  const reference = spec.outputs.map((o) => result[o.name]!.data as unknown as ArrayBufferView);
  return { ours, reference };
}

/** Elementwise closeness, rtol/atol, with the first offending index in the message. */
export function assertClose(actual: ArrayBufferView, expected: ArrayBufferView, what: string, rtol = 1e-4, atol = 1e-5): void {
  const a = Array.from(actual as unknown as ArrayLike<number | bigint>, Number);
  const e = Array.from(expected as unknown as ArrayLike<number | bigint>, Number);
  assert.equal(a.length, e.length, `${what}: length ${a.length} vs ${e.length}`);
  for (let i = 0; i < a.length; i++) {
    const ok = (Number.isNaN(a[i]!) && Number.isNaN(e[i]!)) || Math.abs(a[i]! - e[i]!) <= atol + rtol * Math.abs(e[i]!);
    if (!ok) assert.fail(`${what}: element ${i} is ${a[i]}, expected ${e[i]}`);
  }
}

export const f32 = (dims: readonly number[], seed: number, lo = -2, hi = 2): Feed => ({
  dtype: 'float32',
  dims,
  data: seeded(
    dims.reduce((a, b) => a * b, 1),
    seed,
    lo,
    hi,
  ),
});

export interface Case {
  readonly name: string;
  readonly node?: Omit<NodeSpec, 'inputs' | 'outputs'> & { inputs?: readonly string[] };
  /** A multi-node graph instead of one node (its last node writes 'y'). */
  readonly nodes?: readonly NodeSpec[];
  readonly feeds: readonly (Feed & { name: string })[];
  readonly out: readonly number[];
  readonly outDtype?: Tensor['dtype'];
  readonly inits?: readonly (readonly [string, Tensor])[];
  readonly vec?: number;
  readonly rtol?: number;
  readonly atol?: number;
  readonly opset?: number;
}

export const scalar = (v: number): Tensor => ({ dtype: 'float32', dims: [], data: new Float32Array([v]) });
export const named = (name: string, f: Feed) => ({ name, ...f });

export async function check(c: Case): Promise<void> {
  const inputs = c.node?.inputs ?? c.feeds.map((f) => f.name);
  const { compared } = {
    compared: await runAgainstOrt(
      {
        opset: c.opset ?? 17,
        inputs: c.feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.dims] })),
        outputs: [{ name: 'y', dtype: c.outDtype ?? 'float32', shape: [...c.out] }],
        initializers: c.inits ?? [],
        nodes: c.nodes ?? [{ op: 'Identity', ...c.node, inputs, outputs: ['y'] }],
      },
      c.feeds,
      c.vec ? { vec: c.vec } : {},
    ),
  };
  assertClose(compared.ours[0]!, compared.reference[0]!, c.name, c.rtol ?? 1e-4, c.atol ?? 2e-5);
}

export const X = (dims: number[], seed = 1, lo = -2, hi = 2) => named('x', f32(dims, seed, lo, hi));
