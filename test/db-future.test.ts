/**
 * A records file written by a newer veltair — a later target-fingerprint version or record format —
 * is refused with one clear error naming the file and line, not skipped as corrupt (which would
 * silently tune again) nor misread.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, test } from 'node:test';
import { encodeModel } from '../src/onnx/encode.js';
import { assertOneClearError, tinyModelSpec, veltair } from './compile-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-db-future-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('records of a future fingerprint version or format are refused, naming file:line', async () => {
  // A shipped record: line 2 of a compacted file (line 1 is its header).
  const index = JSON.parse(readFileSync('tuning-db/index.json', 'utf8')) as { targets: Record<string, { file: string }> };
  const file = Object.values(index.targets)[0]!.file;
  const shipped = gunzipSync(readFileSync(join('tuning-db', file)))
    .toString('utf8')
    .split('\n')[1]!;
  for (const [name, line] of [
    ['fp', shipped.replace(/"target":"t1-/, '"target":"t2-')],
    ['v', shipped.replace(/^\{"v":1/, '{"v":2')],
  ] as const) {
    const db = join(root, name);
    mkdirSync(db);
    writeFileSync(join(db, 'records.jsonl'), `${shipped}\n${line}\n`);
    assertOneClearError(await veltair(['db', 'stats', '--db', db]), 'BAD_INPUT', ['records.jsonl:2', name === 'fp' ? 't2' : 'format v2']);
  }
  const model = join(root, 'tiny.onnx');
  writeFileSync(model, encodeModel(tinyModelSpec()));
  assertOneClearError(await veltair(['compile', model, '-o', join(root, 'b'), '--db', join(root, 'fp')]), 'BAD_INPUT', ['t2']);
});
