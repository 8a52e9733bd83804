/**
 * Zoo models end to end against ONNX Runtime: build the ONNX file, `veltair compile` it with a tiny
 * budget (1 trial, level 0, 1 version, no thread profiling; one temp database and kernel cache for
 * the whole file, so shared workloads compile once), load the bundle with loadBundle, run it on a
 * seeded input and compare every output with ONNX Runtime on the same file and input:
 *   |ours − ref| ≤ 1e-4·max|ref| + 1e-3·|ref|   (see runtime-session-fixture.ts)
 *
 * Which models: compiles dominate (≈ 0.5–3.5 min per CNN on the 2-core reference machine), so CI
 * runs a representative subset — depthwise + residual CNN (mobilenet_v2), plain conv + leaky ReLU +
 * maxpool (tiny_yolov2), the transformer encoder layer (bert_large, 1 layer, sequence 128),
 * squeeze-excite gates + SiLU (efficientnet_b0) — and
 * VELTAIR_ZOO_MODELS=all (or a comma list of names) runs the rest by hand:
 *   npx tsc -p . && VELTAIR_ZOO_MODELS=all node --test dist/test/zoo-correctness.test.js
 * The per-model max errors are printed as a table at the end.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadBundle } from '../src/runtime/session.js';
import { writeZooModel, type ZooOptionValues } from '../src/zoo/index.js';
import { veltair } from './compile-fixture.js';
import { compareTensors, describeComparison, ortOutputs, seededFeeds, type Comparison } from './runtime-session-fixture.js';

interface ZooCase { readonly name: string; readonly options: ZooOptionValues }

const ALL: readonly ZooCase[] = [
  { name: 'mobilenet_v2', options: {} },
  { name: 'tiny_yolov2', options: {} },
  { name: 'bert_large', options: { layers: 1, sequence: 128 } },
  { name: 'resnet50', options: {} },
  { name: 'googlenet', options: {} },
  { name: 'efficientnet_b0', options: {} },
  { name: 'ssd_mobilenet_v1', options: {} },
  // Near the smallest valid resolution (385): the model's full structure at a fraction of 1200's cost.
  { name: 'ssd_resnet34', options: { resolution: 400 } },
];
const CI = new Set(['mobilenet_v2', 'tiny_yolov2', 'bert_large', 'efficientnet_b0']);

function selected(): readonly ZooCase[] {
  const want = process.env['VELTAIR_ZOO_MODELS'];
  if (want === undefined || want === '') return ALL.filter((c) => CI.has(c.name));
  if (want === 'all') return ALL;
  const names = new Set(want.split(',').map((s) => s.trim()));
  const unknown = [...names].filter((n) => !ALL.some((c) => c.name === n));
  assert.deepEqual(unknown, [], `VELTAIR_ZOO_MODELS names unknown models; known: ${ALL.map((c) => c.name).join(', ')}`);
  return ALL.filter((c) => names.has(c.name));
}

const root = mkdtempSync(join(tmpdir(), 'veltair-zoo-correct-'));
const env = { VELTAIR_CACHE_DIR: join(root, 'cache') };
const db = join(root, 'db');
const results: { model: string; compileS: number; c: Comparison }[] = [];

after(() => {
  const rows = results.map((r) => `${r.model.padEnd(18)} ${r.c.name.slice(0, 28).padEnd(28)} ${String(r.c.elements).padStart(8)}  `
    + `${r.c.maxAbs.toExponential(2).padStart(9)}  ${r.c.maxRel.toExponential(2).padStart(9)}  ${r.c.atol.toExponential(2).padStart(9)}  `
    + `${String(r.c.bad).padStart(4)}  ${r.compileS.toFixed(0).padStart(4)} s`);
  console.log(['model              output                       elements    max abs    max rel       atol   bad  compile', ...rows].join('\n'));
  rmSync(root, { recursive: true, force: true });
});

for (const zc of selected()) {
  test(`${zc.name} compiled with a tiny budget matches ONNX Runtime on a seeded input`, { timeout: 900_000 }, async () => {
    const model = join(root, `${zc.name}.onnx`);
    const bundle = join(root, `${zc.name}.bundle`);
    await writeZooModel(zc.name, model, zc.options);
    const t0 = Date.now();
    const r = await veltair(['compile', model, '-o', bundle, '--db', db, '--trials', '1', '--levels', '0', '--max-versions', '1',
      '--profile-threads', 'none', '--json'], env);
    assert.equal(r.exitCode, 0, r.stderr);
    const compileS = (Date.now() - t0) / 1000;
    const session = await loadBundle(bundle);
    try {
      const feeds = seededFeeds(session.inputs, 11);
      const ours = await session.run(feeds);
      const ref = await ortOutputs(model, feeds);
      assert.deepEqual(Object.keys(ours).sort(), Object.keys(ref).sort(), 'the same outputs');
      for (const o of session.outputs) {
        assert.deepEqual(ours[o.name]!.shape, ref[o.name]!.shape, `${o.name} shape`);
        const c = compareTensors(o.name, ours[o.name]!.data, ref[o.name]!.data as Float32Array);
        results.push({ model: zc.name, compileS, c });
        assert.equal(c.bad, 0, `${zc.name} ${describeComparison(c)}`);
        assert.ok(Number.isFinite(c.maxAbs));
      }
    } finally {
      session.close();
      rmSync(model, { force: true });
      rmSync(bundle, { recursive: true, force: true });
    }
  });
}
