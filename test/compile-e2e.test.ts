/**
 * `veltair compile` end to end on a tiny model (conv+relu, flatten, gemm) with a temp database and
 * cache: a valid bundle whose every file matches its hash, a rerun from the same database that
 * measures nothing and writes the same manifest bytes, and the CI recipe (shards → merge → compile).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { readBundle } from '../src/bundle/read.js';
import { manifestSchemaProblem } from '../src/bundle/schema.js';
import { fp32Schedule, type Manifest } from '../src/bundle/manifest.js';
import { encodeModel } from '../src/onnx/encode.js';
import { tinyModelSpec, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-compile-e2e-'));
after(() => rmSync(root, { recursive: true, force: true }));
const env = { VELTAIR_CACHE_DIR: join(root, 'cache') };
const model = join(root, 'tiny.onnx');
writeFileSync(model, encodeModel(tinyModelSpec()));
const budget = ['--trials', '2', '--levels', '0', '--max-versions', '2'];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

test('compile writes a valid bundle; a rerun from the same database measures 0 and writes the same manifest bytes', async () => {
  const db = join(root, 'db');
  mkdirSync(db);
  writeFileSync(join(db, 'records.jsonl'), '{"this is": "not a record"\n');
  const out = join(root, 'tiny.bundle');
  const first = await veltair(['compile', model, '-o', out, '--db', db, ...budget, '--json'], env);
  assert.equal(first.exitCode, 0, first.stderr);
  assert.match(first.stderr, /warning: .*corrupt/i, 'the corrupt database line is skipped with a warning');
  const summary = JSON.parse(first.stdout);
  assert.deepEqual(Object.keys(summary), [
    'bundle',
    'layers',
    'tunableLayers',
    'versionsHistogram',
    'measured',
    'dbHits',
    'raced',
    'tuningSeconds',
    'tuningPhases',
    'perLevelRegret',
    'transfer',
  ]);
  const phases = summary.tuningPhases as Record<string, number>;
  assert.deepEqual(Object.keys(phases), ['warmup', 'searchBuild', 'searchRace', 'searchMeasure', 'profileBuild', 'profileMeasure']);
  assert.ok(
    Object.values(phases).every((s) => s >= 0),
    'every phase took some time or none',
  );
  assert.ok(phases['searchMeasure']! > 0, 'the candidates measured were measured in the search phase');
  // The phases are disjoint parts of the pass (rounded to the millisecond each).
  assert.ok(Object.values(phases).reduce((a, b) => a + b, 0) <= summary.tuningSeconds + 0.005, 'the phases add up to at most the pass');
  assert.equal(summary.bundle, out);
  assert.equal(summary.layers, 3);
  assert.equal(summary.tunableLayers, 2);
  assert.ok(summary.measured >= 4, `two workloads × 2 trials measured (${summary.measured})`);
  assert.deepEqual(Object.keys(summary.perLevelRegret), ['0']);
  assert.equal(
    Object.values(summary.versionsHistogram as Record<string, number>).reduce((a, b) => a + b, 0),
    2,
  );

  const { manifest } = await readBundle(out);
  assert.equal(manifestSchemaProblem(manifest), undefined);
  // every file but the manifest is listed, with its real size and sha256
  assert.deepEqual(filesUnder(out), ['manifest.json', ...Object.keys(manifest.files)].sort());
  for (const [rel, f] of Object.entries(manifest.files)) {
    const bytes = readFileSync(join(out, rel));
    assert.equal(bytes.length, f.bytes, rel);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), f.sha256, rel);
  }
  checkContent(manifest, readFileSync(join(out, 'manifest.json'), 'utf8'));

  const manifestBytes = readFileSync(join(out, 'manifest.json'));
  const again = await veltair(['compile', model, '-o', out, '--db', db, ...budget, '--json', '--force'], env);
  assert.equal(again.exitCode, 0, again.stderr);
  const s2 = JSON.parse(again.stdout);
  assert.equal(s2.measured, 0);
  // The rerun replays every search trial from the database; profiling at the other thread counts may
  // have taken more rounds the first time (families settling), so its hits are at most the first run's lookups.
  assert.ok(
    s2.dbHits >= 4 && s2.dbHits <= summary.measured + summary.dbHits,
    `hits ${s2.dbHits} vs first ${summary.measured}+${summary.dbHits}`,
  );
  assert.ok(readFileSync(join(out, 'manifest.json')).equals(manifestBytes), 'byte-identical manifest.json');
});

test('a compile resumes from the records this target holds: another search seed measures nothing; a larger budget only the difference', async () => {
  const db = join(root, 'db-resume');
  const args = (trials: number, seed: number) => [
    'compile',
    model,
    '-o',
    join(root, `resume-${trials}-${seed}.bundle`),
    '--db',
    db,
    '--trials',
    String(trials),
    '--levels',
    '0',
    '--seed',
    String(seed),
    '--threads',
    '1',
    '--profile-threads',
    'none',
    '--json',
  ];
  const first = await veltair(args(5, 1), env);
  assert.equal(first.exitCode, 0, first.stderr);
  const measured = JSON.parse(first.stdout).measured as number;
  assert.ok(measured >= 8, `two workloads × 5 trials (${measured})`);
  // Seed 2 would propose other random schedules after the presets: the records already fill the budget.
  const other = await veltair(args(5, 2), env);
  assert.equal(other.exitCode, 0, other.stderr);
  assert.equal(JSON.parse(other.stdout).measured, 0);
  assert.equal(JSON.parse(other.stdout).dbHits, measured);
  const more = await veltair(args(6, 2), env);
  assert.equal(more.exitCode, 0, more.stderr);
  assert.ok(JSON.parse(more.stdout).measured >= 1 && JSON.parse(more.stdout).measured <= 2, `one more trial per workload (${more.stdout})`);
});

function checkContent(m: Manifest, text: string) {
  assert.equal(m.model.path, 'tiny.onnx');
  assert.ok(!text.includes(root), 'no absolute build paths in the manifest');
  assert.equal(m.formatVersion, '2.4.0');
  assert.deepEqual(m.options.threads, [...new Set([1, Math.min(2, m.target.spec.cores)])], 'tuned at every count 1..cores by default');
  const [conv, flat, dense] = m.layers;
  assert.equal(conv!.op, 'conv2d');
  assert.equal(flat!.name, '../../etc/passwd', 'a model-supplied name is only a JSON string');
  assert.equal(dense!.op, 'dense');
  for (const l of [conv!, dense!]) {
    const counts = [...new Set(l.versions.map((v) => v.threads))];
    assert.deepEqual(counts, m.options.threads, 'one family per tuned thread count');
    for (const t of counts) assert.ok(l.versions.filter((v) => v.threads === t).length <= 2, '--max-versions 2 per count');
    assert.ok(l.params['bias'], 'bias ships raw in params.bin');
    assert.equal(l.params['weight'], undefined, 'the weight ships packed, per version');
    const usable = l.versions.filter((v) => v.inPlan);
    assert.ok(usable.length >= 1);
    for (const v of usable) {
      assert.equal(fp32Schedule(v)?.vec, m.graphPlan.vectorWidth);
      assert.ok(v.packedWeight && v.packedWeight.length > 0 && v.packedWeight.offset % 64 === 0);
      assert.ok(Object.keys(v.latencyMs).length > 0);
    }
  }
  // Before the flatten and at the output; the 3-channel stem reads the graph input as it is.
  assert.equal(m.graphPlan.steps.filter((s) => s.op === 'reorder').length, 2);
}

test('CI recipe: two shards tune into their own databases, merge, and the final compile measures nothing', async () => {
  const shardDbs = [join(root, 'shard0'), join(root, 'shard1')];
  const outs = await Promise.all(
    [0, 1].map((i) => veltair(['compile', model, '--db', shardDbs[i]!, '--shard', `${i}/2`, ...budget, '--seed', '7', '--json'], env)),
  );
  for (const r of outs) {
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).bundle, null, 'a shard writes no bundle');
  }
  assert.deepEqual(readdirSync(shardDbs[0]!), ['shard-0-of-2.jsonl']);
  const merged = join(root, 'merged');
  const m = await veltair(['db', 'merge', ...shardDbs, '-o', merged], env);
  assert.equal(m.exitCode, 0, m.stderr);
  const out = join(root, 'ci.bundle');
  const final = await veltair(['compile', model, '-o', out, '--db', merged, ...budget, '--seed', '7', '--json'], env);
  assert.equal(final.exitCode, 0, final.stderr);
  assert.equal(JSON.parse(final.stdout).measured, 0);
  assert.ok(existsSync(join(out, 'manifest.json')));
});
