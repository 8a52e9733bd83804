/**
 * A bundle's sparse output layer (the "head") on a planted model whose right answers are known:
 * the sparsity-1 version is the dense layer exactly, every recall the bundle reports is what the
 * session's answers give when recomputed here, and an accuracy floor picks the fastest version
 * meeting it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadBundle, type Session } from '../src/runtime/session.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { HEAD_BIN, HEAD_JSON, type HeadMeta } from '../src/sparse-head/format.js';
import { readXc, type XcDataset } from '../src/sparse/xc-reader.js';
import { assertOneClearError, veltair } from './compile-fixture.js';
import {
  CALIBRATION_ROWS,
  compileArgs,
  compilePlanted,
  FEATURES,
  LABELS,
  writePlantedHead,
  type PlantedHead,
} from './sparse-head-fixture.js';

let work: string;
let planted: PlantedHead;
let bundle: string;
let denseBundle: string;
let calibration: XcDataset;
let meta: HeadMeta;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'veltair-sparse-head-'));
  planted = await writePlantedHead(work);
  bundle = join(work, 'sparse.bundle');
  denseBundle = join(work, 'dense.bundle');
  await compilePlanted(planted, bundle);
  await compilePlanted(planted, denseBundle, { sparse: false });
  calibration = await readXc(planted.calibration, { inputDim: FEATURES, outputDim: LABELS });
  meta = JSON.parse(await readFile(join(bundle, HEAD_JSON), 'utf8')) as HeadMeta;
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

const rowInput = (r: number): Float32Array => {
  const x = new Float32Array(FEATURES);
  for (let p = calibration.row[r]!; p < calibration.row[r + 1]!; p++) x[calibration.idx[p]!] = calibration.val[p]!;
  return x;
};
const labelsOf = (r: number) => Array.from(calibration.labels.subarray(calibration.lrow[r]!, calibration.lrow[r + 1]!));

function topOf(s: Session, x: Float32Array): { values: Float32Array; indices: number[] } {
  const out = s.runSync({ features: { dtype: 'float32', shape: [1, FEATURES], data: x } });
  return {
    values: out['scores_topk_values']!.data as Float32Array,
    indices: Array.from(out['scores_topk_indices']!.data as BigInt64Array, Number),
  };
}

/** float64 scores of every class, from the weights the fixture planted. */
function referenceScores(x: Float32Array): Float64Array {
  const s = new Float64Array(LABELS);
  for (let c = 0; c < LABELS; c++) {
    let acc = 0;
    for (let j = 0; j < FEATURES; j++) acc += planted.weight[c * FEATURES + j]! * x[j]!;
    s[c] = acc;
  }
  return s;
}

test('the bundle keeps a sparse family: hashed files, a dense version, 64-byte aligned arrays, top-k outputs', async () => {
  const manifest = JSON.parse(await readFile(join(bundle, 'manifest.json'), 'utf8')) as { files: Record<string, unknown> };
  assert.ok(HEAD_JSON in manifest.files && HEAD_BIN in manifest.files, "the head's files are hashed in the manifest");
  assert.equal(meta.layer.n, LABELS);
  assert.equal(meta.calibration.source, 'file');
  assert.equal(meta.calibration.rows, CALIBRATION_ROWS);
  assert.deepEqual(
    meta.versions.map((v) => v.sparsity),
    [1, 0.05, 0.01, 0.005],
  );
  assert.ok(meta.versions.find((v) => v.sparsity === 1)!.kept);
  for (const b of Object.values(meta.blobs)) assert.equal(b.offset % 64, 0);
  // each version's share of the always list (chosen on the calibration rows) lies within its budget and the list
  const listed = meta.blobs.always ? meta.blobs.always.bytes / 4 : 0;
  for (const v of meta.versions) {
    assert.ok(Number.isInteger(v.always) && v.always! >= 0 && v.always! <= listed, `${v.id}: always ${v.always} of ${listed}`);
    assert.ok(v.sparsity === 1 ? v.always === 0 : v.always! <= v.budget, `${v.id}: always ${v.always}, budget ${v.budget}`);
  }
  const s = await loadBundle(bundle);
  try {
    assert.deepEqual(
      s.outputs.map((o) => [o.name, o.dtype, o.shape]),
      [
        ['scores_topk_values', 'float32', [1, 5]],
        ['scores_topk_indices', 'int64', [1, 5]],
      ],
    );
    assert.equal(s.sparse!.versions[s.sparse!.current]!.sparsity, 1, 'no floor: the densest version');
  } finally {
    s.close();
  }
});

test("the sparsity-1 version is the dense layer: the reference top-5 and the --no-sparse bundle's ranking", async () => {
  const s = await loadBundle(bundle);
  const dense = await loadBundle(denseBundle);
  try {
    for (let r = 0; r < 40; r++) {
      const x = rowInput(r);
      const got = topOf(s, x);
      const ref = referenceScores(x);
      got.indices.forEach((c, j) =>
        assert.ok(Math.abs(got.values[j]! - ref[c]!) <= 1e-5 * (1 + Math.abs(ref[c]!)), `row ${r}: class ${c} score`),
      );
      const best = [...ref.keys()].sort((a, b) => ref[b]! - ref[a]! || a - b).slice(0, 5);
      // Near-ties may order differently in float32; the ranks must agree wherever the float64 gap is clear.
      best.forEach((c, j) => {
        if (j === 4 || ref[c]! - ref[best[j + 1]!]! > 1e-4) assert.equal(got.indices[j], c, `row ${r} rank ${j}`);
      });
      const probs = dense.runSync({ features: { dtype: 'float32', shape: [1, FEATURES], data: x } })['scores']!.data as Float32Array;
      const denseTop = [...probs.keys()].sort((a, b) => probs[b]! - probs[a]! || a - b)[0];
      if (ref[best[0]!]! - ref[best[1]!]! > 1e-4) assert.equal(got.indices[0], denseTop, `row ${r}: top-1 of the dense bundle`);
    }
  } finally {
    s.close();
    dense.close();
  }
});

test("recall is measured: recomputed from the session's answers it is what the bundle reports, and sparse scores are the dense ones bit for bit", async () => {
  const s = await loadBundle(bundle);
  try {
    const versions = s.sparse!.versions;
    const answers = versions.map((_, i) => {
      s.sparse!.use(i);
      return Array.from({ length: CALIBRATION_ROWS }, (__, r) => topOf(s, rowInput(r)));
    });
    const dense = answers[0]!;
    versions.forEach((v, i) => {
      let hit1 = 0,
        hit5 = 0,
        right = 0;
      answers[i]!.forEach((a, r) => {
        if (a.indices[0] === dense[r]!.indices[0]) hit1++;
        hit5 += a.indices.filter((c) => dense[r]!.indices.includes(c)).length;
        if (labelsOf(r).includes(a.indices[0]!)) right++;
        a.indices.forEach((c, j) => {
          const k = dense[r]!.indices.indexOf(c);
          if (k >= 0) assert.ok(Object.is(a.values[j], dense[r]!.values[k]), `${v.id} row ${r}: class ${c} scored as dense`);
        });
      });
      assert.equal(v.recallAt1, hit1 / CALIBRATION_ROWS, `${v.id} recall@1`);
      assert.equal(v.recallAt5, hit5 / (5 * CALIBRATION_ROWS), `${v.id} recall@5`);
      assert.equal(v.precisionAt1, right / CALIBRATION_ROWS, `${v.id} precision@1`);
    });
    // The planted labels are the right answers: the dense layer finds most of them, and the sparsest version does not find them all.
    assert.ok(versions[0]!.precisionAt1! >= 0.6, `dense precision@1 ${versions[0]!.precisionAt1}`);
    const all = meta.versions;
    assert.ok(
      all.some((v) => v.recallAt1 < 1),
      "a sparse version misses some of dense's answers (recall is not assumed to be 1)",
    );
  } finally {
    s.close();
  }
});

test('finishPlan frees the session, then runs the head off the event loop with the same answers as runSync, one query at a time', async () => {
  const s = await loadBundle(bundle);
  try {
    const cores = [availableCores()[0]!];
    for (let i = 0; i < s.sparse!.versions.length; i++) {
      s.sparse!.use(i);
      for (const r of [0, 1, 2]) {
        const x = rowInput(r);
        const inference = await s.begin({ features: { dtype: 'float32', shape: [1, FEATURES], data: x } });
        if (s.steps.length > 0) await inference.block(s.steps.length, { cores });
        const runHead = inference.finishPlan();
        // The session was free before the head ran: another inference starts at once (a session still held would keep it waiting).
        let timer: NodeJS.Timeout | undefined;
        const held = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('the session was still held')), 10_000);
        });
        const second = await Promise.race([s.begin({ features: { dtype: 'float32', shape: [1, FEATURES], data: x } }), held]);
        clearTimeout(timer);
        second.abort();
        const pending = runHead();
        assert.throws(
          () => topOf(s, x),
          /synchronously while an asynchronous query ran/,
          'a synchronous query waits for no one: it is refused',
        );
        const out = await pending;
        const sync = topOf(s, x);
        assert.deepEqual(Array.from(out['scores_topk_indices']!.data as BigInt64Array, Number), sync.indices, `version ${i} row ${r}`);
        assert.deepEqual(Array.from(out['scores_topk_values']!.data as Float32Array), Array.from(sync.values));
      }
    }
  } finally {
    s.close();
  }
});

test('an accuracy floor runs the fastest kept version meeting it; a floor outside [0, 1] is refused', async () => {
  const kept = meta.versions.filter((v) => v.kept);
  const floor = Math.min(...kept.map((v) => v.recallAt1));
  const want = kept.filter((v) => v.recallAt1 >= floor).sort((a, b) => a.latencyMs['0']! - b.latencyMs['0']!)[0]!;
  const s = await loadBundle(bundle, { sparse: { minRecallAt1: floor } });
  try {
    assert.equal(s.sparse!.versions[s.sparse!.current]!.id, want.id);
    assert.equal(s.sparse!.versions[s.sparse!.pick({ minRecallAt1: 1 })]!.sparsity, 1, 'a floor of 1: only dense meets it');
  } finally {
    s.close();
  }
  await assert.rejects(loadBundle(bundle, { sparse: { minRecallAt1: 1.5 } }), (e: Error & { code?: string }) => e.code === 'BAD_ARGUMENT');
});

test('veltair plot --sparse draws the recall–latency frontier with the kept versions marked, and writes its rows', async () => {
  const svg = join(work, 'frontier.svg');
  const csv = join(work, 'frontier.csv');
  const r = await veltair(['plot', bundle, '--sparse', '-o', svg, '--data', csv, '--json']);
  assert.equal(r.exitCode, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { points: number; versions: number };
  assert.equal(summary.points, meta.versions.length);
  assert.equal(summary.versions, meta.versions.filter((v) => v.kept).length);
  const text = await readFile(svg, 'utf8');
  for (const v of meta.versions) assert.ok(text.includes(`>${v.id}<`), `the figure labels ${v.id}`);
  const rows = (await readFile(csv, 'utf8')).trim().split('\r\n');
  assert.equal(rows.length, 1 + meta.versions.length);
  assert.ok(rows[0]!.includes('kept') && rows[0]!.includes('recallAt1'));
  assertOneClearError(await veltair(['plot', denseBundle, '--sparse', '-o', join(work, 'never.svg')]), 'BAD_ARGUMENT', [
    'no sparse output layer',
  ]);
  const html = join(work, 'report.html');
  const report = await veltair(['report', bundle, '-o', html, '--json']);
  assert.equal(report.exitCode, 0, report.stderr);
  const page = await readFile(html, 'utf8');
  assert.ok(page.includes('id="sparse"') && page.includes('id="fig-sparse"'), 'the report has the sparse section and its figure');
  assert.ok(!page.includes(work), 'no absolute path of the bundle or its calibration file in the report');
});

test('with --levels 0,1 every version is also timed under the level-1 co-runner', async () => {
  const out = join(work, 'levels.bundle');
  // A child process: this one has loaded pinned runtimes by now, and the co-runner needs the cores they were bound away from.
  const r = await veltair(compileArgs(planted, out, ['--levels', '0,1', '--sparsities', '1,0.01']));
  assert.equal(r.exitCode, 0, r.stderr);
  const m = JSON.parse(await readFile(join(out, HEAD_JSON), 'utf8')) as HeadMeta;
  // One core: no core is left for the co-runner and the compile says so; the figure is then quiet only.
  const want = (await import('../src/toolchain/cpu.js')).availableCores().length > 1 ? [0, 1] : [0];
  assert.deepEqual(m.latencyLevels, want);
  for (const v of m.versions) assert.deepEqual(Object.keys(v.latencyMs).map(Number), want);
});
