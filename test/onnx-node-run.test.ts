/**
 * ONNX's own backend node tests (Debian's libonnx-testdata), executed: for every test whose graph
 * veltair's front end, IR and native runtime all support, run the shipped input_*.pb through the
 * runtime and compare with the shipped output_*.pb (|ours − ref| ≤ 1e-4·max|ref| + 1e-3·|ref|).
 *
 *  - Graphs without a tunable layer run in-process through the same stages a bundle goes through
 *    (IR → graph plan → plan translation → native executor); `veltair compile` refuses such graphs
 *    (nothing to tune), so there is no bundle to write for them.
 *  - Graphs with conv / gemm / matmul layers need generated kernels: a bounded set (TUNABLE_CASES)
 *    is compiled with compileModel (1 trial, level 0, one temp database and kernel cache) and
 *    run with loadBundle. Their weights (and gemm's C) are graph inputs in the test models; they are
 *    baked in as initializers, because veltair packs constant weights at compile time.
 *  - Tests not run, by category (counted, and the counts printed): an operator the front end does
 *    not know, a graph the front end folds to constants entirely (its values are checked by
 *    onnx-node-tests.test.ts), a layer the native runtime has no lowering for (UNSUPPORTED_OPS),
 *    a graph the IR refuses (e.g. a Conv whose weight is a graph input), string / uint32 / uint64
 *    tensors (no host array type in the session API), and the tests listed in EXCLUDED.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import onnxProto from 'onnx-proto';
import { decodeModel } from '../src/onnx/decode.js';
import { inferModel } from '../src/onnx/infer.js';
import type { OnnxModel, Tensor } from '../src/onnx/model.js';
import { lowerToLayers } from '../src/ir/lower.js';
import { buildGraphPlan } from '../src/bundle/plan.js';
import { translatePlan } from '../src/runtime/translate.js';
import { fromIrLayer } from '../src/runtime/runtime-layer.js';
import { createExecutor } from '../src/runtime/native-bridge.js';
import { decodePb } from '../src/runtime/io-pb.js';
import { loadBundle } from '../src/runtime/session.js';
import type { HostTensor } from '../src/runtime/host-tensor.js';
import { isVeltairError } from '../src/errors.js';
import { compileFixture } from './compile-fixture.js';
import { compareTensors, describeComparison } from './runtime-session-fixture.js';
import { dataFiles, EXCLUDED, NODE_TESTS, nodeTestCases, withInputsBaked } from './onnx-node-data.js';

const { onnx } = onnxProto;

/** Tunable-op tests compiled into bundles (each costs a kernel compile): input index kept as an activation. */
const TUNABLE_CASES: ReadonlyMap<string, readonly number[]> = new Map([
  ...[
    'test_basic_conv_with_padding',
    'test_basic_conv_without_padding',
    'test_conv_with_autopad_same',
    'test_conv_with_strides_and_asymmetric_padding',
    'test_conv_with_strides_no_padding',
    'test_conv_with_strides_padding',
    'test_gemm_all_attributes',
    'test_gemm_alpha',
    'test_gemm_beta',
    'test_gemm_default_matrix_bias',
    'test_gemm_default_no_bias',
    'test_gemm_default_scalar_bias',
    'test_gemm_default_single_elem_vector_bias',
    'test_gemm_default_vector_bias',
    'test_gemm_default_zero_bias',
    'test_gemm_transposeA',
    'test_gemm_transposeB',
  ].map((n): [string, readonly number[]] => [n, [0]]),
  ...['test_matmul_2d', 'test_matmul_3d', 'test_matmul_4d'].map((n): [string, readonly number[]] => [n, [0, 1]]),
]);

const root = fs.mkdtempSync(path.join(tmpdir(), 'veltair-node-run-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

function readPbs(dir: string, prefix: 'input_' | 'output_'): (HostTensor & { name: string })[] {
  return dataFiles(dir, prefix).map((f) => decodePb(fs.readFileSync(f), path.basename(f)));
}

interface NodeCase {
  readonly name: string;
  readonly dir: string;
  readonly model: OnnxModel;
  readonly proto: onnxProto.onnx.ModelProto;
}

function frontEndCases(): { cases: NodeCase[]; unknownOp: number } {
  const { cases, unknownOp } = nodeTestCases();
  return {
    cases: cases.map((c) => ({ name: c.name, dir: c.dir, proto: c.proto, model: decodeModel(c.bytes, path.join(c.dir, 'model.onnx')) })),
    unknownOp,
  };
}

type Outcome =
  | { kind: 'compared' }
  | { kind: 'folded' | 'tunable' | 'runtime-unsupported' | 'ir-unsupported' | 'dtype-unsupported' | 'front-end-refused'; why?: string }
  | { kind: 'failed'; why: string };

/** A host tensor as the front end holds constants (int64 as float64, see src/onnx/model.ts). */
function asTensor(t: HostTensor): Tensor {
  const data = t.data instanceof BigInt64Array ? Float64Array.from(t.data, (v) => Number(v)) : t.data;
  return { dtype: t.dtype, dims: t.shape, data: data as Tensor['data'] };
}

function compareAll(name: string, ours: readonly ArrayBufferView[], refs: readonly HostTensor[]): string | undefined {
  for (let i = 0; i < refs.length; i++) {
    const c = compareTensors(`${name} output ${i}`, ours[i] as HostTensor['data'], refs[i]!.data as Float32Array);
    if (c.bad > 0) return describeComparison(c);
  }
  return undefined;
}

/** Non-tunable graphs: IR → plan → translate → native executor, in process. */
async function runNative(c: NodeCase): Promise<Outcome> {
  const data = path.join(c.dir, 'test_data_set_0');
  let ins, outs;
  try {
    ins = readPbs(data, 'input_');
    outs = readPbs(data, 'output_');
  } catch (e) {
    // string, uint32 and uint64 tensors: no host array type in the session API.
    if (isVeltairError(e) && e.code === 'BAD_INPUT') return { kind: 'dtype-unsupported', why: e.message };
    throw e;
  }
  const inputNames = c.model.graph.inputs.filter((i) => !c.model.graph.initializers.has(i.name)).map((i) => i.name);
  const byName = new Map(ins.map((t, i) => [t.name || inputNames[i]!, t]));
  let model = c.model;
  let inferred;
  try {
    inferred = inferModel(model, { inputShapes: new Map([...byName].map(([n, t]) => [n, t.shape])) });
  } catch (e) {
    if (!isVeltairError(e)) throw e;
    // Shape-carrying inputs (Reshape's shape, Expand's shape…): bake the integer inputs and retry.
    const ints = new Map([...byName].filter(([, t]) => t.dtype !== 'float32').map(([n, t]) => [n, asTensor(t)]));
    if (ints.size === 0) return { kind: 'front-end-refused', why: `[${e.code}] ${e.message}` };
    model = withInputsBaked(model, ints);
    for (const n of ints.keys()) byName.delete(n);
    try {
      inferred = inferModel(model, { inputShapes: new Map([...byName].map(([n, t]) => [n, t.shape])) });
    } catch (e2) {
      if (!isVeltairError(e2)) throw e2;
      return { kind: 'front-end-refused', why: `[${e2.code}] ${e2.message}` };
    }
  }
  let graph;
  try {
    graph = lowerToLayers(inferred);
  } catch (e) {
    // e.g. a Conv whose weight is a graph input: the conv cases with baked weights are the second test.
    // Quantized operators with run-time weights or scales: ir-quantized.test.ts runs them with those baked.
    if (isVeltairError(e) && (e.code === 'UNSUPPORTED_OPS' || e.code === 'UNSUPPORTED_QUANTIZATION'))
      return { kind: 'ir-unsupported', why: e.message };
    throw e;
  }
  if (graph.layers.some((l) => l.tunable)) return { kind: 'tunable' };
  const produced = new Set(graph.layers.flatMap((l) => l.outputs));
  if (graph.outputs.some((o) => !produced.has(o.name))) return { kind: 'folded' };
  let translated;
  try {
    translated = translatePlan(
      buildGraphPlan(graph, new Map(), 16),
      graph.layers.map((l) => fromIrLayer(l)),
      { threads: 2 },
    );
  } catch (e) {
    if (isVeltairError(e) && e.code === 'UNSUPPORTED_OPS') return { kind: 'runtime-unsupported', why: e.message };
    throw e;
  }
  const exec = await createExecutor(translated.plan, null);
  try {
    const feeds = translated.plan.inputs.map((t) => {
      const f = byName.get(t.name);
      if (f === undefined) throw new Error(`no test data for input ${t.name}`);
      return f.data;
    });
    const why = compareAll(c.name, exec.run(feeds), outs);
    return why === undefined ? { kind: 'compared' } : { kind: 'failed', why };
  } finally {
    exec.close();
  }
}

test('ONNX node tests without tunable layers run natively and match the shipped outputs', { timeout: 240_000 }, async () => {
  assert.ok(fs.existsSync(NODE_TESTS), `${NODE_TESTS} is missing: install Debian's libonnx-testdata (apt-get install libonnx-testdata)`);
  const { cases, unknownOp } = frontEndCases();
  const counts = new Map<string, number>();
  const failures: string[] = [];
  const compared: string[] = [];
  for (const c of cases) {
    let o: Outcome;
    try {
      o = await runNative(c);
    } catch (e) {
      o = { kind: 'failed', why: isVeltairError(e) ? `[${e.code}] ${e.message}` : String(e) };
    }
    counts.set(o.kind, (counts.get(o.kind) ?? 0) + 1);
    if (o.kind === 'failed') failures.push(`${c.name}: ${o.why}`);
    if (o.kind === 'compared') compared.push(c.name);
  }
  console.log(
    `ONNX node tests run natively: ${compared.length} compared, ${[...counts].map(([k, n]) => `${k} ${n}`).join(', ')}, ` +
      `unknown to the front end ${unknownOp}, excluded ${EXCLUDED.size}`,
  );
  assert.deepEqual(failures, []);
  assert.ok(compared.length >= 280, `only ${compared.length} node tests were compared; expected at least 280`);
});

/** The test model with every input not in `keep` turned into an initializer from its test data. */
function bakeWeights(c: string, keep: readonly number[]): Uint8Array {
  const dir = path.join(NODE_TESTS, c);
  const m = onnx.ModelProto.decode(fs.readFileSync(path.join(dir, 'model.onnx')));
  const graph = m.graph!;
  const inputs = [...(graph.input ?? [])];
  const kept: onnxProto.onnx.IValueInfoProto[] = [];
  inputs.forEach((vi, i) => {
    if (keep.includes(i)) {
      kept.push(vi);
      return;
    }
    const t = onnx.TensorProto.decode(fs.readFileSync(path.join(dir, 'test_data_set_0', `input_${i}.pb`)));
    t.name = vi.name ?? '';
    graph.initializer = [...(graph.initializer ?? []), t];
  });
  graph.input = kept;
  return onnx.ModelProto.encode(m).finish();
}

test('ONNX conv / gemm / matmul node tests compile into bundles and match the shipped outputs', { timeout: 600_000 }, async () => {
  const cache = path.join(root, 'cache');
  const failures: string[] = [];
  for (const [name, keep] of TUNABLE_CASES) {
    const file = path.join(root, `${name}.onnx`);
    fs.writeFileSync(file, bakeWeights(name, keep));
    const bundle = path.join(root, `${name}.bundle`);
    try {
      await compileFixture(
        file,
        { output: bundle, db: path.join(root, 'db'), trials: 1, levels: [0], maxVersions: 1, profileThreads: [] },
        cache,
      );
    } catch (e) {
      failures.push(`${name}: compile failed: ${(e as Error).message.split('\n')[0]}`);
      continue;
    }
    const data = path.join(NODE_TESTS, name, 'test_data_set_0');
    const ins = readPbs(data, 'input_');
    const outs = readPbs(data, 'output_');
    const s = await loadBundle(bundle);
    try {
      assert.ok(s.tunableLayers.length >= 1, `${name} has a tunable layer`);
      const feeds = Object.fromEntries(s.inputs.map((t, i) => [t.name, ins[keep[i]!]!.data]));
      const got = s.runSync(feeds);
      const why = compareAll(
        name,
        s.outputs.map((o) => got[o.name]!.data),
        outs,
      );
      if (why !== undefined) failures.push(why);
    } finally {
      s.close();
    }
  }
  assert.deepEqual(failures, []);
});
