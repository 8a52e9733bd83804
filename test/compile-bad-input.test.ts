/**
 * `veltair compile` on bad input: each case is one clear error line + hint, exit 1, and is caught
 * before any tuning starts (no database is created, no candidate measured) — an opset veltair does
 * not know and a model too large for this machine's memory included.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { encodeModel } from '../src/onnx/encode.js';
import { MAX_OPSET, MIN_OPSET } from '../src/onnx/infer.js';
import type { Tensor } from '../src/onnx/model.js';
import { assertOneClearError, tinyModelSpec, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-compile-bad-'));
after(() => rmSync(root, { recursive: true, force: true }));
const model = join(root, 'tiny.onnx');
writeFileSync(model, encodeModel(tinyModelSpec()));
const db = join(root, 'db');
const env = { VELTAIR_CACHE_DIR: join(root, 'cache') };
const compile = (...args: string[]) => veltair(['compile', model, '--db', db, ...args], env);

test('an existing output without --force is OUTPUT_EXISTS', async () => {
  const out = join(root, 'exists');
  mkdirSync(out);
  assertOneClearError(await compile('-o', out), 'OUTPUT_EXISTS', [out]);
});

test('an unwritable output location is FILE_UNWRITABLE', async () => {
  writeFileSync(join(root, 'a-file'), '');
  const out = join(root, 'a-file', 'bundle');
  assertOneClearError(await compile('-o', out), 'FILE_UNWRITABLE', [out]);
});

test('invalid --levels, --shard, --max-versions, --transfer-trials, --window-ms and a budget of 0 are BAD_ARGUMENT', async () => {
  const out = join(root, 'never');
  const cases: [string[], string][] = [
    [['--levels', '0,7'], '--levels "0,7"'],
    [['--levels', 'a'], '--levels "a"'],
    [['--levels', ''], '--levels ""'],
    [['--shard', '3/2'], '--shard "3/2"'],
    [['--shard', '0/0'], '--shard "0/0"'],
    [['--shard', 'x'], '--shard "x"'],
    [['--max-versions', '0'], '--max-versions "0"'],
    [['--max-versions', '6'], '--max-versions "6"'],
    [['--trials', '0'], '--trials "0"'],
    [['--transfer-trials', '-1'], '--transfer-trials "-1"'],
    [['--transfer-trials', '2.5'], '--transfer-trials "2.5"'],
    [['--threads', '0'], '--threads "0"'],
    [['--window-ms', '4'], '--window-ms "4"'],
    [['--window-ms', '2.5'], '--window-ms "2.5"'],
  ];
  for (const [args, mention] of cases) assertOneClearError(await compile('-o', out, ...args), 'BAD_ARGUMENT', [mention]);
  assertOneClearError(await veltair(['compile', model, '--db', db], env), 'BAD_ARGUMENT', ['-o OUT']);
  assert.equal(existsSync(out), false);
});

test('no C compiler on PATH is NO_COMPILER naming what to install, before any tuning', async () => {
  const emptyBin = join(root, 'empty-bin');
  mkdirSync(emptyBin);
  const noCc: NodeJS.ProcessEnv = { ...process.env, ...env, PATH: emptyBin };
  delete noCc['CC'];
  const r = await veltair(['compile', model, '--db', db, '-o', join(root, 'nocc')], noCc, false);
  assertOneClearError(r, 'NO_COMPILER', ['"cc"']);
  assert.match(r.stderr, /hint: install gcc/);
  assert.equal(existsSync(db), false, 'the database was never touched: nothing was tuned');
  assert.equal(existsSync(join(root, 'nocc')), false);
});

test('a model declaring an opset veltair does not know (99) is UNSUPPORTED_OPSET naming the supported range, before tuning', async () => {
  const future = join(root, 'opset99.onnx');
  writeFileSync(future, encodeModel({ ...tinyModelSpec(), opset: 99 }));
  assertOneClearError(await veltair(['compile', future, '-o', join(root, 'never99'), '--db', db], env), 'UNSUPPORTED_OPSET', [
    'opset 99',
    `opsets ${MIN_OPSET} to ${MAX_OPSET}`,
  ]);
  assertOneClearError(await veltair(['inspect', future], env), 'UNSUPPORTED_OPSET', ['opset 99']);
  assert.equal(existsSync(db), false, 'nothing was tuned');
});

test('a model whose input alone needs 120 GB is TOO_LARGE with the memory it needs, before tuning', async () => {
  const huge = join(root, 'huge.onnx');
  const spec = tinyModelSpec();
  // input [1,3,100000,100000] float32 = 120 GB; the conv's output 8 channels more. Only shapes: the file is tiny.
  writeFileSync(
    huge,
    encodeModel({
      ...spec,
      inputs: [{ name: 'input', dtype: 'float32', shape: [1, 3, 100000, 100000] }],
      nodes: spec.nodes.slice(0, 2).map((n) => (n.op === 'Relu' ? { ...n, outputs: ['output'] } : n)),
      initializers: (spec.initializers as readonly (readonly [string, Tensor])[]).filter(([name]) => name === 'w' || name === 'b'),
    }),
  );
  assertOneClearError(await veltair(['compile', huge, '-o', join(root, 'never-huge'), '--db', db], env), 'TOO_LARGE', [
    'input "input" [1, 3, 100000, 100000] float32 alone is 120.0 GB',
    'of memory',
  ]);
  assert.equal(existsSync(db), false, 'nothing was tuned');
});
