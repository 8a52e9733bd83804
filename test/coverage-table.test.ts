import test from 'node:test';
import assert from 'node:assert/strict';
import {
  coverageTable,
  replaceTable,
  statusOf,
  TABLE_BEGIN,
  TABLE_END,
  whatItWouldTake,
  type CoverageRecord,
} from '../src/bench/coverage-table.js';

const base = { task: 'classification' as const, input: [1, 3, 224, 224], when: '2026-12-04T00:00:00Z' };
const compiled = { ok: true, wallSeconds: 61.4, bundleBytes: 5 * 2 ** 20, budget: '--trials 1 --threads 1 --levels 0' };
const records: CoverageRecord[] = [
  {
    ...base,
    model: 'resnet18',
    export: { ok: true },
    gmacs: 1.81,
    compile: compiled,
    match: { relErr: 2e-6, ok: true },
    latency: { 1: { veltairMs: 20, ortMs: 25, ratio: 0.8 }, 2: { veltairMs: 11, ortMs: 10, ratio: 1.1 } },
  },
  {
    ...base,
    model: 'vit_b_16',
    export: { ok: true },
    compile: {
      ok: false,
      wallSeconds: 3,
      budget: 'x',
      error:
        'error [UNSUPPORTED_OPS]: /home/someone/work/models/vit_b_16.onnx: the runtime cannot run 2 layers: layer 7 | Foo; layer 9 Bar',
    },
  },
  { ...base, model: 'swin_t', export: { ok: false, error: 'RuntimeError: Exporting the operator roll\nmore' } },
  { ...base, model: 'alexnet', export: { ok: true }, compile: compiled, match: { relErr: 0.02, ok: false } },
  { ...base, task: 'segmentation', model: 'fcn_resnet50', input: [1, 3, 520, 520], export: { ok: true } },
];

test('every coverage record reads as how far the model got', () => {
  assert.deepEqual(records.map(statusOf), ['matches ORT', 'refused: unsupported layers', 'export refused', 'MISMATCH', 'not compiled yet']);
  const crashed: CoverageRecord = { ...records[0]!, match: { relErr: NaN, ok: false, error: 'segfault' } };
  assert.equal(statusOf(crashed), 'check failed');
});

test('the coverage table: one row per model, the refusals with their reasons, the counts and geomeans of matching models only', () => {
  const t = coverageTable(records);
  const rows = t.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| model'));
  assert.equal(rows.length, 5);
  assert.ok(rows[rows.length - 1]!.startsWith('| fcn_resnet50'), 'segmentation after classification');
  const vit = rows.find((r) => r.startsWith('| vit_b_16'))!;
  assert.match(vit, /refused: unsupported layers/);
  assert.match(vit, /layer 7 \/ Foo/, 'a pipe in a message cannot break the table');
  assert.match(vit, /\]: vit_b_16\.onnx: the runtime/, 'no directory of the machine that ran it');
  assert.match(
    rows.find((r) => r.startsWith('| swin_t'))!,
    /Exporting the operator roll more \|$/,
  );
  assert.match(
    rows.find((r) => r.startsWith('| resnet18'))!,
    /\| 224×224 \| 1\.81 \| matches ORT \| 5\.0 \| 61 \| 0\.800 \(20\.0 \/ 25\.0\) \| 1\.100/,
  );
  assert.match(
    t,
    /5 models: 1 compile and match ONNX Runtime .*1 mismatch, 1 refused before tuning, 0 failed to compile, 1 refused by the exporter, 1 not/,
  );
  assert.match(t, /1 thread\(s\): 1 models timed, geomean veltair\/ORT 0\.800, worst resnet18 0\.800, above 1\.0: none/);
  assert.match(t, /2 thread\(s\): .* above 1\.0: resnet18/);
});

test('a refusal row says what running the model would take, from the operators it names', () => {
  const ssd =
    'error[UNSUPPORTED_OPS]: "ssd.onnx": unsupported operators: NonZero (nodes "/NonZero" and 179 more), GatherND (nodes "/G"), If (node "If_1")';
  assert.match(whatItWouldTake(ssd), /depend on the data \(NonZero, If; also refused: GatherND\)/);
  const nodeNamedIf = 'error[UNSUPPORTED_OPS]: "m.onnx": unsupported operators: Foo (node "/If")';
  assert.match(whatItWouldTake(nodeNamedIf), /runtime op for Foo$/, 'a node named If is not the op');
  assert.match(
    whatItWouldTake('error[UNSUPPORTED_OPS]: "m.onnx": unsupported operators: Col2Im (node "c")'),
    /a shape rule and a runtime op for Col2Im/,
  );
  assert.match(whatItWouldTake('layer 7 (foo): no native op of this name'), /a native lowering/);
  const row = coverageTable([
    {
      ...base,
      task: 'detection',
      model: 'ssd300_vgg16',
      input: [1, 3, 300, 300],
      export: { ok: true },
      compile: { ok: false, wallSeconds: 2, budget: 'x', error: ssd },
    },
  ]);
  assert.match(row, /\| ssd300_vgg16 \| 300×300 \|.*refused: unsupported layers.*would take: shapes that depend on the data/);
});

test('the generated table replaces only what lies between its markers', () => {
  const doc = `# R\nbefore\n${TABLE_BEGIN}\nold table\n${TABLE_END}\nafter\n`;
  assert.equal(replaceTable(doc, 'NEW'), `# R\nbefore\n${TABLE_BEGIN}\nNEW\n${TABLE_END}\nafter\n`);
  assert.equal(replaceTable('# R\nno markers\n', 'NEW'), null);
});
