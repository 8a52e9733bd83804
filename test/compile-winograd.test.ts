/**
 * A compile of a model with a stride-1 3×3 conv measures a Winograd candidate like any other (it
 * passes the pre-timing reference check and gets a tuning record), the family keeps it or not on
 * its latencies alone, the manifest with whatever it kept validates, and the bundle matches ONNX
 * Runtime. A rerun from the same database measures nothing. With Winograd off, a compile from the
 * same database measures no Winograd candidate and keeps direct versions only.
 */
import { fp32Schedule } from '../src/bundle/manifest.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeModel, type ModelSpec } from '../src/onnx/encode.js';
import { readBundle } from '../src/bundle/read.js';
import { loadBundle } from '../src/runtime/session.js';
import type { Schedule } from '../src/space/knobs.js';
import { compileFixture } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';
import { compareTensors, describeComparison, ortOutputs } from './runtime-session-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-compile-winograd-'));
after(() => rmSync(root, { recursive: true, force: true }));

const SHAPE = [1, 8, 24, 20];
const SPEC: ModelSpec = {
  inputs: [{ name: 'input', dtype: 'float32', shape: SHAPE }],
  outputs: [{ name: 'output', dtype: 'float32' }],
  initializers: [
    ['w1', { dtype: 'float32', dims: [32, 8, 3, 3], data: seeded(32 * 8 * 9, 1, -0.3, 0.3) }],
    ['b1', { dtype: 'float32', dims: [32], data: seeded(32, 2, -0.3, 0.3) }],
    ['w2', { dtype: 'float32', dims: [32, 32, 3, 3], data: seeded(32 * 32 * 9, 3, -0.1, 0.1) }],
    ['b2', { dtype: 'float32', dims: [32], data: seeded(32, 4, -0.3, 0.3) }],
  ],
  nodes: [
    { op: 'Conv', name: 'conv1', inputs: ['input', 'w1', 'b1'], outputs: ['c1'], attrs: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } },
    { op: 'Relu', name: 'relu1', inputs: ['c1'], outputs: ['r1'] },
    { op: 'Conv', name: 'conv2', inputs: ['r1', 'w2', 'b2'], outputs: ['c2'], attrs: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } },
    { op: 'Relu', name: 'relu2', inputs: ['c2'], outputs: ['output'] },
  ],
};

interface RecordLine {
  readonly schedule: Schedule;
  readonly status: string;
}

function recordsIn(db: string): RecordLine[] {
  return readdirSync(db)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(join(db, f), 'utf8').split('\n'))
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as RecordLine);
}

test('a compile measures a Winograd candidate for a 3×3 conv, and its bundle matches ONNX Runtime', { timeout: 600_000 }, async (t) => {
  const bytes = encodeModel(SPEC);
  const db = join(root, 'db');
  const out = join(root, 'wino.bundle');
  const options = {
    output: out,
    db,
    trials: 6,
    levels: [0],
    threads: [1],
    profileThreads: [],
    shippedRecords: false,
    search: 'exhaustive',
  } as const;
  const first = await compileFixture(bytes, options, join(root, 'cache'));
  const wino = recordsIn(db).filter((r) => r.schedule.algo === 'winograd');
  assert.ok(wino.length > 0, 'the Winograd default was among the candidates');
  assert.ok(
    wino.every((r) => r.status === 'ok'),
    `passed the reference check: ${JSON.stringify(wino)}`,
  );
  assert.ok(
    recordsIn(db).some((r) => r.schedule.algo === undefined && r.status === 'ok'),
    'and direct candidates beside it',
  );
  const manifest = (await readBundle(out)).manifest;
  const versions = manifest.layers.flatMap((l) => l.versions);
  const kept = versions.filter((v) => fp32Schedule(v)?.algo === 'winograd').length;
  t.diagnostic(`${kept} of ${versions.length} kept versions are Winograd (kept only where not dominated)`);

  const s = await loadBundle(out);
  try {
    const x = seeded(8 * 24 * 20, 3, -1, 1);
    const got = (await s.run({ input: x }))['output']!.data as Float32Array;
    const ref = (await ortOutputs(bytes, { input: { dtype: 'float32', shape: SHAPE, data: x } }))['output']!.data as Float32Array;
    const c = compareTensors('output', got, ref);
    assert.equal(c.bad, 0, describeComparison(c));
  } finally {
    s.close();
  }
  const again = await compileFixture(bytes, { ...options, output: join(root, 'again.bundle') }, join(root, 'cache'));
  assert.equal(again.measured, 0, 'a rerun from the same database measures nothing');
  assert.ok(first.measured > 0);
});

test('with winograd off (--no-winograd) a compile from the same database keeps direct versions only', { timeout: 600_000 }, async () => {
  const bytes = encodeModel(SPEC);
  const db = join(root, 'db-off');
  const cache = join(root, 'cache');
  const base = { db, trials: 6, levels: [0], threads: [1], profileThreads: [], shippedRecords: false, search: 'exhaustive' } as const;
  await compileFixture(bytes, { ...base, output: join(root, 'on.bundle') }, cache);
  const winoBefore = recordsIn(db).filter((r) => r.schedule.algo === 'winograd').length;
  assert.ok(winoBefore > 0);
  const out = join(root, 'off.bundle');
  await compileFixture(bytes, { ...base, output: out, winograd: false }, cache);
  assert.equal(recordsIn(db).filter((r) => r.schedule.algo === 'winograd').length, winoBefore, 'no Winograd candidate measured');
  const versions = (await readBundle(out)).manifest.layers.flatMap((l) => l.versions);
  assert.ok(
    versions.length > 0 && versions.every((v) => fp32Schedule(v)?.algo === undefined),
    JSON.stringify(versions.map((v) => v.schedule)),
  );
  const s = await loadBundle(out);
  try {
    const x = seeded(8 * 24 * 20, 5, -1, 1);
    const got = (await s.run({ input: x }))['output']!.data as Float32Array;
    const ref = (await ortOutputs(bytes, { input: { dtype: 'float32', shape: SHAPE, data: x } }))['output']!.data as Float32Array;
    const c = compareTensors('output', got, ref);
    assert.equal(c.bad, 0, describeComparison(c));
  } finally {
    s.close();
  }
});
