/**
 * `veltair compile` on bad input: each case is one clear error line + hint, exit 1, and is caught
 * before any tuning starts (no database is created, no candidate measured).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { encodeModel } from '../src/onnx/encode.js';
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

test('invalid --levels, --shard, --max-versions and a budget of 0 are BAD_ARGUMENT', async () => {
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
    [['--threads', '0'], '--threads "0"'],
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
