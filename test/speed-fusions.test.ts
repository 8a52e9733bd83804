/**
 * Layout propagation, non-tunable fusion and per-core-count versions on a model exported by
 * PyTorch's own exporter (test/fixtures/torch/speed_blocks.py: a ShuffleNet unit off the V grid, a
 * DenseNet block, a MobileNet-V3 squeeze-excite block, a gate from the block input, a batch norm
 * before a 1x1 conv, an elementwise chain): `veltair compile` at 1 and 2 threads, then the bundle
 * against ONNX Runtime at every thread count, whole and as blocks on one core, with the plan
 * checked for what each rewrite promises (blocked from the first conv to the last op, zero-copy
 * concats, one channel gather for concat+shuffle, chains, the channel_mul epilogue, no batch norm left).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import * as ort from 'onnxruntime-node';
import { loadBundle } from '../src/runtime/session.js';
import type { Manifest } from '../src/bundle/manifest.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { encodeNpy } from '../src/runtime/io-npy.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { compileFixture, veltair } from './compile-fixture.js';
import { assertClose, seeded } from './runtime-harness.js';

const SCRIPT = fileURLToPath(new URL('../../test/fixtures/torch/speed_blocks.py', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'veltair-speed-'));
const env = { VELTAIR_CACHE_DIR: join(root, 'cache') };
const model = join(root, 'speed.onnx');
const bundle = join(root, 'speed.bundle');
after(() => rmSync(root, { recursive: true, force: true }));

let manifest: Manifest;
let reference: Float32Array;
const input = seeded(3 * 16 * 16, 11, -1, 1);

before(async () => {
  await execa('/usr/bin/python3', [SCRIPT, model], { env: { PYTHONDONTWRITEBYTECODE: '1' }, timeout: 300_000 });
  await compileFixture(model, { output: bundle, trials: 1, levels: [0], threads: [1, 2] }, env.VELTAIR_CACHE_DIR);
  const s = await loadBundle(bundle);
  manifest = s.manifest;
  s.close();
  const ortSession = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const out = await ortSession.run({ input: new ort.Tensor('float32', input, [1, 3, 16, 16]) });
  reference = out['output']!.data as Float32Array;
});

const stepShape = (m: Manifest) =>
  m.graphPlan.steps.map((s) => {
    const l = s.op === 'layer' ? m.layers[s.layer]! : undefined;
    return {
      op: s.op === 'reorder' ? 'reorder' : l!.op,
      layout: s.op === 'reorder' ? `${s.from}>${s.to}` : s.layout,
      inPlace: s.op === 'layer' && s.inPlace === true,
      layer: l,
    };
  });

test('the plan stays blocked from the first conv to the head: the RGB stem reads the graph input as it is; one reorder at the output', () => {
  const steps = stepShape(manifest);
  assert.deepEqual(
    steps.filter((s) => s.op === 'reorder').map((s) => s.layout),
    [`rows${manifest.graphPlan.vectorWidth}>nchw`],
  );
  const first = manifest.graphPlan.steps[0]!;
  assert.ok(first.op === 'layer' && first.inputs[0] === manifest.graphPlan.inputs[0]!.value, 'the stem reads the graph input value');
  const flatten = steps.find((s) => s.op === 'flatten')!;
  assert.ok(flatten.inPlace, 'the flatten of the pooled features is a view');
  // Pooled features off the vector grid (36 channels: at V=8 and at V=16) stay blocked: the flatten reads them as rows{V}, what the Gemm takes.
  const offGrid = flatten.layer!.inputShapes[0]![1]! % manifest.graphPlan.vectorWidth !== 0;
  assert.ok(offGrid || manifest.graphPlan.vectorWidth === 1, 'the fixture keeps its pooled features off every vector grid');
  assert.equal(flatten.layout, offGrid ? `rows${manifest.graphPlan.vectorWidth}` : 'nchw');
  const natural = steps.filter((s) => s.op !== 'reorder' && s.layout === 'nchw').map((s) => s.op);
  assert.deepEqual(natural, offGrid ? [] : ['flatten'], 'nothing else runs natural');
});

test('concat inputs are written into their slice (every concat in place), DenseNet prefixes included', () => {
  const concats = stepShape(manifest).filter((s) => s.op === 'concat');
  assert.equal(concats.length, 4);
  assert.ok(
    concats.every((s) => s.inPlace),
    'no concat copies',
  );
  const views = manifest.graphPlan.values.filter((v) => v.viewOf);
  assert.ok(views.length >= 8, `${views.length} views`);
  for (const v of views) {
    const parent = manifest.graphPlan.values[v.viewOf!.value]!;
    assert.equal(v.offset, parent.offset + v.viewOf!.byteOffset);
    assert.ok(v.viewOf!.byteOffset + v.bytes <= parent.bytes, 'a view lies inside its parent');
  }
});

test('the shuffle unit is one channel gather; batch norms are folded or chained; the input gate is a channel_mul epilogue', () => {
  const layers = manifest.layers;
  const ops = layers.map((l) => l.op);
  assert.equal(ops.filter((o) => o === 'channelgather').length, 1, 'concat + reshape/transpose/reshape in one layer');
  assert.ok(!ops.includes('transpose') && !ops.includes('reshape') && !ops.includes('batchnormalization') && !ops.includes('pad'));
  const chains = layers.filter((l) => l.op === 'elementwise_chain').map((l) => String(l.attrs['program']));
  assert.equal(chains.filter((p) => /^affine\(p0,p1\);relu$/.test(p)).length, 4, "the dense block's BN-ReLU pairs are one pass each");
  assert.ok(
    chains.some((p) => p === 'mul(p0);add(p1);tanh'),
    `the tail chain: ${chains.join(' | ')}`,
  );
  const gated = layers.filter((l) => l.op === 'conv2d' && l.epilogue.some((e) => e.kind === 'channel_mul'));
  assert.equal(gated.length, 1, 'only the gate computed from the block input fuses (the SE gate depends on its conv)');
  assert.equal(ops.filter((o) => o === 'mul').length, 1, 'the squeeze-excite multiply stays one blocked op');
  assert.equal(layers.filter((l) => l.op === 'conv2d').length, 16, 'the batch norm before the 1x1 conv folded into it');
});

test('every tunable layer ships versions tuned at 1 and at 2 threads', () => {
  for (const l of manifest.layers.filter((x) => x.tunable)) {
    assert.deepEqual([...new Set(l.versions.map((v) => v.threads))].sort(), [1, 2], `layer ${l.index}`);
    assert.deepEqual(Object.keys(l.family!.byThreads ?? {}).sort(), ['1', '2']);
  }
});

for (const threads of [1, 2]) {
  test(`at ${threads} thread(s): the versions tuned for ${threads} run and match ONNX Runtime`, async () => {
    const s = await loadBundle(bundle, { threads });
    try {
      s.tunableLayers.forEach((t, i) => assert.equal(t.versions[s.versions[i]!]!.threads, threads, `layer ${t.layer}`));
      const out = await s.run({ input });
      assertClose(out['output']!.data as Float32Array, reference, `output at ${threads} threads`, 1e-4, 1e-5);
    } finally {
      s.close();
    }
  });
}

test('a block on one core runs the versions tuned for one core and matches ONNX Runtime', async () => {
  const s = await loadBundle(bundle, { threads: 2 });
  try {
    const inf = await s.begin({ input });
    const half = Math.floor(s.steps.length / 2);
    const cores = availableCores();
    await inf.block(half, { cores: cores.slice(0, 1) });
    s.tunableLayers.forEach((t, i) => {
      if (t.step < half) assert.equal(t.versions[s.versions[i]!]!.threads, 1, `layer ${t.layer}`);
    });
    await inf.block(s.steps.length, { cores: cores.slice(0, 2) });
    assertClose(inf.finish()['output']!.data as Float32Array, reference, 'output run as blocks', 1e-4, 1e-5);
  } finally {
    s.close();
  }
});

test('veltair run --profile writes a Chrome trace of every step and a table by op kind', async () => {
  const npy = join(root, 'x.npy');
  writeFileSync(npy, encodeNpy({ dtype: 'float32', shape: [1, 3, 16, 16], data: input }));
  const trace = join(root, 'trace.json');
  const r = await veltair(
    ['run', bundle, '--input', npy, '--output-dir', join(root, 'out'), '--profile', trace, '--profile-runs', '3', '--json'],
    env,
  );
  assert.equal(r.exitCode, 0, r.stderr);
  const summary = JSON.parse(r.stdout);
  assert.match(r.stderr, /op kind +steps +ms +share/);
  assert.match(r.stderr, /kernel +17 /);
  const t = JSON.parse(readFileSync(trace, 'utf8'));
  const runs = t.traceEvents.filter((e: { cat?: string }) => e.cat === 'Session');
  const steps = t.traceEvents.filter((e: { ph: string; cat?: string }) => e.ph === 'X' && e.cat !== 'Session');
  assert.equal(runs.length, 3);
  assert.equal(steps.length, 3 * summary.profile.byKind.reduce((n: number, k: { steps: number }) => n + k.steps, 0));
  for (const e of steps) assert.ok(e.dur >= 0 && e.ts >= 0 && typeof e.name === 'string' && e.pid === 1);
  assert.ok(summary.profile.nonKernelShare >= 0 && summary.profile.nonKernelShare < 1);
});
