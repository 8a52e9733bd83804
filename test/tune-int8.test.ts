/**
 * INT8 tuning into families: each quantized conv / matmul of a small quantized CNN gets candidates
 * on the fastest INT8 path this CPU runs (and AVX2 beside it), each checked exactly against the
 * integer reference before its time counts, and a family of at most five non-dominated versions.
 * A tiny window keeps the test short; what is pinned is the flow, not the timings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { int8TuningPaths, tuneInt8Layer } from '../src/tune/int8-tune.js';
import { int8PathsAt } from '../src/toolchain/isa.js';
import { flagsFor } from '../src/toolchain/flags.js';
import { isInt8KernelLayer } from '../src/bundle/plan-quant.js';
import { referenceOfU8 } from '../src/quantize/reference.js';
import { smallCnn } from './quantize-fixture.js';
import { quantizedGraph } from './int8-runtime-fixture.js';

test('the tuned paths: the fastest, and AVX2 beside a faster one', () => {
  assert.deepEqual(int8TuningPaths(['avx512vnni', 'avx2', 'scalar']), ['avx512vnni', 'avx2']);
  assert.deepEqual(int8TuningPaths(['avx2', 'scalar']), ['avx2']);
  assert.deepEqual(int8TuningPaths(['scalar']), ['scalar']);
});

test('each INT8 layer of a small quantized CNN gets an exact, measured family of at most five versions', { timeout: 300_000 }, async () => {
  const { graph } = await quantizedGraph(smallCnn(), 8, 0);
  const layers = graph.layers.filter(isInt8KernelLayer);
  assert.equal(layers.length, 3);
  const paths = int8PathsAt('native');
  const notes: string[] = [];
  for (const l of layers) {
    const t = await tuneInt8Layer(l, {
      reference: referenceOfU8,
      paths,
      trials: 8,
      maxVersions: 5,
      threads: 1,
      cflags: flagsFor('kernel'),
      seed: 1,
      minTimeMs: 5,
      onNote: (m) => notes.push(m),
    });
    assert.equal(t.failed, 0, notes.join('\n'));
    assert.ok(t.family.count >= 1 && t.family.count <= 5, `layer ${l.index}: ${t.family.count} versions`);
    for (const v of t.family.versions) {
      assert.ok(v.latencyMs['0']! > 0 && v.repeatsMs['0']!.length >= 3);
      assert.match(v.symbol, /^vt_q[0-9a-f]{16}$/);
    }
    const tuned = int8TuningPaths(paths);
    assert.deepEqual(
      [...new Set(t.family.versions.map((v) => v.schedule.path))].sort(),
      [...tuned].sort(),
      'every tuned path has a member',
    );
  }
});
