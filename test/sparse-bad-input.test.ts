/**
 * Every bad input of `veltair train` and `veltair data` is one clear error line (naming the file,
 * line or field) plus a hint, exit 1, and nothing on stdout: malformed lines, labels ≥ the output
 * dim, feature indices ≥ the input dim, an empty file, NaN/Inf values, a sparsity outside (0, 1]
 * (spec or flag), a spec too big for memory (saying how much it needs), bad specs and flags, a
 * header that disagrees with the file, and an output directory that already holds a run.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { assertOneClearError, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-train-bad-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const file = (text: string, name = `f${n++}.txt`) => {
  const p = join(root, name);
  writeFileSync(p, text);
  return p;
};
const SPEC = file(
  JSON.stringify({
    input: 10,
    layers: [
      { dim: 8, activation: 'relu' },
      { dim: 5, activation: 'softmax' },
    ],
  }),
  'spec.json',
);
const GOOD = file('3 10 5\n0 1:0.5 2:1\n1,2 3:1\n4 9:2.5\n');
const train = (spec: string, data: string, ...extra: string[]) => veltair(['train', spec, data, '-o', join(root, `out${n++}`), ...extra]);

const cases: [string, () => Promise<{ exitCode?: number; stdout: string; stderr: string }>, string, string[]][] = [
  [
    'a malformed feature (line number and token named)',
    () => train(SPEC, file('0 1:0.5\n1 2:1 oops\n')),
    'BAD_DATA',
    [':2:', '"oops"', 'feature:value'],
  ],
  ['a label that is not an integer', () => train(SPEC, file('0 1:1\nx 2:1\n')), 'BAD_DATA', [':2:', 'label "x"']],
  ['a label ≥ the output dim', () => train(SPEC, file('0 1:1\n1 2:1\n5 3:1\n')), 'BAD_DATA', [':3:', 'label 5', 'output dim 5']],
  ['a feature index ≥ the input dim', () => train(SPEC, file('0 10:1\n')), 'BAD_DATA', [':1:', 'feature index 10', 'input dim 10']],
  ['an empty file', () => train(SPEC, file('')), 'BAD_DATA', ['no samples', 'empty']],
  ['a header-only file', () => train(SPEC, file('0 10 5\n')), 'BAD_DATA', ['no samples']],
  ['a NaN value', () => train(SPEC, file('0 1:1\n1 2:nan\n')), 'BAD_DATA', [':2:', 'not finite']],
  ['an Inf value', () => train(SPEC, file('0 1:inf\n')), 'BAD_DATA', [':1:', 'not finite']],
  ['a value beyond float32', () => train(SPEC, file('0 1:1e39\n')), 'BAD_DATA', [':1:', 'not finite']],
  ['a blank line in the middle', () => train(SPEC, file('0 1:1\n\n1 2:1\n')), 'BAD_DATA', [':2:', 'empty line']],
  ['a header whose sample count disagrees', () => train(SPEC, file('5 10 5\n0 1:1\n')), 'BAD_DATA', ['header says 5 samples', 'has 1']],
  ['a header with more features than the input', () => train(SPEC, file('1 11 5\n0 1:1\n')), 'BAD_DATA', ['11 features', 'input dim 10']],
  ['a missing data file', () => train(SPEC, join(root, 'nope.txt')), 'FILE_NOT_FOUND', ['nope.txt']],
  [
    'a bad eval file (its own line number)',
    () => train(SPEC, GOOD, '--eval', file('0 1:1\n0 1:1\n7 1:1\n')),
    'BAD_DATA',
    [':3:', 'label 7'],
  ],
  [
    'sparsity 0 in the spec',
    () =>
      train(
        file(
          JSON.stringify({
            input: 10,
            layers: [
              { dim: 8, activation: 'relu' },
              { dim: 5, activation: 'softmax', sparsity: 0 },
            ],
          }),
        ),
        GOOD,
      ),
    'BAD_SPEC',
    ['layers[1].sparsity', '(0, 1]'],
  ],
  [
    'sparsity 1.5 in the spec',
    () =>
      train(
        file(
          JSON.stringify({
            input: 10,
            layers: [
              { dim: 8, activation: 'relu' },
              { dim: 5, activation: 'softmax', sparsity: 1.5 },
            ],
          }),
        ),
        GOOD,
      ),
    'BAD_SPEC',
    ['layers[1].sparsity', '(0, 1]'],
  ],
  ['--sparsity 0', () => train(SPEC, GOOD, '--sparsity', '0'), 'BAD_ARGUMENT', ['--sparsity', '(0, 1]']],
  ['--sparsity 2', () => train(SPEC, GOOD, '--sparsity', '2'), 'BAD_ARGUMENT', ['--sparsity', '(0, 1]']],
  ['--eval-sparsity -1', () => train(SPEC, GOOD, '--eval-sparsity', '-1'), 'BAD_ARGUMENT', ['--eval-sparsity']],
  [
    'a spec that does not fit in memory (how much it needs)',
    () =>
      train(
        file(
          JSON.stringify({
            input: 2_000_000_000,
            layers: [
              { dim: 1024, activation: 'relu' },
              { dim: 1000, activation: 'softmax' },
            ],
          }),
        ),
        GOOD,
      ),
    'NOT_ENOUGH_MEMORY',
    ['needs', 'GiB', 'available'],
  ],
  ['a spec that is not JSON', () => train(file('{"input": 10,'), GOOD), 'BAD_SPEC', ['not valid JSON']],
  [
    'a spec with an unknown field',
    () => train(file(JSON.stringify({ input: 10, layers: [{ dim: 5, activation: 'softmax', width: 3 }] })), GOOD),
    'BAD_SPEC',
    ['unknown field "width"'],
  ],
  [
    'a hidden layer with softmax',
    () =>
      train(
        file(
          JSON.stringify({
            input: 10,
            layers: [
              { dim: 8, activation: 'softmax' },
              { dim: 5, activation: 'softmax' },
            ],
          }),
        ),
        GOOD,
      ),
    'BAD_SPEC',
    ['layers[0]', 'hidden'],
  ],
  [
    'an output layer with relu',
    () => train(file(JSON.stringify({ input: 10, layers: [{ dim: 5, activation: 'relu' }] })), GOOD),
    'BAD_SPEC',
    ['output layer'],
  ],
  [
    'sparsity on the first layer',
    () =>
      train(
        file(
          JSON.stringify({
            input: 10,
            layers: [
              { dim: 8, activation: 'relu', sparsity: 0.5 },
              { dim: 5, activation: 'softmax' },
            ],
          }),
        ),
        GOOD,
      ),
    'BAD_SPEC',
    ['layers[0].sparsity', 'raw sparse features'],
  ],
  ['--hash with an unknown family', () => train(SPEC, GOOD, '--hash', 'minhash'), 'BAD_ARGUMENT', ['--hash', 'minhash']],
  ['--epochs 0', () => train(SPEC, GOOD, '--epochs', '0'), 'BAD_ARGUMENT', ['--epochs']],
  ['--lr -1', () => train(SPEC, GOOD, '--lr', '-1'), 'BAD_ARGUMENT', ['--lr']],
  ['no -o', () => veltair(['train', SPEC, GOOD]), 'BAD_ARGUMENT', ['-o']],
  ['-o naming a file', () => veltair(['train', SPEC, GOOD, '-o', GOOD]), 'OUTPUT_EXISTS', [GOOD]],
  [
    'data planted with --labels 0',
    () => veltair(['data', 'planted', '-o', join(root, 'p0'), '--labels', '0']),
    'BAD_ARGUMENT',
    ['--labels'],
  ],
  [
    'data words with no readable files',
    () => veltair(['data', 'words', '-o', join(root, 'w0'), '--root', join(root, 'empty-dir')]),
    'FILE_NOT_FOUND',
    ['no readable files'],
  ],
];

mkdirSync(join(root, 'empty-dir'));
for (const [name, run, code, mentions] of cases) {
  test(`bad input: ${name}`, async () => assertOneClearError(await run(), code, mentions));
}

test('a good file with the same spec trains (the cases above fail for the reason named, not the setup)', async () => {
  const r = await train(SPEC, GOOD, '--epochs', '1', '--json');
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.stdout.trim().split('\n').length, 1);
});
