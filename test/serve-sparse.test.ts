/**
 * A model with a sparse output layer served on loopback: under `veltair load` (another process,
 * open loop, far above what the dense version serves) its queue would miss QoS, so answers move
 * down the sparsity family (sparser, faster); when requests come one at a time again they move
 * back up to dense (after the hold that follows a move down) and stay there. Which version answered, and its recall, is in every response's parameters and
 * in /metrics. The moves follow the model's own estimates (queue × per-request time against
 * QoS = 2 × that time) and, after a move down, a hold; the test's clock bounds its waiting only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parsePolicy } from '../src/schedule/policies.js';
import { createMetrics } from '../src/serve/metrics.js';
import { setupDispatcher } from '../src/serve/setup.js';
import { startServer, type RunningServer } from '../src/serve/start.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { veltair } from './compile-fixture.js';
import { post } from './serve-fixture.js';
import { compilePlanted, FEATURES, writePlantedHead } from './sparse-head-fixture.js';

let work: string;
let server: RunningServer;
const MAX_QUEUE = 500;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'veltair-serve-sparse-'));
  // 40 000 classes: the dense output layer takes a few ms, so a burst queues behind it even on a fast machine.
  const planted = await writePlantedHead(work, 40_000);
  const bundle = join(work, 'planted.bundle');
  await compilePlanted(planted, bundle);
  const metrics = createMetrics();
  const setup = await setupDispatcher({
    models: [{ name: 'planted', bundle, priority: 1, maxQueue: MAX_QUEUE }],
    policy: parsePolicy('veltair'),
    cpus: availableCores(),
    metrics,
    qosMultiple: 2,
  });
  server = await startServer({ backend: setup.dispatcher, metrics, host: '127.0.0.1', port: 0, bodyLimit: 1 << 20 });
});
after(async () => {
  await server?.stop();
  await rm(work, { recursive: true, force: true });
});

type Answer = { outputs: { name: string; data: number[] }[]; parameters: Record<string, unknown> };
const request = (i: number) => ({
  inputs: [
    {
      name: 'features',
      shape: [1, FEATURES],
      datatype: 'FP32',
      data: Array.from({ length: FEATURES }, (_, j) => ((i * 31 + j * 7) % 13 === 0 ? 1 : 0)),
    },
  ],
});
const infer = async (i: number): Promise<Answer> => {
  const r = await post(`${server.url}/v2/models/planted/infer`, request(i));
  assert.equal(r.status, 200, Buffer.from(r.bytes).toString());
  return r.json() as Answer;
};
const metricValue = (text: string, name: string, labels: string) =>
  Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 'NaN');

test("the model's outputs are the top-k pair, and each answer says which version answered and its recall", async () => {
  const meta = (await (await fetch(`${server.url}/v2/models/planted`)).json()) as { outputs: { name: string; datatype: string }[] };
  assert.deepEqual(
    meta.outputs.map((o) => [o.name, o.datatype]),
    [
      ['scores_topk_values', 'FP32'],
      ['scores_topk_indices', 'INT64'],
    ],
  );
  const a = await infer(0);
  assert.equal(a.parameters['veltair_sparse_version'], 's1');
  assert.equal(a.parameters['veltair_sparse_recall_at1'], 1);
  assert.equal(a.outputs.find((o) => o.name === 'scores_topk_indices')!.data.length, 5);
});

test('overload moves answers down the sparsity family; one request at a time moves them back up to dense', async () => {
  const load = await veltair(['load', server.url, '--models', 'planted', '--qps', '1500', '--duration', '1', '--json']);
  assert.equal(load.exitCode, 0, load.stderr);
  let text = await (await fetch(`${server.url}/metrics`)).text();
  assert.ok(metricValue(text, 'veltair_sparse_moves_total', 'model="planted",direction="down"') >= 1, 'a move down is counted');
  const sparseAnswers = ['s0.05', 's0.01', 's0.005'].map(
    (v) => metricValue(text, 'veltair_sparse_answers_total', `model="planted",version="${v}"`) || 0,
  );
  assert.ok(
    sparseAnswers.some((n) => n > 0),
    `sparse versions answered: ${sparseAnswers.join(',')}`,
  );

  // One request at a time: once the hold after the last move down is over (at most MAX_HOLD_QOS × QoS, well under a second here),
  // the probe up holds. The deadline bounds the wait only; nothing is asserted about how long it took.
  let last: Answer | undefined;
  let sent = 0;
  const deadline = Date.now() + 60_000;
  for (; Date.now() < deadline && last?.parameters['veltair_sparse_version'] !== 's1'; sent++) last = await infer(1000 + sent);
  assert.equal(last!.parameters['veltair_sparse_version'], 's1', `back on the dense version once the queue is gone (${sent} requests)`);
  for (let i = 0; i < 20; i++) last = await infer(5000 + i);
  assert.equal(last!.parameters['veltair_sparse_version'], 's1', 'and it stays there: a closed-loop client is not an overload');
  text = await (await fetch(`${server.url}/metrics`)).text();
  assert.ok(metricValue(text, 'veltair_sparse_moves_total', 'model="planted",direction="up"') >= 1, 'a move up is counted');
  assert.equal(metricValue(text, 'veltair_sparse_sparsity', 'model="planted"'), 1);
  assert.equal(metricValue(text, 'veltair_sparse_recall_at1', 'model="planted"'), 1);
  assert.ok(metricValue(text, 'veltair_sparse_answers_total', 'model="planted",version="s1"') >= 20);
});
