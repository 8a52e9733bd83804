/**
 * Checkpoints and resume. A run killed with SIGKILL in the middle of epoch 2 and resumed with
 * --resume ends with exactly the model, hash index and metrics of an uninterrupted run with the
 * same seed on one thread; the kill lost at most that epoch; no later failure (a resume with a
 * changed setting, a new run into the same directory) touches the earlier checkpoint.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { execa } from 'execa';
import { BIN, assertOneClearError, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-train-resume-'));
after(() => rmSync(root, { recursive: true, force: true }));
const data = join(root, 'data');
const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
const args = (out: string) => [
  'train',
  join(data, 'spec.json'),
  join(data, 'train.txt'),
  '--eval',
  join(data, 'test.txt'),
  '-o',
  out,
  '--epochs',
  '3',
  '--sparsity',
  '0.1',
  '--batch',
  '64',
  '--threads',
  '1',
  '--seed',
  '3',
  '--rehash-every',
  '1000',
  '--json',
];
const metrics = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((l) => {
      const r = JSON.parse(l);
      return {
        epoch: r.epoch,
        loss: r.loss,
        p1: r['precision@1'],
        p5: r['precision@5'],
        sparse: r.sparse,
        lsh: { ...r.lsh, indexSeconds: 0 },
      };
    });

let whole: { stdout: string };

before(async () => {
  const g = await veltair([
    'data',
    'planted',
    '-o',
    data,
    '--labels',
    '300',
    '--features',
    '800',
    '--train',
    '3000',
    '--test',
    '300',
    '--hidden',
    '32',
  ]);
  assert.equal(g.exitCode, 0, g.stderr);
  whole = await veltair(args(join(root, 'whole')));
  assert.equal((whole as { exitCode?: number }).exitCode, 0);
});

test('kill -9 in the middle of epoch 2, then --resume: the same model, index and metrics as the uninterrupted run', async () => {
  const out = join(root, 'killed');
  const child = execa(process.execPath, [BIN, ...args(out)], { reject: false, env: { VELTAIR_TRAIN_PAUSE_AT: '2:20' }, stdin: 'ignore' });
  let stdout = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (c: Buffer) => {
      if (c.toString().includes('paused after epoch 2 batch 20')) resolve();
    });
    child.once('exit', () => reject(new Error('the run ended before pausing')));
  });
  const firstCheckpoint = sha(join(out, 'checkpoint-0001.vtckpt'));
  child.kill('SIGKILL');
  const r = await child;
  assert.equal(r.signal, 'SIGKILL');
  assert.equal(stdout.trim().split('\n').length, 1, 'epoch 1 finished before the kill');
  assert.deepEqual(
    readdirSync(out).filter((n) => n.endsWith('.vtckpt')),
    ['checkpoint-0001.vtckpt'],
    'epoch 2 was lost, epoch 1 kept',
  );

  // Failures afterwards leave the checkpoint alone.
  assertOneClearError(await veltair([...args(out).filter((a) => a !== '--json'), '--resume', '--lr', '0.01']), 'BAD_ARGUMENT', ['--lr']);
  assertOneClearError(await veltair(args(out).filter((a) => a !== '--json')), 'OUTPUT_EXISTS', [out]);
  assert.equal(sha(join(out, 'checkpoint-0001.vtckpt')), firstCheckpoint);

  const resumed = await veltair([...args(out), '--resume']);
  assert.equal(resumed.exitCode, 0, resumed.stderr);
  assert.match(resumed.stderr, /resuming .* after epoch 1/);
  assert.deepEqual(metrics(stdout + resumed.stdout), metrics(whole.stdout));
  for (const f of ['model.onnx', 'lsh-index.bin'])
    assert.equal(sha(join(out, f)), sha(join(root, 'whole', f)), `${f} differs from the uninterrupted run`);
});
