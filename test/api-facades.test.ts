/**
 * serve, simulate and train through the package entry: serve answers a KServe v2 inference with
 * what ONNX Runtime computes and stops cleanly; simulate returns the very points `veltair
 * simulate --json` prints for the same settings; train writes a model and one epoch's record.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { serve, simulate, train } from '../src/index.js';
import { encodeModel } from '../src/onnx/encode.js';
import { profileText } from '../src/schedule/scheduling-profile.js';
import { availableCores } from '../src/toolchain/cpu.js';
import { compileFixture, tinyModelSpec, veltair } from './compile-fixture.js';
import { handProfile, JAGGED } from './schedule-fixture.js';
import { assertClose, ortRun, post } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-api-facades-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('serve: a bundle served in this process answers what ONNX Runtime computes, then stops', { timeout: 600_000 }, async () => {
  const model = join(root, 'tiny.onnx');
  writeFileSync(model, encodeModel(tinyModelSpec()));
  const bundle = join(root, 'tiny.bundle');
  await compileFixture(model, {
    output: bundle,
    trials: 1,
    levels: [0],
    maxVersions: 1,
    threads: [1],
    profileThreads: [],
    db: join(root, 'db'),
  });
  const notes: string[] = [];
  const server = await serve({ bundles: [bundle], port: 0, cpus: availableCores().slice(0, 1), onNote: (m) => notes.push(m) });
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const x = Array.from({ length: 3 * 8 * 8 }, (_, i) => Math.sin(i * 0.1));
    const r = await post(`${server.url}/v2/models/tiny/infer`, {
      inputs: [{ name: 'input', shape: [1, 3, 8, 8], datatype: 'FP32', data: x }],
    });
    assert.equal(r.status, 200, Buffer.from(r.bytes).toString());
    const body = r.json() as { outputs: { name: string; data: number[] }[] };
    const want = await ortRun(model, { input: { dtype: 'float32', shape: [1, 3, 8, 8], data: Float32Array.from(x) } });
    assertClose(body.outputs[0]!.data, want['output']!, 'served output');
    assert.ok(
      notes.some((n) => n.includes('tiny')),
      notes.join('\n'),
    );
  } finally {
    await server.stop();
  }
  await server.closed;
});

test('simulate returns the points veltair simulate --json prints for the same settings', async () => {
  const dir = join(root, 'profiles');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  for (const name of ['resnet50', 'googlenet'])
    writeFileSync(join(dir, `${name}.profile.json`), profileText(handProfile(name, JAGGED, 16, 20)));
  const options = {
    profiles: [dir],
    models: ['resnet50', 'googlenet'],
    cores: 16,
    policies: ['fcfs', 'veltair'],
    load: { kind: 'load', values: [0.2, 0.4] },
    seed: 9,
    durationS: 1,
    warmupS: 0.1,
  } as const;
  const a = simulate(options);
  assert.equal(a.simulated, true);
  assert.equal(a.points.length, 4);
  assert.deepEqual(
    JSON.parse(JSON.stringify(simulate(options).points)),
    JSON.parse(JSON.stringify(a.points)),
    'seeded: the same result twice',
  );
  const cli = await veltair([
    'simulate',
    '--profiles',
    dir,
    '--models',
    'resnet50,googlenet',
    '--cores',
    '16',
    '--policy',
    'fcfs,veltair',
    '--load',
    '0.2,0.4',
    '--seed',
    '9',
    '--duration',
    '1',
    '--warmup',
    '0.1',
    '--json',
  ]);
  assert.equal(cli.exitCode, 0, cli.stderr);
  const printed = JSON.parse(cli.stdout) as { label: string; points: unknown[] };
  assert.equal(a.label, printed.label);
  assert.deepEqual(JSON.parse(JSON.stringify(a.points)), printed.points);
});

test('train writes the model and one record per epoch', { timeout: 600_000 }, async () => {
  const data = join(root, 'data');
  const made = await veltair(['data', 'planted', '-o', data, '--labels', '200', '--features', '100', '--train', '400', '--test', '100']);
  assert.equal(made.exitCode, 0, made.stderr);
  const epochs: number[] = [];
  const summary = await train({
    spec: {
      input: 100,
      layers: [
        { dim: 16, activation: 'relu' },
        { dim: 200, activation: 'softmax' },
      ],
    },
    train: join(data, 'train.txt'),
    eval: join(data, 'test.txt'),
    output: join(root, 'run'),
    epochs: 1,
    threads: 1,
    onEpoch: (r) => epochs.push(r.epoch),
  });
  assert.deepEqual(epochs, [1]);
  assert.equal(summary.history.length, 1);
  assert.ok(existsSync(summary.model), summary.model);
  const p1 = summary.history[0]!['precision@1'];
  assert.ok(p1 !== null && p1 >= 0 && p1 <= 1);
});
