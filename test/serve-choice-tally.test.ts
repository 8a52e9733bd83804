import test from 'node:test';
import assert from 'node:assert/strict';
import { ChoiceTally } from '../src/serve/choice-tally.js';
import { createMetrics } from '../src/serve/metrics.js';

const value = (text: string, line: RegExp) => Number(text.match(line)?.[1] ?? NaN);

test('choice tally: counts kept in arrays reach the Prometheus counters when the registry is read, each once', async () => {
  const metrics = createMetrics();
  const tally = new ChoiceTally(['big', 'small'], [3, 1]);
  metrics.onCollect(() => tally.flushInto(metrics));
  tally.countBlock(0, 0);
  tally.countBlock(0, 2.6);
  tally.countBlock(1, 0);
  tally.countVersion(0, 0, 2);
  tally.countVersion(0, 0, 2);
  tally.countVersion(0, 2.6, 1);
  tally.countVersion(1, 0, 0);
  let text = await metrics.registry.metrics();
  assert.equal(value(text, /veltair_blocks_total\{model="big",level="0"\} (\d+)/), 1);
  assert.equal(value(text, /veltair_blocks_total\{model="big",level="3"\} (\d+)/), 1, 'a fractional level is counted at its rounding');
  assert.equal(value(text, /veltair_blocks_total\{model="small",level="0"\} (\d+)/), 1);
  assert.equal(value(text, /veltair_version_choices_total\{model="big",level="0",version="2"\} (\d+)/), 2);
  assert.equal(value(text, /veltair_version_choices_total\{model="big",level="3",version="1"\} (\d+)/), 1);
  assert.equal(value(text, /veltair_version_choices_total\{model="small",level="0",version="0"\} (\d+)/), 1);
  assert.doesNotMatch(text, /version_choices_total\{model="big",level="0",version="0"\}/, 'a version never run has no series');
  tally.countVersion(0, 0, 2);
  text = await metrics.registry.metrics();
  assert.equal(value(text, /veltair_version_choices_total\{model="big",level="0",version="2"\} (\d+)/), 3, 'only what came since is added');
  assert.equal(value(text, /veltair_blocks_total\{model="big",level="0"\} (\d+)/), 1);
  assert.throws(() => tally.countVersion(1, 0, 1), /keeps 1/);
});
