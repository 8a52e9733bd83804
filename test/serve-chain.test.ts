/**
 * Chained dispatch through the dispatcher and the session: a request's blocks run back to back on
 * its native worker, with the same outputs as the block-by-block path; a chain whose preemption
 * flag is raised ends at a layer boundary and the request goes on from there; a request left
 * waiting by another model's chain preempts it; a step that fails inside the chained part ends its
 * request with its error; cores always come back.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeModel, type ModelSpec } from '../src/onnx/encode.js';
import { loadBundle } from '../src/runtime/session.js';
import type { HostTensor } from '../src/runtime/host-tensor.js';
import { parsePolicy } from '../src/schedule/policies.js';
import { createMetrics, type ServerMetrics } from '../src/serve/metrics.js';
import { setupDispatcher } from '../src/serve/setup.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { compileFixture } from './compile-fixture.js';
import { seeded } from './runtime-harness.js';
import { compileModels, model } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-serve-chain-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** x [16, 8] → Gemm → Gemm → Gather(·, ids) → Gemm: the lookup, which a bad id fails, comes after two layers. */
function lateLookupSpec(): ModelSpec {
  const t = (dims: number[], seed: number) => ({ dtype: 'float32' as const, dims, data: seeded(dims[0]! * (dims[1] ?? 1), seed) });
  return {
    inputs: [
      { name: 'x', dtype: 'float32', shape: [16, 8] },
      { name: 'ids', dtype: 'int64', shape: [1] },
    ],
    outputs: [{ name: 'scores', dtype: 'float32', shape: [1, 5] }],
    initializers: [
      ['w', t([5, 8], 4)],
      ['b', t([5], 5)],
      ['w0', t([8, 8], 6)],
      ['w1', t([8, 8], 7)],
    ],
    nodes: [
      { op: 'Gemm', inputs: ['x', 'w0'], outputs: ['r0'], attrs: { transB: 1 } },
      { op: 'Gemm', inputs: ['r0', 'w1'], outputs: ['r1'], attrs: { transB: 1 } },
      { op: 'Gather', inputs: ['r1', 'ids'], outputs: ['e'], attrs: { axis: 0 } },
      { op: 'Gemm', inputs: ['e', 'w', 'b'], outputs: ['scores'], attrs: { transB: 1 } },
    ],
  };
}

let bundles: Record<string, string> = {};
before(
  async () => {
    bundles = await compileModels(root, ['slow', 'tiny']);
    const onnx = join(root, 'late.onnx');
    writeFileSync(onnx, encodeModel(lateLookupSpec()));
    const late = join(root, 'late.bundle');
    await compileFixture(onnx, {
      output: late,
      trials: 1,
      levels: [0],
      maxVersions: 1,
      threads: [1],
      profileThreads: [],
      db: join(root, 'db'),
    });
    bundles['late'] = late;
  },
  { timeout: 600_000 },
);

const slowFeeds = (seed: number) => ({ x: { dtype: 'float32' as const, shape: [1, 3, 40, 40], data: seeded(3 * 40 * 40, seed) } });
const tinyFeeds = { input: { dtype: 'float32' as const, shape: [1, 3, 8, 8], data: seeded(3 * 8 * 8, 4) } };
const values = (t: HostTensor | undefined) => Array.from(t!.data as Float32Array);
const oneCore = () => availableCores().slice(0, 1);
const counter = async (metrics: ServerMetrics, outcome: string) =>
  (await metrics.preemptions.get()).values.filter((v) => v.labels['outcome'] === outcome).reduce((s, v) => s + v.value, 0);
const coresBusy = async (metrics: ServerMetrics) => (await metrics.coresBusy.get()).values[0]?.value ?? 0;

test('a session chain with its flag raised stops at its first stop; the rest runs on; the outputs equal the unchained runs', async () => {
  const session = await loadBundle(bundles['slow']!);
  try {
    const cores = oneCore();
    const end = session.steps.length;
    assert.ok(end >= 3, `the slow model has ${end} steps`);
    const stops = [1, Math.floor(end / 2)].filter((s, i, a) => s > 0 && s < end && (i === 0 || s > a[i - 1]!));
    const feeds = slowFeeds(7);

    const whole = await session.begin(feeds);
    await whole.block(end, { cores });
    const reference = values(whole.finish()['y']);

    const preempted = await session.begin(feeds);
    const first = await preempted.block(end, { cores, stops, preempted: true });
    assert.equal(first.to, stops[0], 'the chain ended at its first stop');
    assert.equal(preempted.next, stops[0]);
    const rest = await preempted.block(end, { cores, stops: stops.slice(1).filter((s) => s > preempted.next) });
    assert.equal(rest.to, end, 'nothing raised the flag: the chain ran through');
    assert.deepEqual(values(preempted.finish()['y']), reference);

    const stepwise = await session.begin(feeds);
    for (const s of [...stops, end]) await stepwise.block(s, { cores });
    assert.deepEqual(values(stepwise.finish()['y']), reference);

    const bad = await session.begin(feeds);
    await assert.rejects(bad.block(end, { cores, stops: [end] }), /strictly between/);
  } finally {
    session.close();
  }
});

test(
  'chained and block-by-block dispatch answer alike; an uninterrupted chained request is one native run',
  { timeout: 600_000 },
  async () => {
    const answers: number[][][] = [];
    const blocks: number[][] = [];
    for (const chain of [false, true]) {
      const { dispatcher } = await setupDispatcher({
        models: [model('slow', bundles['slow']!), model('tiny', bundles['tiny']!)],
        policy: parsePolicy('layerwise'),
        cpus: oneCore(),
        metrics: createMetrics(),
        qosMultiple: 50,
        chain,
      });
      try {
        const outs: number[][] = [];
        const counts: number[] = [];
        for (let i = 0; i < 3; i++) {
          const a = await dispatcher.infer('slow', slowFeeds(20 + i));
          outs.push(values(a.outputs['y']));
          counts.push(a.parameters['veltair_blocks'] as number);
        }
        answers.push(outs);
        blocks.push(counts);
      } finally {
        await dispatcher.close();
      }
    }
    assert.deepEqual(answers[1], answers[0], 'identical outputs');
    assert.ok(
      blocks[0]!.every((b) => b > 1),
      `layer-wise blocks: several per request unchained (${blocks[0]!.join(', ')})`,
    );
    assert.deepEqual(blocks[1], [1, 1, 1], 'chained: one native run (one hand-off) per request');
  },
);

test(
  "another model's waiting request preempts a chain at a layer boundary; both answer right and every core comes back",
  { timeout: 600_000 },
  async () => {
    const reference = await setupDispatcher({
      models: [model('slow', bundles['slow']!), model('tiny', bundles['tiny']!)],
      policy: parsePolicy('layerwise'),
      cpus: oneCore(),
      metrics: createMetrics(),
      qosMultiple: 50,
      chain: false,
    });
    const want = values((await reference.dispatcher.infer('slow', slowFeeds(9))).outputs['y']);
    const wantTiny = values((await reference.dispatcher.infer('tiny', tinyFeeds)).outputs['output']);
    await reference.dispatcher.close();

    const metrics = createMetrics();
    const { dispatcher } = await setupDispatcher({
      models: [model('slow', bundles['slow']!), model('tiny', bundles['tiny']!)],
      policy: parsePolicy('layerwise'),
      cpus: oneCore(),
      metrics,
      qosMultiple: 50,
    });
    try {
      // Both arrive in one tick: the slow request's chain starts, then the tiny one finds the only core held.
      // The raised flag races the chain's end (a small model on a busy host can finish first), so the pair
      // is sent up to five times until one chain stops; every answer is checked.
      let stoppedSlow: Awaited<ReturnType<typeof dispatcher.infer>> | undefined;
      for (let attempt = 0; attempt < 5 && !stoppedSlow; attempt++) {
        const stoppedBefore = await counter(metrics, 'stopped');
        const [slow, tiny] = await Promise.all([dispatcher.infer('slow', slowFeeds(9)), dispatcher.infer('tiny', tinyFeeds)]);
        assert.deepEqual(values(slow.outputs['y']), want);
        assert.deepEqual(values(tiny.outputs['output']), wantTiny);
        if ((await counter(metrics, 'stopped')) > stoppedBefore) stoppedSlow = slow;
      }
      assert.ok((await counter(metrics, 'asked')) >= 1, 'the scheduler asked the chain to stop');
      assert.ok(stoppedSlow, 'a chain stopped at a layer boundary');
      assert.ok((stoppedSlow.parameters['veltair_blocks'] as number) >= 2, 'the slow request went on in another run');
      assert.equal(await coresBusy(metrics), 0, 'every core is back');
      assert.equal(dispatcher.inFlight(), 0);
    } finally {
      await dispatcher.close();
    }
  },
);

test(
  'a step that fails inside the chained part ends its request with its error; the cores come back and the next request answers',
  { timeout: 600_000 },
  async () => {
    const session = await loadBundle(bundles['late']!);
    const gatherStep = session.steps.findIndex((s) => s.kind === 'gather');
    // A scheduling unit is a tunable layer and the steps after it up to the next: two tunable steps before the
    // lookup put it past the first unit, so past a layer-wise committed block, in the chained part.
    const tunableBefore = session.steps.slice(0, Math.max(0, gatherStep)).filter((s) => s.tunable).length;
    session.close();
    const metrics = createMetrics();
    const { dispatcher } = await setupDispatcher({
      models: [model('late', bundles['late']!), model('tiny', bundles['tiny']!)],
      policy: parsePolicy('layerwise'),
      cpus: oneCore(),
      metrics,
      qosMultiple: 50,
    });
    const feeds = (id: bigint) => ({
      x: { dtype: 'float32' as const, shape: [16, 8], data: seeded(16 * 8, 1) },
      ids: { dtype: 'int64' as const, shape: [1], data: BigInt64Array.from([id]) },
    });
    try {
      assert.ok(tunableBefore >= 2, `the lookup (step ${gatherStep}) comes after ${tunableBefore} tunable steps`);
      await assert.rejects(dispatcher.infer('late', feeds(99n)), (e: unknown) => (e as { code?: string }).code === 'BAD_INPUT');
      assert.equal(await coresBusy(metrics), 0, 'the failed chain gave its core back');
      const ok = await dispatcher.infer('late', feeds(2n));
      assert.equal(ok.outputs['scores']!.data.length, 5);
      assert.equal(dispatcher.inFlight(), 0);
    } finally {
      await dispatcher.close();
    }
  },
);
