import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestFor, type Metadata } from '../src/load/generator.js';
import { timelineTable, traceHeavyThenLight } from '../src/bench/serve-timeline.js';
import { timedInfer } from '../src/load/timed-answer.js';
import { compileModels, model, startInProcess } from './serve-fixture.js';

test('every veltair answer carries its timeline: blocks in causal order, accounted, and the heavy-then-light table prints', async () => {
  const root = mkdtempSync(join(tmpdir(), 'veltair-timeline-'));
  const bundles = await compileModels(root, ['tiny', 'slow']);
  const srv = await startInProcess([model('tiny', bundles['tiny']!), model('slow', bundles['slow']!)], { policy: 'layerwise' });
  try {
    const base = new URL(srv.url);
    const models = [];
    for (const name of ['slow', 'tiny']) {
      const meta = (await (await fetch(new URL(`/v2/models/${name}`, base))).json()) as Metadata;
      models.push({ name, weight: 1, qosMs: 1e9, base, ...requestFor(meta, 5, false) });
    }
    const a = await timedInfer(models[0]!);
    assert.ok(a.timeline, 'a veltair_timeline parameter');
    assert.ok(a.timeline.blocks.length >= 1);
    let prev = a.timeline.begun;
    for (const [decided, start, end, resumed, cores] of a.timeline.blocks) {
      assert.ok(
        prev <= decided && decided <= start && start <= end && end <= resumed,
        `causal order ${[prev, decided, start, end, resumed]}`,
      );
      assert.ok(cores >= 1);
      prev = resumed;
    }
    assert.ok(prev <= a.timeline.answer);
    assert.equal(a.accounting!.blocks, a.timeline.blocks.length);
    assert.ok(a.serverMs !== null && a.schedulerUs !== null);
    const t = await traceHeavyThenLight('layerwise', models[0]!, models[1]!, 2);
    assert.equal(t.lightAnswers.length, 2);
    const table = timelineTable(t);
    assert.match(table, /\| slow \(heavy, first\) \|/);
    assert.match(table, /\| tiny \(light, behind it\) \|/);
  } finally {
    await srv.server.stop();
  }
});
