/** The whole-model table (src/bench/suite-table.ts) from a suite work folder: rows, geomeans, the worst model, non-kernel shares. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { suiteTable } from '../src/bench/suite-table.js';

const work = mkdtempSync(join(tmpdir(), 'veltair-suite-'));
after(() => rmSync(work, { recursive: true, force: true }));

const put = (file: string, value: unknown) => writeFileSync(join(work, 'results', file), JSON.stringify(value));
const bench = (ratio: number) => ({
  results: [
    { noise: 0, veltairMs: 10 * ratio, ortMs: 10, ratioVsOrt: ratio },
    { noise: 2, veltairMs: 1, ortMs: 9, ratioVsOrt: 0.1 },
  ],
});

test('the table has a row per benchmarked model, the geomean and worst per thread count, and flags non-kernel shares over 10%', () => {
  mkdirSync(join(work, 'models'));
  mkdirSync(join(work, 'results'));
  for (const m of ['a', 'b', 'never_compiled']) writeFileSync(join(work, 'models', `${m}.onnx`), '');
  put('a.t1.json', bench(0.5));
  put('a.t2.json', bench(0.8));
  put('b.t1.json', bench(2));
  put('b.t2.json', bench(1.25));
  put('a.profile.t1.json', { nonKernelShare: 0.042 });
  put('b.profile.t1.json', { nonKernelShare: 0.25 });
  put('a.compile.json', { tuningSeconds: 12.4, measured: 30 });
  const table = suiteTable(work);
  const rows = table.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| model'));
  assert.deepEqual(
    rows.map((l) => l.split(' | ')[0]),
    ['| a', '| b'],
    'a model with no results has no row',
  );
  assert.match(rows[0]!, /\| 0\.500 \(5\.000 \/ 10\.00 ms\) \| 0\.800 .* \| 4\.2% \/ none \| 12 \(30\) \|$/);
  assert.match(rows[1]!, /\| 25\.0% \/ none \| none \|$/);
  assert.match(table, /1 thread\(s\): 2 models, geomean veltair\/ORT 1\.000, worst b 2\.000, above 1\.1×: b/);
  assert.match(table, /2 thread\(s\): 2 models, geomean veltair\/ORT 1\.000, worst b 1\.250, above 1\.1×: b/);
  assert.match(table, /1 thread\(s\): outside tuned kernels above 10% of the run: b 25\.0% \(of 2 profiled\)/);
  assert.doesNotMatch(table, /2 thread\(s\): outside/, 'no 2-thread profile, no claim about it');
});
