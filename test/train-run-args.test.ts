/** The training benchmark refuses a flag it does not know or one without its value, instead of starting an hours-long run on the defaults. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unknownFlag } from '../src/bench/train-run.js';

test('train-run names an unknown flag or a flag missing its value, and accepts its own', () => {
  assert.equal(unknownFlag(['--epochs', '2', '--threads', '2', '--uniform', '0', '--logq', '0']), undefined);
  assert.equal(unknownFlag([]), undefined);
  assert.equal(unknownFlag(['--epoch', '2']), '--epoch');
  assert.equal(unknownFlag(['--epochs']), '--epochs');
  assert.equal(unknownFlag(['--epochs', '--threads', '2']), '--epochs');
  assert.equal(unknownFlag(['--help']), '--help', 'the entry point answers --help before this check');
});
