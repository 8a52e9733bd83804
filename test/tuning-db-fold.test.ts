/**
 * The per-model `.jsonl` files tuning-db/ shipped before it was compacted, against those files
 * compacted the way they were folded in (`veltair db compact`): for every shipped workload on every
 * target, what the store returns from the compacted set is the old set's records, and a compile
 * selects the same family and sees the same best record per level from it. The shipped tuning-db/
 * itself grows as models are tuned, so it is checked only to still hold every old workload. The old
 * files are read from git history (the commit before they were folded in); without that history (a
 * package, a shallow clone) the test skips.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { execa } from 'execa';
import { bestPerLevelIds, familyIds } from '../src/db/compact.js';
import { compactDatabase } from '../src/db/compact-database.js';
import { recordId, type TuningRecord } from '../src/db/record.js';
import { scanDatabase } from '../src/db/scan.js';
import { openDatabase, type TuningDatabase } from '../src/db/store.js';

/** The last commit whose tuning-db/ held the per-model .jsonl files. */
const BEFORE_FOLD = '3f0f2d4b263e58c514aabc84ac5362b60beb4f15';
const OLD_FILES = [
  'bert_large',
  'efficientnet_b0',
  'googlenet',
  'mobilenet_v2',
  'resnet50',
  'ssd_mobilenet_v1',
  'ssd_resnet34',
  'tiny_yolov2',
];

const root = mkdtempSync(join(tmpdir(), 'veltair-tuning-db-fold-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** The old files written into a folder, or undefined when git history does not have them. */
async function oldSet(): Promise<string | undefined> {
  const dir = join(root, 'old');
  mkdirSync(dir);
  for (const name of OLD_FILES) {
    const r = await execa('git', ['show', `${BEFORE_FOLD}:tuning-db/${name}.jsonl`], { reject: false, stripFinalNewline: false });
    if (r.exitCode !== 0) return undefined;
    writeFileSync(join(dir, `${name}.jsonl`), r.stdout);
  }
  return dir;
}

function sameRun(a: readonly TuningRecord[], b: readonly TuningRecord[], what: string): void {
  const oldById = new Map(a.map((r) => [recordId(r), r]));
  for (const r of b) assert.deepEqual(r, oldById.get(recordId(r)), `${what}: a compacted record is the old record`);
  for (const n of new Set(a.map((r) => r.threads))) {
    const olds = a.filter((r) => r.threads === n),
      news = b.filter((r) => r.threads === n);
    assert.deepEqual(familyIds(news), familyIds(olds), `${what} at ${n} threads: the same family`);
    assert.deepEqual(new Set(bestPerLevelIds(news)), new Set(bestPerLevelIds(olds)), `${what} at ${n} threads: the same best per level`);
  }
}

test('the compacted tuning-db/ gives every shipped workload on every target the records a compile used from the old files', async (t) => {
  const old = await oldSet();
  if (!old) {
    t.skip('git history before the fold is not available');
    return;
  }
  const records = [...(await scanDatabase(old)).records.values()];
  const targets = [...new Set(records.map((r) => r.target))];
  assert.equal(targets.length, 5);
  const folded = join(root, 'folded');
  await compactDatabase({ sources: [old], outDir: folded });
  let runs = 0;
  for (const target of targets) {
    const oldDb: TuningDatabase = await openDatabase(join(root, 'empty'), { target, shipped: old });
    const newDb: TuningDatabase = await openDatabase(join(root, 'empty'), { target, shipped: folded });
    const shippedDb: TuningDatabase = await openDatabase(join(root, 'empty'), { target, shipped: resolve('tuning-db') });
    for (const workload of new Set(records.filter((r) => r.target === target).map((r) => r.workload))) {
      sameRun(oldDb.lookup(workload), newDb.lookup(workload), `${target} ${workload} lookup`);
      sameRun(oldDb.seeds(workload), newDb.seeds(workload), `${target} ${workload} seeds`);
      assert.equal(newDb.lookup(workload).length > 0, oldDb.lookup(workload).length > 0);
      if (oldDb.lookup(workload).length > 0) assert.ok(shippedDb.lookup(workload).length > 0, `${target} ${workload}: still shipped`);
      runs++;
    }
  }
  assert.ok(runs > 300, `${runs} workloads checked`);
});
