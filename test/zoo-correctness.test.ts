/**
 * Zoo models end to end against ONNX Runtime, in every kept version: build the ONNX file, give
 * `veltair compile` a database in which each unique workload's first two search proposals exist
 * (two levels, each with its own best: latencies made up, like db-fixture.ts's — the kernels are
 * real, and their outputs are what this test checks), compile with 2 trials at levels 0,1 and up
 * to 2 versions (so nothing is measured and every tunable layer keeps two versions), load the
 * bundle, run it on a seeded input with each level's version vector — together they run every
 * kept version of every layer — and compare every output with ONNX Runtime on the same file and
 * input:
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
import { makeRecord } from '../src/db/record.js';
import { appendRecords, openDatabase } from '../src/db/store.js';
import { lowerToLayers } from '../src/ir/lower.js';
import type { Workload } from '../src/ir/workload.js';
import { loadModel } from '../src/onnx/load.js';
import { scheduleFeatures } from '../src/space/features.js';
import { detectTarget } from '../src/toolchain/target.js';
import { createTaskSearch } from '../src/tune/search.js';
import { compileFixture } from './compile-fixture.js';
import { compareTensors, describeComparison, ortOutputs, seededFeeds, type Comparison } from './runtime-session-fixture.js';

interface ZooCase {
  readonly name: string;
  readonly options: ZooOptionValues;
}

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
const cache = join(root, 'cache');
const dbDir = join(root, 'db');
const results: { model: string; compileS: number; c: Comparison }[] = [];
const LEVELS = [0, 1];

/**
 * Records for the first two schedules the compile's search will propose for each workload (the
 * same search, seed and options), version A fastest at level 0 and B at level 1 — made-up
 * latencies, so the family keeps both and the compile measures nothing.
 */
async function twoVersionDatabase(model: string): Promise<number> {
  const target = await detectTarget();
  const graph = lowerToLayers(await loadModel(model));
  const workloads = new Map<string, Workload>();
  for (const l of graph.layers) if (l.workload) workloads.set(l.workload.key, l.workload);
  const db = await openDatabase(dbDir, { target, shipped: false });
  const records = [...workloads.values()].flatMap((w) => {
    const search = createTaskSearch(w, target, {
      levels: LEVELS,
      threads: [1],
      levelsFor: () => LEVELS,
      seed: 1,
      seedSchedules: db.seeds(w.key).map((r) => r.schedule),
    });
    return search.propose(2).map((s, i) =>
      makeRecord({
        workload: w,
        target,
        schedule: s,
        features: scheduleFeatures(w, s),
        latencies: { 0: [1 + i, 1 + i, 1 + i], 1: [2 - i, 2 - i, 2 - i] },
        status: 'ok',
      }),
    );
  });
  await appendRecords(dbDir, records);
  return workloads.size;
}

after(() => {
  const rows = results.map(
    (r) =>
      `${r.model.padEnd(18)} ${r.c.name.slice(0, 28).padEnd(28)} ${String(r.c.elements).padStart(8)}  ` +
      `${r.c.maxAbs.toExponential(2).padStart(9)}  ${r.c.maxRel.toExponential(2).padStart(9)}  ${r.c.atol.toExponential(2).padStart(9)}  ` +
      `${String(r.c.bad).padStart(4)}  ${r.compileS.toFixed(0).padStart(4)} s`,
  );
  console.log(
    ['model              output                       elements    max abs    max rel       atol   bad  compile', ...rows].join('\n'),
  );
  rmSync(root, { recursive: true, force: true });
});

for (const zc of selected()) {
  test(`${zc.name}: every kept version of every layer matches ONNX Runtime on a seeded input`, { timeout: 900_000 }, async () => {
    const model = join(root, `${zc.name}.onnx`);
    const bundle = join(root, `${zc.name}.bundle`);
    await writeZooModel(zc.name, model, zc.options);
    const workloads = await twoVersionDatabase(model);
    const t0 = Date.now();
    // Only this test's own records: the shipped ones (real latencies for some host types) would join the families.
    const compiled = await compileFixture(
      model,
      { output: bundle, db: dbDir, shippedRecords: false, trials: 2, levels: LEVELS, threads: [1], maxVersions: 2, profileThreads: [] },
      cache,
    );
    assert.equal(compiled.measured, 0, 'every trial came from the database');
    const compileS = (Date.now() - t0) / 1000;
    const session = await loadBundle(bundle);
    try {
      assert.ok(
        session.tunableLayers.length > 0 && session.tunableLayers.every((t) => t.versions.length === 2),
        `every tunable layer keeps two versions (${workloads} workloads): ${session.tunableLayers.map((t) => t.versions.length).join(',')}`,
      );
      const vectors = LEVELS.map((l) => session.versionsForLevel(l));
      session.tunableLayers.forEach((t, i) =>
        assert.deepEqual(
          new Set(vectors.map((v) => v[i])),
          new Set([0, 1]),
          `layer ${t.layer}: the level vectors between them run both of its versions`,
        ),
      );
      const feeds = seededFeeds(session.inputs, 11);
      const ref = await ortOutputs(model, feeds);
      for (const [l, vector] of vectors.entries()) {
        session.useVersions(vector);
        assert.deepEqual(
          [...session.executor.runningVersions()].filter((v) => v >= 0),
          vector,
          `the executor runs level ${l}'s vector`,
        );
        const ours = await session.run(feeds);
        assert.deepEqual(Object.keys(ours).sort(), Object.keys(ref).sort(), 'the same outputs');
        for (const o of session.outputs) {
          assert.deepEqual(ours[o.name]!.shape, ref[o.name]!.shape, `${o.name} shape`);
          const c = compareTensors(`${o.name}@L${l}`, ours[o.name]!.data, ref[o.name]!.data as Float32Array);
          results.push({ model: zc.name, compileS, c });
          assert.equal(c.bad, 0, `${zc.name}, level ${l}'s versions: ${describeComparison(c)}`);
          assert.ok(Number.isFinite(c.maxAbs));
        }
      }
    } finally {
      session.close();
      rmSync(model, { force: true });
      rmSync(bundle, { recursive: true, force: true });
    }
  });
}
